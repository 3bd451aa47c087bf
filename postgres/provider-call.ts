/**
 * `providerCall()`: an `oncely/server` handler whose effect is a provider's (Stripe, an
 * acquirer), in three phases, on PostgreSQL (seed rule S6: an intent plus reconciliation):
 * 1. one transaction: the app's rows (`begin`), the downstream intent (an oncely client
 *    intent formed in that transaction, its key derived from (scope, key, operation)) and
 *    the key's phase row (`oncely_server_calls`); committed before anything is sent;
 * 2. the provider call through the oncely client under that intent (`call`);
 * 3. the key's own transaction: the app's rows updated (`finish`), the phase row deleted,
 *    the answer stored with the key.
 * The key's transaction holds the key from the request's start to its answer, so a repeat
 * meanwhile is a 409; a process that dies leaves phase 1 committed, and the next attempt
 * resumes from it under the same downstream key (waiting out the dead call's intent lease).
 */
import type { Client } from '../src/client.js';
import { IntentExpiredError, InvalidArgumentError, OutcomeUnknownError } from '../src/errors.js';
import { derivedKeys } from '../src/intent/derived-keys.js';
import { receivedFingerprint } from '../src/intent/fingerprint.js';
import type { Intent } from '../src/intent/intent.js';
import type { Answer, HandlerContext, IdempotentHandler } from '../src/server/idempotency.js';
import { Unsettled } from '../src/server/unsettled.js';
import type { Queryable } from './database.js';
import type { KeyStorePool, PooledConnection } from './key-store.js';

/** What the provider call came to: its result, or reconciliation's verdict on an expired one. */
export type ProviderOutcome<R> =
  | { via: 'provider'; result: R }
  | { via: 'reconciliation'; outcome: 'succeeded' | 'failed' };

/** The request as phases see it: the handler's context without its transaction. */
export type CallContext = Omit<HandlerContext<unknown>, 'tx'>;

export interface ProviderCallOptions<S, R, C extends PooledConnection> {
  /**
   * The oncely client that calls the provider, over a `PostgresStore` in this database
   * (the downstream intents live there). Give its `retry.deadline` well under the key
   * store's `transactionTimeout`: the key's transaction waits for the call.
   */
  client: Client;
  /**
   * Phase 1's transactions. A pool **apart from the key store's**: every request holds one
   * of the key store's connections while it waits for one of these.
   */
  pool: KeyStorePool<C>;
  /** Phase 1: the app's rows, in the transaction the downstream intent is formed in. Returns what phases 2 and 3 need (JSON). */
  begin(tx: C, request: CallContext): Promise<S>;
  /**
   * Phase 2: the provider call under `intent`, e.g. `(await intent.post('charges', { json })).data`.
   * A definitive refusal the app wants to answer (a declined card's `HttpError`) is caught
   * here and returned; an unknown outcome is left to throw (the request is a 409, the
   * next one resumes under the same key).
   */
  call(intent: Intent, state: S, request: CallContext): Promise<R>;
  /** Phase 3, in the key's transaction: the app's rows updated; the answer (stored with the key). */
  finish(tx: C, state: S, outcome: ProviderOutcome<R>, request: CallContext): Answer | Promise<Answer>;
  /** Longest wait (ms) for a phase-1 connection; past it the request is a 409. @default 5_000 */
  connectTimeout?: number;
  /** `Retry-After` (s) while an outcome awaits reconciliation. @default 60 */
  reviewRetryAfter?: number;
}

interface CallRow {
  operation: string;
  fingerprint: string;
  intent: string;
  intent_key: string;
  state: unknown;
  review: boolean;
}

/**
 * The downstream intent of an incoming key: its name, and its key — a UUIDv5 over the
 * client's scope and that name, so the same (scope, key, operation) reaches the provider
 * with the same key from any process, and the invariant check can recompute it.
 */
export function downstreamIntent(clientScope: string, scope: string, operation: string, key: string) {
  const name = `oncely-server:${JSON.stringify([scope, operation, key])}`;
  return { name, key: derivedKeys.derive(clientScope, name) };
}

/** A call handed to reconciliation: its incoming key and the downstream intent to settle. */
export interface CallInReview {
  scope: string;
  key: string;
  operation: string;
  /** The downstream intent's name and key: ask the provider about `intentKey`, then `settleIntent(store, client.scope, intent, { key: intentKey, outcome })`. */
  intent: string;
  intentKey: string;
  createdAt: Date;
}

/** The calls whose outcome is unknown past the provider's retention, oldest first: the reconciliation job's input. */
export async function callsInReview(db: Queryable, limit = 100): Promise<CallInReview[]> {
  const { rows } = await db.query({
    text: `SELECT scope, key, operation, intent, intent_key, created_at FROM oncely_server_calls
            WHERE review ORDER BY created_at LIMIT $1`,
    values: [limit],
  });
  return rows.map((row) => ({
    scope: row.scope,
    key: row.key,
    operation: row.operation,
    intent: row.intent,
    intentKey: row.intent_key,
    createdAt: row.created_at,
  }));
}

/**
 * A handler in three phases (see above) for `createIdempotency()` over a `PostgresKeyStore`.
 * @example
 * app.post('/orders', idempotent(idempotency, providerCall({ client, pool: phasePool, begin, call, finish })));
 */
