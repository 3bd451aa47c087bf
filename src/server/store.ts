/**
 * What `oncely/server` needs from a key store: one call that claims a key, runs the work in
 * the transaction that holds the claim, stores the answer there and commits all together.
 * `MemoryKeyStore` (tests) and `PostgresKeyStore` (`oncely/postgres`) implement it.
 */

/** An answer as stored and replayed: status, headers, body bytes. */
export interface StoredAnswer {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

/** What a request claims: its key in its scope, bound to an operation and a fingerprint. */
export interface KeyClaim {
  /** The account or tenant the key belongs to: the same key in two scopes is two keys. */
  scope: string;
  key: string;
  /** What the key is used for, e.g. `POST /payments`: a key is never honoured on another operation. */
  operation: string;
  /** The request's fingerprint (`receivedFingerprint`): another request under the key is a mismatch. */
  fingerprint: string;
}

/**
 * How one execution ended:
 * - `ran`: this call claimed the key; the work ran and its answer committed with it.
 * - `replayed`: the key was complete; `answer` is the stored one.
 * - `in_progress`: another call holds the key and has not committed: nothing is known yet.
 * - `mismatch`: the key is used (complete or in progress) by another operation or request.
 */
export type Execution =
  | { outcome: 'ran'; answer: StoredAnswer }
  | { outcome: 'replayed'; answer: StoredAnswer }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' };

/**
 * A server key store. `Tx` is what the work receives: the transaction (connection) the key
 * row lives in, where the work writes its own rows so that they commit with the key.
 */
export interface KeyStore<Tx> {
  /**
   * At most once per `(scope, key)`: claim the key in a new transaction, run `work` in it,
   * store its answer and commit; when `work` throws, roll everything back (the key too) and
   * rethrow. Never waits for another holder of the key: answers `in_progress` instead.
   */
  execute(claim: KeyClaim, work: (tx: Tx) => Promise<StoredAnswer>): Promise<Execution>;
  /**
   * The same, inside a transaction the app opened on its own connection (`tx`): the claim,
   * `work` and the key row commit with the app's `COMMIT`, or none of them. Optional: a
   * store that cannot join the app's transaction leaves it out (`once(…, { tx })` refuses).
   */
  executeIn?(tx: Tx, claim: KeyClaim, work: (tx: Tx) => Promise<StoredAnswer>): Promise<Execution>;
}
