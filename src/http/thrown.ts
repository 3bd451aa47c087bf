import isNetworkError from 'is-network-error';
import { isReplay, type Outcome, type Profile } from '../profiles/profiles.js';
import type { AttemptReport } from '../retry/loop.js';
import { isRedirect, provablyNotSent } from './answer.js';
import { answerReport, readCopy } from './attempt.js';

/** Your own mapping from an error your transport threw to an outcome; `undefined` falls back to the default. */
export type RunClassifier = (error: unknown) => Outcome | undefined;

/** Connection-level failures after which the request may or may not have arrived. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

type Loose = Record<string, unknown> & { response?: Record<string, unknown>; raw?: Record<string, unknown> };

const toHeaders = (value: unknown): Headers | undefined => {
  if (value instanceof Headers) return value;
  if (value === null || typeof value !== 'object') return undefined;
  const headers = new Headers();
  for (const [name, v] of Object.entries(value)) {
    if (typeof v === 'string') headers.set(name, v);
    else if (Array.isArray(v)) for (const item of v) if (typeof item === 'string') headers.append(name, item);
  }
  return headers;
};

const statusOf = (...values: unknown[]) =>
  values.find((s): s is number => typeof s === 'number' && s >= 100 && s <= 599);

function isConnectionError(error: unknown): boolean {
  for (let e = error as Loose | undefined, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    if (isNetworkError(e)) return true;
    if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || provablyNotSent(e))) return true;
    const name = typeof e.name === 'string' ? e.name : '';
    const type = typeof e.type === 'string' ? e.type : '';
    if (/network|connection|timeout/i.test(name) || type === 'StripeConnectionError') return true;
    e = e.cause as Loose | undefined;
  }
  return false;
}

/**
 * How a value returned by `run()`'s function ended the attempt: a `Response` by its status
 * (a 503 Response is not a success), a result with `lastResponse` (stripe-node) checked for
 * the replay marker; anything else is a success.
 */
export async function reportValue<T>(value: T, profile: Profile): Promise<AttemptReport<T>> {
  if (value instanceof Response) {
    if (isRedirect(value)) return { outcome: 'redirect', replayed: false, sent: true, status: value.status, value };
    return answerReport(profile, await readCopy(value), value);
  }
  let last: Loose | undefined;
  try {
    last = (value as { lastResponse?: Loose } | null)?.lastResponse;
  } catch {
    // A value whose getters throw (a proxy) carries no response to read.
  }
  const headers = toHeaders(last?.headers);
  const status = statusOf(last?.statusCode, last?.status);
  const replayed = headers !== undefined && isReplay(profile, { status: status ?? 200, headers, body: value });
  return { outcome: 'success', replayed, sent: true, ...(status ? { status } : {}), value };
}

/**
 * How an error your transport threw ended the attempt: an HTTP status (`status`,
 * `statusCode` or `response.status`, as thrown by ky, stripe-node, axios, fetch wrappers)
 * is classified by the profile; connection errors and timeouts are retried (outcome
 * unknown); anything else leaves the outcome unknown, not retried. Always sent: code that
 * was handed the attempt may have sent before it threw, whatever it threw (a refused
 * second request says nothing of the first).
 */
export function reportThrown(
  error: unknown,
  profile: Profile,
  custom: RunClassifier | undefined,
): AttemptReport<never> {
  const e = (error ?? {}) as Loose;
  const status = statusOf(e.status, e.statusCode, e.response?.status);
  const headers = toHeaders(e.headers ?? e.response?.headers ?? e.raw?.headers);
  const base = { replayed: false, sent: true, error, ...(status ? { status } : {}), ...(headers ? { headers } : {}) };
  const chosen = custom?.(error);
  if (status !== undefined) {
    const answer = { status, headers: headers ?? new Headers(), body: e.raw ?? e.body ?? e.data ?? e.response?.data };
    // The answer is the report's value, so errors carry its body as `lastAnswer.body` (stripe-node's `raw`).
    const value = answer as never;
    return { ...base, outcome: chosen ?? profile.classify(answer), replayed: isReplay(profile, answer), value };
  }
  if (chosen) return { ...base, outcome: chosen };
  if (isConnectionError(error)) return { ...base, outcome: 'no_answer' };
  // Neither an answer nor a network failure: it may have thrown after sending. Only the
  // server saying no earns `failed`; a bug does not heal by sending again: not retried.
  return { ...base, outcome: 'no_answer', final: true };
}
