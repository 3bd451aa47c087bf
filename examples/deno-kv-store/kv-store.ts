/**
 * An oncely `Store` over Deno KV, written against the rules of docs/stores.md ("Writing
 * your own store") and checked by `oncely/testing` (conformance.test.ts beside it).
 *
 * Deno KV's atomic operations check a key's versionstamp before they write: every write
 * here reads the record, decides, and commits only if the record is still the one it read
 * (a compare-and-set stricter than comparing the idempotency key), else reads again.
 * One record per `['oncely', scope, name]`: tuple keys, so no two (scope, name) collide.
 */
import {
  type ClaimResult,
  type IntentRecord,
  type IntentState,
  InvalidArgumentError,
  isPending,
  isSweepable,
  type RecordUpdater,
  type Store,
} from 'oncely';

/** The part of `Deno.Kv` this store uses (typed here so that tsc checks the store outside Deno too). */
type KvKey = readonly (string | number)[];
interface Entry {
  key: KvKey;
  value: IntentRecord | null;
  versionstamp: string | null;
}
interface AtomicOperation {
  check(...checks: { key: KvKey; versionstamp: string | null }[]): AtomicOperation;
  set(key: KvKey, value: unknown): AtomicOperation;
  delete(key: KvKey): AtomicOperation;
  commit(): Promise<{ ok: boolean }>;
}
export interface Kv {
  get(key: KvKey, options?: { consistency?: 'strong' | 'eventual' }): Promise<Entry>;
  list(selector: { prefix: KvKey }, options?: { consistency?: 'strong' | 'eventual' }): AsyncIterable<Entry>;
  atomic(): AtomicOperation;
  close(): void;
}

/** A record as plain data, with no `undefined` fields (what a JSON store would keep). */
const copy = (record: IntentRecord): IntentRecord => JSON.parse(JSON.stringify(record));

export class DenoKvStore implements Store {
  readonly #kv: Kv;
  readonly #prefix: readonly string[];
  readonly #lockTimeout: number;

  /**
   * `prefix` keeps oncely's records apart from the app's own in the same database;
   * `lockTimeout` (ms) bounds the wait for another connection's lock on a local file.
   */
  constructor(
    kv: Kv,
    { prefix = ['oncely'], lockTimeout = 10_000 }: { prefix?: readonly string[]; lockTimeout?: number } = {},
  ) {
    this.#kv = kv;
    this.#prefix = prefix;
    this.#lockTimeout = lockTimeout;
  }

  #key(scope: string, name?: string): KvKey {
    // Deno KV keeps strings as UTF-8: two names with different lone surrogates would be one key.
    for (const text of name === undefined ? [scope] : [scope, name])
      if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text))
        throw new InvalidArgumentError('A scope or name with a lone surrogate cannot be stored in Deno KV.');
    return name === undefined ? [...this.#prefix, scope] : [...this.#prefix, scope, name];
  }

  /** Reads, lets `decide` answer from what it read, and commits its write only over that very entry. */
  async #cas<T>(key: KvKey, decide: (entry: Entry) => { write?: (op: AtomicOperation) => void; answer: T }) {
    for (;;) {
      const entry = await this.#kv.get(key, { consistency: 'strong' });
      const { write, answer } = decide(entry);
      if (!write) return answer;
      const op = this.#kv.atomic().check(entry);
      write(op);
      if (await this.#commit(op)) return answer;
    }
  }

  /**
   * Commits `op`: false when its check failed (the record changed: read again). Another
   * connection to the same file may hold SQLite's lock ("database is locked"): waited out for
   * up to `lockTimeout`, then thrown, so that the caller's call fails rather than hangs.
   */
  async #commit(op: AtomicOperation): Promise<boolean> {
    const until = Date.now() + this.#lockTimeout;
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      try {
        return (await op.commit()).ok;
      } catch (error) {
        if (!/database is locked/.test(String(error)) || Date.now() > until) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait * Math.random()));
      }
    }
  }

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    return this.#cas<ClaimResult>(this.#key(fresh.scope, fresh.name), (entry) =>
      entry.value
        ? { answer: { record: copy(entry.value), created: false } }
        : { write: (op) => op.set(entry.key, copy(fresh)), answer: { record: copy(fresh), created: true } },
    );
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    const entry = await this.#kv.get(this.#key(scope, name), { consistency: 'strong' });
    return entry.value ? copy(entry.value) : undefined;
  }

  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    return this.#cas<IntentRecord | undefined>(this.#key(scope, name), (entry) => {
      const next = updater(entry.value ? copy(entry.value) : undefined);
      if (next === undefined) return { answer: entry.value ? copy(entry.value) : undefined };
      return { write: (op) => op.set(entry.key, copy(next)), answer: copy(next) };
    });
  }

  async delete(scope: string, name: string, key?: string, options: { keepPending?: number } = {}): Promise<void> {
    await this.#cas(this.#key(scope, name), (entry) => ({
      write: this.#remover(entry, key, options.keepPending),
      answer: undefined,
    }));
  }

  /** The delete of `entry`, unless it is gone, has another key, or is pending at `keepPending`. */
  #remover(entry: Entry, key: string | undefined, keepPending: number | undefined) {
    const record = entry.value;
    if (!record || (key !== undefined && record.key !== key)) return undefined;
    if (keepPending !== undefined && isPending(record, keepPending)) return undefined;
    return (op: AtomicOperation) => void op.delete(entry.key);
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    const out: IntentRecord[] = [];
    for await (const entry of this.#kv.list({ prefix: this.#key(scope) }, { consistency: 'strong' }))
      if (entry.value && (!states || states.includes(entry.value.state))) out.push(copy(entry.value));
    return out;
  }

  /** Each record goes in a check-and-delete of its own: one written meanwhile is read and judged again. */
  async clear(scope: string, options: { keepPending?: number } = {}): Promise<void> {
    for await (const { key } of this.#kv.list({ prefix: this.#key(scope) }))
      await this.#cas(key, (entry) => ({
        write: this.#remover(entry, undefined, options.keepPending),
        answer: undefined,
      }));
  }

  async sweep(scope: string, now: number, options: { limit?: number } = {}): Promise<number> {
    let removed = 0;
    let seen = 0;
    for await (const { key } of this.#kv.list({ prefix: this.#key(scope) })) {
      if (options.limit !== undefined && seen++ >= options.limit) break;
      removed += await this.#cas(key, (entry) =>
        entry.value && isSweepable(entry.value, now)
          ? { write: (op) => void op.delete(entry.key), answer: 1 }
          : { answer: 0 },
      );
    }
    return removed;
  }

  async close(): Promise<void> {
    this.#kv.close();
  }
}
