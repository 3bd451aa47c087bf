/**
 * `POST /payments` on `oncely/server`: the Express 5 adapter over the `SqliteKeyStore`. The
 * idempotency contract is the library's (400 bad key, 422 another request under the key,
 * 409 + Retry-After while in progress, the stored answer replayed byte for byte with
 * `Idempotent-Replayed: true`; a handler that throws leaves nothing, so a retry runs again).
 * This file adds the payment itself (a charge row in the key's transaction), the faults the
 * tests inject (`faults.ts`) and the request log they read.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { parseSfString } from 'oncely/mock';
import type { SqliteKeyStore, SqliteTransaction } from 'oncely/node';
import { type Answer, createIdempotency, PROBLEM_TYPES, type RequestEvent } from 'oncely/server';
import { idempotent } from 'oncely/server/express';
import type { Faults } from './faults.ts';
import { MAX_BODY_BYTES, sendProblem } from './http-io.ts';
import { insertCharge } from './ledger.ts';
import { problems } from './problem.ts';

/** What happened to one payment request, for the request log tests read. */
export type PaymentOutcome =
  | 'created'
  | 'replayed'
  | 'in_progress'
  | 'conflict_fault'
  | 'mismatch'
  | 'failed_before_commit'
  | 'aborted'
  | 'invalid'
  | 'error';

export interface RequestLogEntry {
  at: number;
  method: string;
  path: string;
  key?: string;
  scope?: string;
  status: number;
  outcome: PaymentOutcome;
  /** The response was not delivered: the socket was destroyed after the commit. */
  dropped?: boolean;
}

export interface PaymentContext {
  store: SqliteKeyStore;
  faults: Faults;
  /** Seconds a 409 asks the client to wait. */
  retryAfter: number;
  now: () => number;
  log: (entry: RequestLogEntry) => void;
}

/** Thrown inside the key's transaction to roll it back on purpose (`failBeforeCommit`). */
class RollbackRequested extends Error {}
/** Thrown inside the key's transaction when a held request is given up (`reset`, close). */
class HoldAborted extends Error {}

function validatePayment(value: unknown): { amount: number; currency: string } | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The body must be a JSON object.';
  const { amount, currency } = value as Record<string, unknown>;
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0 || amount > 1_000_000)
    return '`amount` must be a number greater than 0 and at most 1,000,000.';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency))
    return '`currency` must be an ISO 4217 code such as "EUR".';
  return { amount, currency };
}

/** The key as the log shows it (the library decodes it the same way: quoted, or bare). */
function keyOf(req: Request): string | undefined {
  const raw = req.get('idempotency-key')?.trim();
  return raw ? (parseSfString(raw) ?? raw) : undefined;
}

/** The Express handlers of `POST /payments`, in order. */
export function paymentRoute(ctx: PaymentContext): (RequestHandler | ErrorRequestHandler)[] {
  /** The log entry of the request being answered, for `onRequest`, which hears no request. */
  const current = new AsyncLocalStorage<Omit<RequestLogEntry, 'status'>>();

  const idempotency = createIdempotency<SqliteTransaction>({
    store: ctx.store,
    keyFormat: 'any', // a quoted Structured Field string (the draft), or a bare key
    scope: (request) => request.headers.get('x-account')?.trim() || 'public',
    retryAfter: ctx.retryAfter,
    maxBodyBytes: MAX_BODY_BYTES,
    onRequest: (event: RequestEvent) => {
      const entry = current.getStore();
      if (!entry) return;
      entry.scope = event.scope;
      if (event.outcome === 'bad_key' || event.outcome === 'too_large') {
        entry.outcome = 'invalid';
        delete entry.key;
      } else if (event.outcome === 'ran') entry.outcome = (event.status ?? 500) < 300 ? 'created' : 'invalid';
      else if (event.outcome !== 'threw') entry.outcome = event.outcome;
    },
  });

  /** Opens the log entry; logs it when the answer is sent, or drops the answer (`drop`). */
  const logged: RequestHandler = (req, res, next) => {
    const entry: Omit<RequestLogEntry, 'status'> = {
      at: ctx.now(),
      method: 'POST',
      path: '/payments',
      key: keyOf(req),
      outcome: 'error',
    };
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.end = ((...args: unknown[]) => {
      const done = { ...entry, status: res.statusCode };
      if ((entry.outcome === 'created' || entry.outcome === 'replayed') && ctx.faults.takeDrop()) {
        // The effect committed; the answer never leaves.
        ctx.log({ ...done, dropped: true });
        res.socket?.destroy();
        return res;
      }
      ctx.log(done);
      return end(...args);
    }) as Response['end'];
    res.setHeader('Cache-Control', 'no-store');
    current.run(entry, next);
  };

  /** `conflictFor`: 409 + Retry-After as if another request with the key were running. */
  const conflictFault: RequestHandler = (_req, res, next) => {
    if (ctx.faults.conflictRemaining() === 0) return next();
    current.getStore()!.outcome = 'conflict_fault';
    sendProblem(
      res,
      { type: PROBLEM_TYPES.inProgress, title: 'A request with this Idempotency-Key is outstanding', status: 409 },
      { 'Retry-After': String(ctx.retryAfter) },
    );
  };

  const charge = idempotent(idempotency, async ({ tx, json, key, scope }): Promise<Answer> => {
    const payment = validatePayment(json);
    // An answer like any other: stored with the key and replayed (the draft's rule).
    if (typeof payment === 'string')
      return {
        status: 400,
        headers: { 'content-type': 'application/problem+json' },
        body: problems.badRequest(payment),
      };
    if ((await ctx.faults.beforeEffect()) === 'aborted') throw new HoldAborted();
    const row = insertCharge(tx, { scope, key, ...payment }, ctx.now());
    if (ctx.faults.takeFailBeforeCommit()) throw new RollbackRequested();
    return {
      status: 201,
      headers: { location: `/payments/${row.id}` },
      body: { id: row.id, amount: row.amount, currency: row.currency, status: 'succeeded' },
    };
  });

  /** The handler (or the store) threw: the transaction rolled back, the key is free; 503. */
  const failed: ErrorRequestHandler = (error, _req, res, _next) => {
    const [outcome, detail]: [PaymentOutcome, string] =
      error instanceof RollbackRequested
        ? ['failed_before_commit', 'The payment failed before it committed; nothing was charged.']
        : error instanceof HoldAborted
          ? ['aborted', 'The request was abandoned before it committed; retry.']
          : ['error', String(error)];
    const entry = current.getStore();
    if (entry) entry.outcome = outcome;
    if (res.headersSent) res.socket?.destroy();
    else sendProblem(res, problems.unavailable(detail));
  };

  return [logged, conflictFault, charge as unknown as RequestHandler, failed];
}
