/**
 * `POST /payments` under the IETF idempotency contract:
 *
 * 1. `Idempotency-Key` (quoted Structured Field string, or bare) → 400 when missing or invalid.
 * 2. INSERT the key as `in_progress` (the primary key decides who is first).
 *    On conflict: a different request hash → 422 (a mismatch wins over "in progress");
 *    still `in_progress` → 409 + Retry-After; otherwise the stored response is replayed
 *    with `Idempotent-Replayed: true`.
 * 3. The charge and the stored response commit in ONE transaction. If it rolls back
 *    (a fault, a crash), the claim is released and a retry with the key runs again.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type PaymentsDb, RollbackRequested } from './db.ts';
import type { Faults } from './faults.ts';
import { BodyTooLarge, readBody, sendJson, sendProblem } from './http-io.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';
import { problems } from './problem.ts';
import { requestHash } from './request-hash.ts';

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
  db: PaymentsDb;
  faults: Faults;
  /** Seconds a 409 asks the client to wait. */
  retryAfter: number;
  now: () => number;
  log: (entry: RequestLogEntry) => void;
}

export interface PaymentBody {
  amount: number;
  currency: string;
  cart?: unknown;
}

/** The request's account: keys are unique per (scope, key), never globally. */
const scopeOf = (req: IncomingMessage): string => {
  const header = req.headers['x-account'];
  return typeof header === 'string' && header.trim() !== '' ? header.trim() : 'public';
};

function validatePayment(value: unknown): PaymentBody | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'The body must be a JSON object.';
  const { amount, currency, cart } = value as Record<string, unknown>;
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0 || amount > 1_000_000)
    return '`amount` must be a number greater than 0 and at most 1,000,000.';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency))
    return '`currency` must be an ISO 4217 code such as "EUR".';
  return { amount, currency, cart };
}

export async function handlePayment(req: IncomingMessage, res: ServerResponse, ctx: PaymentContext): Promise<void> {
  const at = ctx.now();
  const base = { at, method: 'POST', path: '/payments' };
  const parsedKey = parseIdempotencyKey(req.headers['idempotency-key']);
  let text: string;
  try {
    text = await readBody(req);
  } catch (error) {
    if (!(error instanceof BodyTooLarge)) throw error;
    ctx.log({ ...base, status: 413, outcome: 'invalid' });
    res.setHeader('Connection', 'close');
    return sendProblem(res, problems.tooLarge());
  }
  if (!parsedKey.ok) {
    ctx.log({ ...base, status: 400, outcome: 'invalid' });
    return sendProblem(
      res,
      parsedKey.missing ? problems.keyMissing(parsedKey.reason) : problems.keyInvalid(parsedKey.reason),
    );
  }
  const key = parsedKey.key;
  const scope = scopeOf(req);
  const logged = { ...base, key, scope };

  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    ctx.log({ ...logged, status: 400, outcome: 'invalid' });
    return sendProblem(res, problems.badRequest('The body is not valid JSON.'));
  }
  const payment = validatePayment(json);
  if (typeof payment === 'string') {
    ctx.log({ ...logged, status: 400, outcome: 'invalid' });
    return sendProblem(res, problems.badRequest(payment));
  }

  const conflictLeft = ctx.faults.conflictRemaining();
  if (conflictLeft > 0) {
    ctx.log({ ...logged, status: 409, outcome: 'conflict_fault' });
    return sendProblem(res, problems.inProgress(key), { 'Retry-After': String(ctx.retryAfter) });
  }

  const hash = requestHash('POST', '/payments', json);
  const claim = ctx.db.claim(scope, key, hash, at);
  if (!claim.claimed) {
    const existing = claim.existing;
    if (existing.request_hash !== hash) {
      ctx.log({ ...logged, status: 422, outcome: 'mismatch' });
      return sendProblem(res, problems.keyReused(key));
    }
    if (existing.state === 'in_progress') {
      ctx.log({ ...logged, status: 409, outcome: 'in_progress' });
      return sendProblem(res, problems.inProgress(key), { 'Retry-After': String(ctx.retryAfter) });
    }
    const status = existing.response_code ?? 200;
    const body: unknown = existing.response_body === null ? null : JSON.parse(existing.response_body);
    return respond(res, ctx, { ...logged, status, outcome: 'replayed' }, body, { 'Idempotent-Replayed': 'true' });
  }

  // This request owns the key: do the work.
  const wait = await ctx.faults.beforeEffect();
  if (wait === 'aborted') {
    ctx.db.release(scope, key);
    ctx.log({ ...logged, status: 503, outcome: 'aborted' });
    return sendProblem(res, problems.unavailable('The request was abandoned before it committed; retry.'));
  }
  let committed: ReturnType<PaymentsDb['commitCharge']>;
  try {
    committed = ctx.db.commitCharge(scope, key, payment, ctx.now(), () => {
      if (ctx.faults.takeFailBeforeCommit()) throw new RollbackRequested('injected failure before commit');
    });
  } catch (error) {
    ctx.db.release(scope, key);
    const injected = error instanceof RollbackRequested;
    ctx.log({ ...logged, status: 503, outcome: injected ? 'failed_before_commit' : 'error' });
    return sendProblem(
      res,
      problems.unavailable(injected ? 'The payment failed before it committed; nothing was charged.' : String(error)),
    );
  }
  const { response, charge } = committed;
  return respond(res, ctx, { ...logged, status: response.status, outcome: 'created' }, response.body, {
    Location: `/payments/${charge.id}`,
  });
}

/** Sends a payment response, or drops it (destroys the socket) when the `drop` fault says so. */
function respond(
  res: ServerResponse,
  ctx: PaymentContext,
  entry: RequestLogEntry,
  body: unknown,
  headers: Record<string, string>,
): void {
  if (ctx.faults.takeDrop()) {
    ctx.log({ ...entry, dropped: true });
    res.socket?.destroy();
    return;
  }
  ctx.log(entry);
  sendJson(res, entry.status, body, headers);
}
