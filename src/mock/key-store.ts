/**
 * The contract server's keys: the server core's `MemoryKeyStore` (claim, 409, 422, replay,
 * retention — the protocol's one implementation) with the `in-progress` fault layered in
 * front of it: a hold that answers for a free key as if another request had it.
 */
import { MemoryKeyStore, type MemoryKeyStoreOptions, type MemoryTransaction } from '../server/memory-store.js';
import type { Execution, KeyClaim, KeyStore, StoredAnswer } from '../server/store.js';

/** Where a key stands on the server. */
export type RecordState = 'in_progress' | 'completed';

/** Identify a key within its scope: keys of different scopes never collide. */
export const scopedId = (scope: string, key: string): string => JSON.stringify([scope, key]);

/** An `in-progress` fault's hold on a key: its request, until when, and the 409s' `Retry-After`. */
interface Hold {
  operation: string;
  fingerprint: string;
  until: number;
  retryAfter: number | undefined;
}

export class FaultyKeyStore implements KeyStore<MemoryTransaction> {
  readonly #options: Required<MemoryKeyStoreOptions>;
  #store: MemoryKeyStore;
  readonly #holds = new Map<string, Hold>();
  /** Every key seen, first seen first: `keyState` without a scope looks through them. */
  readonly #seen = new Map<string, [scope: string, key: string]>();

  constructor(options: Required<MemoryKeyStoreOptions>) {
    this.#options = options;
    this.#store = new MemoryKeyStore(options);
  }

  execute(claim: KeyClaim, work: (tx: MemoryTransaction) => Promise<StoredAnswer>): Promise<Execution> {
    const id = scopedId(claim.scope, claim.key);
    this.#seen.set(id, [claim.scope, claim.key]);
    // No await from the hold's look-up to the store's claim: one atomic step, as in the store.
    const hold = this.#live(id);
    if (hold)
      return Promise.resolve(
        hold.operation === claim.operation && hold.fingerprint === claim.fingerprint
          ? { outcome: 'in_progress' }
          : { outcome: 'mismatch' },
      );
    return this.#store.execute(claim, work);
  }

  /** Hold a free key as in progress for `ms` (server clock), as if another request had it. */
  hold(claim: KeyClaim, ms: number, retryAfter: number | undefined): void {
    if (this.state(claim.scope, claim.key)) return;
    const id = scopedId(claim.scope, claim.key);
    this.#seen.set(id, [claim.scope, claim.key]);
    const { operation, fingerprint } = claim;
    this.#holds.set(id, { operation, fingerprint, until: this.#options.now() + ms, retryAfter });
  }

  /** The `Retry-After` of a live hold on the key, when its fault gave one. */
  heldRetryAfter(scope: string, key: string): number | undefined {
    return this.#live(scopedId(scope, key))?.retryAfter;
  }

  state(scope: string, key: string): RecordState | undefined {
    if (this.#live(scopedId(scope, key))) return 'in_progress';
    return this.#store.state(scope, key);
  }

  /** The state of the first key seen with this name, in any scope. */
  stateInAnyScope(key: string): RecordState | undefined {
    for (const [scope, name] of this.#seen.values()) {
      if (name !== key) continue;
      const state = this.state(scope, name);
      if (state) return state;
    }
    return undefined;
  }

  /** Forget every key and hold. Requests still running finish on the store they started on. */
  clear(): void {
    this.#store = new MemoryKeyStore(this.#options);
    this.#holds.clear();
    this.#seen.clear();
  }

  #live(id: string): Hold | undefined {
    const hold = this.#holds.get(id);
    if (hold && this.#options.now() >= hold.until) this.#holds.delete(id);
    else return hold;
    return undefined;
  }
}
