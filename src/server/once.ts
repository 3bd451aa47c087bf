/**
 * `once()`: run an effect at most once per `(scope, key)`, inside the transaction that holds
 * the key, and give back the stored result on every repeat. The HTTP middleware is this
 * with a stored response as the result; a queue consumer keys it by a message id.
 */
import { InvalidArgumentError } from '../errors.js';
import { canonicalJson } from '../intent/canonical-json.js';
import { fingerprint } from '../intent/fingerprint.js';
import type { KeyClaim, KeyStore, StoredAnswer } from './store.js';

export interface OnceSpec {
  /** The account or tenant: the same key in two scopes is two keys. @default '' */
  scope?: string;
  /** The idempotency key (a message id, a client's key): 1–255 printable ASCII characters. */
  key: string;
  /** What the key is for, e.g. `'payout'`: a key is never honoured on another operation. */
  operation: string;
  /**
   * The request the key is bound to (a JSON value): the same key with another request is
   * `mismatch`, never a replay of the first one's result.
   * @default null
   */
  request?: unknown;
}

/**
 * - `ran`: this call ran `work` and its result committed with the key.
 * - `replayed`: the key was done before: `value` is the stored result.
 * - `in_progress`: another call holds the key and has not committed: not done yet, retry later.
 * - `mismatch`: the key was used for another operation or request.
 */
export type OnceResult<T> =
  | { outcome: 'ran' | 'replayed'; value: T }
  | { outcome: 'in_progress'; value?: undefined }
  | { outcome: 'mismatch'; value?: undefined };

export interface OnceOptions<Tx> {
  /**
   * A transaction the app opened itself (PostgreSQL: the `pg` client it ran `BEGIN` on):
   * the key, `work`'s rows and the result commit with the app's `COMMIT`, or none of them.
   * `ran` then means "commits with your transaction". Needs a store with `executeIn`.
   */
  tx?: Tx;
}

const PRINTABLE = /^[\x20-\x7e]{1,255}$/;

/** Checks a claim's parts: misuse is an `InvalidArgumentError`, never a request answered wrongly. */
export function checkClaim(claim: KeyClaim): KeyClaim {
  if (typeof claim.scope !== 'string') throw new InvalidArgumentError('The scope must be a string.');
  if (typeof claim.key !== 'string' || !PRINTABLE.test(claim.key))
    throw new InvalidArgumentError('An idempotency key must be 1 to 255 printable ASCII characters (%x20-7E).');
  if (typeof claim.operation !== 'string' || claim.operation === '')
    throw new InvalidArgumentError('The operation must be a non-empty string, e.g. "POST /payments".');
  return claim;
}

/**
 * Runs `work` at most once per `(scope, key)` in the store's transaction, which `work`
 * receives to write its own rows in. The result (a JSON value) is stored with the key; a
 * `work` that throws leaves nothing, and the next call runs.
 *
 * @example
 * const result = await once(store, { scope: account, key: message.id, operation: 'payout', request: message.body },
 *   async (tx) => { await tx.query('INSERT INTO ledger …'); return { paid: true }; });
 * if (result.outcome === 'in_progress') requeue(message);
 * // Or inside your own transaction: await client.query('BEGIN'); await once(store, spec, work, { tx: client }); await client.query('COMMIT');
 */
export async function once<Tx, T>(
  store: KeyStore<Tx>,
  spec: OnceSpec,
  work: (tx: Tx) => Promise<T>,
  options: OnceOptions<Tx> = {},
): Promise<OnceResult<T>> {
  let body: string;
  try {
    body = canonicalJson(spec.request ?? null);
  } catch (error) {
    throw new InvalidArgumentError(`once(): the request is not JSON: ${(error as Error).message}.`, { cause: error });
  }
  const claim = checkClaim({
    scope: spec.scope ?? '',
    key: spec.key,
    operation: spec.operation,
    fingerprint: fingerprint({ method: 'ONCE', path: spec.operation, body }),
  });
  const run = async (tx: Tx): Promise<StoredAnswer> => {
    const value = await work(tx);
    const text = value === undefined ? 'null' : JSON.stringify(value);
    return { status: 200, headers: [['content-type', 'application/json']], body: new TextEncoder().encode(text) };
  };
  if (options.tx !== undefined && typeof store.executeIn !== 'function')
    throw new InvalidArgumentError("once(): this key store cannot join the app's transaction (no executeIn).");
  const execution =
    options.tx === undefined ? await store.execute(claim, run) : await store.executeIn!(options.tx, claim, run);
  if (execution.outcome === 'in_progress' || execution.outcome === 'mismatch') return { outcome: execution.outcome };
  // Both outcomes read the stored bytes: the first caller sees what every repeat will.
  return { outcome: execution.outcome, value: JSON.parse(new TextDecoder().decode(execution.answer.body)) as T };
}
