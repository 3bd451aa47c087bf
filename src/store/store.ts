/**
 * Where intents live. A store keeps, per (scope, intent name), the idempotency key and
 * what is known of the intent's outcome: never request or response bodies.
 *
 * A write resolves once it is durable for that store (IndexedDB transaction complete,
 * SQLite commit synced), unless it is asked for `durability: 'relaxed'`: then it may
 * resolve first, and the store makes it durable no later than its next strict write.
 */

/** Where an intent stands. See the lifecycle in docs/engine.md. */
export type IntentState = 'ready' | 'in_flight' | 'succeeded' | 'failed' | 'unknown';

/** Who is sending an `in_flight` intent, and until when the others must wait for it. */
export interface IntentLease {
  /** A random id of the call that holds it. */
  owner: string;
  /** ms since epoch. Past it, the holder is taken for dead and another client may send. */
  until: number;
}

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
  /** Binds the key to one request; set when the first attempt is about to be sent. */
  fingerprint?: string;
  /** Attempts sent so far, across every client that touched this intent. */
  attempts: number;
  /** When the key was minted (ms since epoch). Expiry counts from here. */
  createdAt: number;
  /** Last state change (ms since epoch). */
  updatedAt: number;
  /**
   * How long (ms) the server remembers the key: fixed when the intent forms, so every
   * client agrees on its expiry and on when it may be swept. Absent in 0.1.0 records: 24 h.
   */
  ttl?: number;
  /** Last HTTP status seen, when there was one. */
  status?: number;
  /** Set while a call sends this intent (state `in_flight`). */
  lease?: IntentLease;
}

/** The result of an atomic get-or-create. */
export interface ClaimResult {
  record: IntentRecord;
  /** True when this call stored `fresh`; false when a record already existed. */
  created: boolean;
}

/**
 * Updater for {@link Store.update}. Must be synchronous (it runs inside a transaction).
 * Return the record to store, or `undefined` to leave the store as it is.
 */
export type RecordUpdater = (current: IntentRecord | undefined) => IntentRecord | undefined;

export interface WriteOptions {
  /**
   * `'strict'`: resolve once durable. `'relaxed'`: may resolve before the write is
   * flushed; a crash may lose it, and the store flushes it with its next strict write.
   * oncely asks for relaxed writes only where losing one is safe (an outcome whose loss
   * only causes a resend under the same key, a lease renewal, an attempt count); claims
   * and `in_flight` writes are strict.
   * @default 'strict'
   */
  durability?: 'strict' | 'relaxed';
}

export interface ClaimOptions extends WriteOptions {
  /**
   * A transaction of the app's own, for stores that can join one (PostgresStore: a
   * `pg` client inside `BEGIN`): the intent commits or rolls back with the app's rows.
   */
  transaction?: unknown;
}

export interface DeleteOptions {
  /**
   * Keep any record whose request may be on the wire or may have taken effect unanswered:
   * `in_flight` or `unknown`, or under a lease live at this time (ms since epoch), see
   * `isPending`. `reset()` and `client.clear()` pass it unless forced.
   */
  keepPending?: number;
}

export interface SweepOptions {
  /** Most records examined by this call; the next call continues where it stopped. */
  limit?: number;
}

export interface Store {
  /**
   * Atomic get-or-create for (`fresh.scope`, `fresh.name`): if a record exists it is
   * returned untouched, otherwise `fresh` is stored. Two tabs or processes claiming at
   * once end with one record. A constraint, never get-then-set.
   */
  claim(fresh: IntentRecord, options?: ClaimOptions): Promise<ClaimResult>;
  /** The record for (scope, name), if any. */
  get(scope: string, name: string): Promise<IntentRecord | undefined>;
  /**
   * Atomic read-modify-write of one record, atomic across every client of the store
   * (tabs, processes, machines). Resolves with the record now stored (`undefined` if none).
   */
  update(
    scope: string,
    name: string,
    updater: RecordUpdater,
    options?: WriteOptions,
  ): Promise<IntentRecord | undefined>;
  /** Removes one intent. Passing `key` removes it only if it still has that key. */
  delete(scope: string, name: string, key?: string, options?: DeleteOptions): Promise<void>;
  /** Records of one scope, optionally only those in the given states. */
  list(scope: string, states?: readonly IntentState[]): Promise<IntentRecord[]>;
  /** Removes every intent of one scope (logout), but pending ones with `keepPending`. Other scopes are untouched. */
  clear(scope: string, options?: DeleteOptions): Promise<void>;
  /**
   * Removes records of `scope` that are safe to forget at time `now` (ms since epoch):
   * `succeeded`, `failed` and `ready` ones last updated more than their own `ttl` ago
   * (see `isSweepable`). Never `in_flight` or `unknown`, never another scope's.
   * Resolves with the number removed.
   */
  sweep(scope: string, now: number, options?: SweepOptions): Promise<number>;
  /** Releases files, handles and connections. */
  close?(): Promise<void>;
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
  | { type: 'fallback'; reason: string }
  /** The browser deleted the store's data (site data cleared): a live page put back the intents it knew. */
  | { type: 'restored'; reason: string; names: string[] };

/** Implemented by stores that report {@link StoreEvent}s. The client subscribes. */
export interface ObservableStore {
  subscribe(listener: (event: StoreEvent) => void): () => void;
}
