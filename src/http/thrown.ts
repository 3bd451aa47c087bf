import { isReplayed, type Outcome, type Profile } from '../profiles/profiles.js';

/** What `intent.run()` learned from an error your transport threw. */
export interface ThrownOutcome {
  outcome: Outcome;
  status?: number;
  headers?: Headers;
  /** The error carried the profile's replay marker: the server's stored answer. */
  replayed?: boolean;
}

/** Your own mapping from a thrown error to an outcome; `undefined` falls back to the default. */
export type RunClassifier = (error: unknown) => Outcome | undefined;

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
]);

const toHeaders = (value: unknown): Headers | undefined => {
  if (value instanceof Headers) return value;
  if (value === null || typeof value !== 'object') return undefined;
  const headers = new Headers();
  for (const [name, v] of Object.entries(value)) if (typeof v === 'string') headers.set(name, v);
  return headers;
};

/**
 * Default reading of a transport's error: an HTTP status (`status`, `statusCode` or
 * `response.status`, as thrown by ky, stripe-node, axios, fetch wrappers) is classified by
 * the profile; connection and timeout errors are retryable (outcome unknown); anything
 * else is a definitive failure, not retried.
 */
export function classifyThrown(error: unknown, profile: Profile, custom?: RunClassifier): ThrownOutcome {
  const e = (error ?? {}) as Record<string, unknown> & { response?: Record<string, unknown> };
  const status = [e.status, e.statusCode, e.response?.status].find((s): s is number => typeof s === 'number');
  const headers = toHeaders(e.headers ?? e.response?.headers);
  const chosen = custom?.(error);
  if (chosen) return { outcome: chosen, ...(status ? { status } : {}), ...(headers ? { headers } : {}) };
  if (status !== undefined) {
    const body = e.raw ?? e.body ?? e.data ?? e.response?.data;
    let outcome = profile.classify({ status, headers: headers ?? new Headers(), body });
    const replayed = headers !== undefined && isReplayed(headers, profile.replayHeaders);
    // A replayed error is the server's stored answer, as in http-send's classify(): not retried.
    if (replayed && (outcome === 'retryable' || outcome === 'in_progress')) outcome = 'failed';
    return { outcome, status, replayed, ...(headers ? { headers } : {}) };
  }
  const name = typeof e.name === 'string' ? e.name : '';
  const code = typeof e.code === 'string' ? e.code : '';
  const cause = e.cause as { code?: unknown } | undefined;
  const network =
    NETWORK_CODES.has(code) ||
    (typeof cause?.code === 'string' && NETWORK_CODES.has(cause.code)) ||
    /network|connection|timeout/i.test(name) ||
    (error instanceof TypeError && /fetch|network/i.test(error.message));
  return { outcome: network ? 'retryable' : 'failed' };
}
