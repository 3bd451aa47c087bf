import { InvalidArgumentError, KeyReusedError } from '../errors.js';
import { fetchAttempt } from '../http/attempt.js';
import { type CallPlan, type IntentHandle, keyedBy } from './call.js';
import { fingerprint } from './fingerprint.js';
import { callWith, type Intent } from './intent.js';
import { checkMethod, clientHeaders } from './plans.js';
import { mergeHeaders, resolveTarget, serializeBody } from './request-spec.js';

/**
 * A `fetch` bound to `intent`: the key header on every attempt, the client's budget,
 * retries and classification, and the intent's state kept. Resolves with the final
 * `Response` (a definitive error answer too, as `fetch` does, with the intent `failed`);
 * rejects with an oncely error when the outcome is unknown or the key was reused.
 * @example const res = await intentFetch(intent, 'payments', { method: 'POST', body })
 */
export function intentFetch(intent: Intent, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return callWith(intent, (h) => fetchPlan(h, input, init));
}

/** What `fetch(request, init)` would send, from a `Request` and the init that overrides it. */
async function fromRequest(input: Request, init: RequestInit, where: { intent: string; scope: string }) {
  let request: Request;
  try {
    request = new Request(input, init);
  } catch (error) {
    throw new InvalidArgumentError(`intent.fetch() cannot send this Request: ${(error as Error).message}.`, {
      ...where,
      cause: error,
    });
  }
  const { cache, credentials, integrity, keepalive, mode, referrer, referrerPolicy, signal } = request;
  return {
    url: request.url,
    init: {
      method: request.method,
      headers: request.headers,
      body: request.body ? await request.text() : undefined,
      ...{ cache, credentials, integrity, keepalive, mode, referrer, referrerPolicy },
      signal: init.signal ?? signal,
    } as RequestInit,
  };
}

async function fetchPlan(
  h: IntentHandle,
  input: string | URL | Request,
  given: RequestInit,
): Promise<CallPlan<Response, Response>> {
  const { ctx } = h;
  const where = { intent: h.name, scope: h.scope };
  const { url, init } =
    typeof Request !== 'undefined' && input instanceof Request
      ? await fromRequest(input, given, where)
      : { url: String(input), init: given };
  const upper = checkMethod(init.method ?? 'GET', where);
  const target = resolveTarget(ctx.baseUrl, url, where);
  const body = serializeBody(undefined, init.body ?? undefined, where);
  const headers = mergeHeaders([clientHeaders(h, where), init.headers], where);
  headers.set(ctx.profile.header, ctx.profile.encodeKey(h.key));
  const http = { method: upper, url: target.url, headers, body };
  const { signal, ...rest } = init;
  return {
    fingerprint: fingerprint({ method: upper, path: target.path, body: body ?? null }),
    signal: signal ?? undefined,
    method: upper,
    url: target.url,
    // The key goes on every method, but only one the profile keys is retried: the server
    // may ignore the key on others (Stripe keys POST only).
    keyed: keyedBy(ctx.profile, upper),
    attempt: async (_n, timeout, attemptSignal) => {
      const report = await fetchAttempt(ctx, http, rest, timeout, attemptSignal);
      if (report.follow) http.url = report.follow;
      return report;
    },
    finish: (verdict, end, context) => {
      const response = end.last.value as Response;
      if (verdict.result === 'key_reused')
        throw new KeyReusedError({ status: response.status, body: undefined }, context);
      return response;
    },
  };
}
