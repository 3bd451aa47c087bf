/**
 * The server key store in memory, for tests and examples: one process, nothing durable.
 * Its transaction is a list of writes applied at commit, so a handler that throws leaves
 * nothing, as on a database.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from './store.js';

/** What a handler receives from `MemoryKeyStore`: writes applied only if it commits. */
export interface MemoryTransaction {
  /**
   * Apply `write` when the key and the answer commit; dropped when the work throws.
   * @example tx.onCommit(() => ledger.push(payment));
   */
  onCommit(write: () => void): void;
}

export interface MemoryKeyStoreOptions {
  /**
   * How long a completed key is remembered, from its claim; after that it is new again.
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;
  /** The clock, in ms. @default Date.now */
  now?: () => number;
}

interface Row {
  claim: KeyClaim;
  createdAt: number;
  /** Undefined while the work runs. */
  answer?: StoredAnswer;
}

const idOf = (scope: string, key: string): string => JSON.stringify([scope, key]);

export class MemoryKeyStore implements KeyStore<MemoryTransaction> {
  readonly #rows = new Map<string, Row>();
  readonly #retentionMs: number;
  readonly #now: () => number;

  constructor(options: MemoryKeyStoreOptions = {}) {
    const retentionMs = options.retentionMs ?? 86_400_000;
    if (!(retentionMs > 0)) throw new InvalidArgumentError(`retentionMs must be > 0, got ${retentionMs}.`);
    this.#retentionMs = retentionMs;
    this.#now = options.now ?? Date.now;
  }

  async execute(claim: KeyClaim, work: (tx: MemoryTransaction) => Promise<StoredAnswer>): Promise<Execution> {
    const id = idOf(claim.scope, claim.key);
    // No await between the lookup and the claim: one atomic step.
    const row = this.#live(id);
    if (row) {
      if (row.claim.operation !== claim.operation || row.claim.fingerprint !== claim.fingerprint)
        return { outcome: 'mismatch' };
      return row.answer ? { outcome: 'replayed', answer: row.answer } : { outcome: 'in_progress' };
    }
    const mine: Row = { claim, createdAt: this.#now() };
    this.#rows.set(id, mine);
    const writes: (() => void)[] = [];
    let answer: StoredAnswer;
    try {
      answer = await work({ onCommit: (write) => void writes.push(write) });
      for (const write of writes) write();
    } catch (error) {
      if (this.#rows.get(id) === mine) this.#rows.delete(id);
      throw error;
    }
    mine.answer = answer;
    return { outcome: 'ran', answer };
  }

  /** Where a key stands: `undefined` (unknown or expired), `in_progress` or `completed`. */
  state(scope: string, key: string): 'in_progress' | 'completed' | undefined {
    const row = this.#live(idOf(scope, key));
    return row && (row.answer ? 'completed' : 'in_progress');
  }

  #live(id: string): Row | undefined {
    const row = this.#rows.get(id);
    if (row?.answer && this.#now() - row.createdAt >= this.#retentionMs) {
      this.#rows.delete(id);
      return undefined;
    }
    return row;
  }
}
