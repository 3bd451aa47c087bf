/**
 * Where intents live. A store keeps, per (scope, intent name), the idempotency key and
 * what is known of the intent's outcome: never request or response bodies.
 *
 * Every method resolves only once its write is durable for that store (IndexedDB
 * transaction complete, file fsynced and renamed), because the client acts on the
 * record right after: it sends the first attempt only once the claim is stored.
 */

/** Where an intent stands. See the lifecycle in the README. */
export type IntentState = 'ready' | 'in_flight' | 'succeeded' | 'failed' | 'unknown';

/** What a store keeps for one intent. Plain JSON: no bodies, no secrets. */
export interface IntentRecord {
  /** Record format version. */
  v: 1;
  /** The account / tenant the intent belongs to. */
  scope: string;
  /** The intent name the app chose, e.g. `checkout:cart_42`. */
  name: string;
  /** The idempotency key sent on every attempt. */
  key: string;
  state: IntentState;
  /** SHA-256 of the request, set when the first attempt is about to be sent. */
  fingerprint?: string;
  /** Attempts sent so far, across every client that touched this intent. */
  attempts: number;
  /** When the key was minted (ms since epoch). Expiry counts from here. */
  createdAt: number;
  /** Last state change (ms since epoch). */
  updatedAt: number;
  /** Last HTTP status seen, when there was one. */
  status?: number;
}

/** The result of an atomic get-or-create. */
export interface ClaimResult {
  record: IntentRecord;
  /** True when this call stored `fresh`; false when a record already existed. */
  created: boolean;
}

/**
 * Updater for {@link Store.update}. Must be synchronous (it runs inside an IndexedDB
 * transaction). Return the record to store, or `undefined` to leave the store as it is.
 */
export type RecordUpdater = (current: IntentRecord | undefined) => IntentRecord | undefined;

export interface Store {
  /**
   * Atomic get-or-create for (`fresh.scope`, `fresh.name`): if a record exists it is
   * returned untouched, otherwise `fresh` is stored. Two tabs or processes claiming at
   * once end with one record. A constraint, never get-then-set.
   */
  claim(fresh: IntentRecord): Promise<ClaimResult>;
  /** The record for (scope, name), if any. */
  get(scope: string, name: string): Promise<IntentRecord | undefined>;
  /**
   * Atomic read-modify-write of one record. Resolves with the record now stored
   * (`undefined` if there is none).
   */
  update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined>;
  /** Removes one intent. Passing `key` removes it only if it still has that key. */
  delete(scope: string, name: string, key?: string): Promise<void>;
  /** Records of one scope, optionally only those in the given states. */
  list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]>;
  /** Removes every intent of one scope (logout). Other scopes are untouched. */
  clear(scope: string): Promise<void>;
  /**
   * Removes records last updated before `olderThan` (ms since epoch) that are safe to
   * forget: `succeeded`, `failed` and `ready`. Never `in_flight` or `unknown`.
   * Resolves with the number removed.
   */
  sweep(olderThan: number): Promise<number>;
  /** Releases files, handles and connections. */
  close?(): Promise<void>;
}

/** States in which a record may be swept once old. */
export const SWEEPABLE_STATES: readonly IntentState[] = ['succeeded', 'failed', 'ready'];
/** States `client.pending()` reports: the outcome is not known yet. */
export const PENDING_STATES: readonly IntentState[] = ['in_flight', 'unknown'];

const recordId = (scope: string, name: string) => JSON.stringify([scope, name]);

/**
 * Keeps intents in memory: lost on reload or restart. Use it only in tests or where
 * losing a key is acceptable; durable stores are in `oncely/browser` and `oncely/node`.
 */
export class MemoryStore implements Store {
  readonly #records = new Map<string, IntentRecord>();

  async claim(fresh: IntentRecord): Promise<ClaimResult> {
    const id = recordId(fresh.scope, fresh.name);
    const existing = this.#records.get(id);
    if (existing) return { record: { ...existing }, created: false };
    this.#records.set(id, { ...fresh });
    return { record: { ...fresh }, created: true };
  }

  async get(scope: string, name: string): Promise<IntentRecord | undefined> {
    const record = this.#records.get(recordId(scope, name));
    return record && { ...record };
  }

  async update(scope: string, name: string, updater: RecordUpdater): Promise<IntentRecord | undefined> {
    const id = recordId(scope, name);
    const current = this.#records.get(id);
    const next = updater(current && { ...current });
    if (next === undefined) return current && { ...current };
    this.#records.set(id, { ...next });
    return { ...next };
  }

  async delete(scope: string, name: string, key?: string): Promise<void> {
    const id = recordId(scope, name);
    if (key === undefined || this.#records.get(id)?.key === key) this.#records.delete(id);
  }

  async list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]> {
    const out: IntentRecord[] = [];
    for (const record of this.#records.values()) {
      if (record.scope === scope && (!states || states.includes(record.state))) out.push({ ...record });
    }
    return out;
  }

  async clear(scope: string): Promise<void> {
    for (const [id, record] of this.#records) if (record.scope === scope) this.#records.delete(id);
  }

  async sweep(olderThan: number): Promise<number> {
    let removed = 0;
    for (const [id, record] of this.#records) {
      if (record.updatedAt < olderThan && SWEEPABLE_STATES.includes(record.state)) {
        this.#records.delete(id);
        removed++;
      }
    }
    return removed;
  }
}

/** What a store reports about itself: a record it had to set aside, a fallback. */
export type StoreEvent =
  | {
      type: 'quarantine';
      /** Why the record was set aside, e.g. `invalid record: state: Invalid option`. */
      reason: string;
      /** Where the bad record was moved (a file path, an IndexedDB key). */
      location: string;
      scope?: string;
      name?: string;
    }
  | { type: 'fallback'; reason: string };

/** Implemented by stores that report {@link StoreEvent}s. The client subscribes. */
export interface ObservableStore {
  subscribe(listener: (event: StoreEvent) => void): () => void;
}

/** The listeners of an {@link ObservableStore}: a listener that throws is reported, never breaks a write. */
export class StoreListeners {
  readonly #listeners = new Set<(event: StoreEvent) => void>();

  add(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  emit(event: StoreEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        console.error('oncely: a store listener threw', error);
      }
    }
  }
}