export function providerCall<S, R, C extends PooledConnection>(
  options: ProviderCallOptions<S, R, C>,
): IdempotentHandler<C> {
  const { client, pool } = options;
  if (typeof client?.intent !== 'function' || typeof pool?.connect !== 'function')
    throw new InvalidArgumentError('providerCall needs a `client` (createClient over a PostgresStore) and a `pool`.');
  const connectTimeout = options.connectTimeout ?? 5_000;
  const reviewRetryAfter = options.reviewRetryAfter ?? 60;
  const review = () =>
    new Unsettled(
      'pending_review',
      reviewRetryAfter,
      "The provider's answer is unknown past its retention; it is being reconciled. Retry later with the same key: nothing is charged twice.",
    );

  return async ({ tx, ...request }) => {
    const { scope, key, operation } = request;
    const url = new URL(request.request.url);
    const fingerprint = receivedFingerprint(request.request.method, url.pathname + url.search, request.text);
    const downstream = downstreamIntent(client.scope, scope, operation, key);
    const found = await tx.query({
      text: 'SELECT operation, fingerprint, intent, intent_key, state, review FROM oncely_server_calls WHERE scope = $1 AND key = $2',
      values: [scope, key],
    });
    let row = found.rows[0] as CallRow | undefined;
    if (row && (row.operation !== operation || row.fingerprint !== fingerprint)) throw new Unsettled('mismatch');
    const toReview = () =>
      pool.query({
        text: 'UPDATE oncely_server_calls SET review = true WHERE scope = $1 AND key = $2',
        values: [scope, key],
      });
    if (row && !row.review) {
      // Resuming: the downstream intent must still be the one phase 1 formed. A sweep may have
      // deleted it (its record outlived its ttl while the phase row waited); re-forming it would
      // start a fresh clock under a key the provider may have forgotten — a second charge
      // (rule 7, S6). Reconciliation decides instead.
      const stored = await client.store.get(client.scope, row.intent);
      if (stored?.key !== row.intent_key) {
        await toReview();
        row.review = true;
      }
    }
    if (!row) {
      // A downstream intent without a phase row: the incoming key was answered before and is
      // now past the key store's retention. Its derived key may still be known to the provider,
      // which would replay the old charge for this new request: refused until both forget it.
      if (await client.store.get(client.scope, downstream.name))
        throw new Unsettled(
          'mismatch',
          undefined,
          "This key was used for an earlier request, now past the server's retention, whose provider call is still remembered. Send this request with a new idempotency key.",
        );
      // Phase 1: committed before anything is sent, on a connection of its own.
      const conn = await connectWithin(pool, connectTimeout);
      let failed: Error | undefined;
      try {
        await conn.query({ text: 'BEGIN' });
        const state = (await options.begin(conn, request)) ?? null;
        await client.intent(downstream.name, { key: downstream.key, transaction: conn });
        const inserted = await conn.query({
          text: `INSERT INTO oncely_server_calls (scope, key, operation, fingerprint, intent, intent_key, state)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
          values: [scope, key, operation, fingerprint, downstream.name, downstream.key, JSON.stringify(state)],
        });
        if (inserted.rowCount !== 1) throw new Unsettled('in_progress'); // another writer of the phase row
        await conn.query({ text: 'COMMIT' });
        row = { operation, fingerprint, intent: downstream.name, intent_key: downstream.key, state, review: false };
      } catch (error) {
        await conn.query({ text: 'ROLLBACK' }).catch((rollback: Error) => {
          failed = rollback;
        });
        throw error;
      } finally {
        conn.release(failed);
      }
    }
    const state = row.state as S;
    const intent = await client.intent(row.intent, { key: row.intent_key });
    let outcome: ProviderOutcome<R>;
    if (row.review) {
      // Handed to reconciliation: never resent; settled by settleIntent, or still pending.
      if (intent.state !== 'succeeded' && intent.state !== 'failed') throw review();
      outcome = { via: 'reconciliation', outcome: intent.state };
    } else {
      // A live call elsewhere (a process whose key transaction died, or one past its
      // deadline) holds the intent: 409 until its lease lapses, rather than waiting for it here.
      const lease = intent.record.lease;
      const left = lease ? lease.until - Date.now() : 0;
      if (left > 0) throw new Unsettled('in_progress', Math.ceil(left / 1000));
      try {
        outcome = { via: 'provider', result: await options.call(intent, state, request) };
      } catch (error) {
        if (error instanceof IntentExpiredError) {
          await toReview();
          throw review();
        }
        // Another process's lease, a 409 from the provider, a budget spent without an answer.
        if (error instanceof OutcomeUnknownError) throw new Unsettled('in_progress');
        throw error;
      }
    }
    const answer = await options.finish(tx, state, outcome, request);
    await tx.query({ text: 'DELETE FROM oncely_server_calls WHERE scope = $1 AND key = $2', values: [scope, key] });
    return answer;
  };
}

/** A connection within `ms`, or a 409 (the pool is exhausted): one that arrives later is released. */
async function connectWithin<C extends PooledConnection>(pool: KeyStorePool<C>, ms: number): Promise<C> {
  const pending = pool.connect();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Unsettled('in_progress')), ms);
  });
  try {
    return await Promise.race([pending, late]);
  } catch (error) {
    pending.then((conn) => conn.release()).catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
