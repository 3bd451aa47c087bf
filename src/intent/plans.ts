import {
  type ErrorContext,
  HttpError,
  InvalidArgumentError,
  KeyReusedError,
  ResponseValidationError,
} from '../errors.js';
import type { ReadAnswer } from '../http/answer.js';
import { type HttpSender, type HttpTarget, httpAttempt, withTimeout } from '../http/attempt.js';
import { KEEPALIVE_BUDGET, reserveKeepalive, utf8Length } from '../http/keepalive.js';
import { type StandardSchemaV1, validate } from '../http/schema.js';
import { type CallPlan, type IntentHandle, keyedBy } from './call.js';
import { fingerprint } from './fingerprint.js';
import type { DataOf, IntentResponse, RequestOptions } from './options.js';
import { mergeHeaders, resolveTarget, serializeBody } from './request-spec.js';

/**
 * What each of an intent's transports brings to the engine (`sendCall`): the request's
 * fingerprint, how one attempt is sent, and how a call the table ended well becomes the
 * caller's value. `request()` goes through ky, `run()` through your function, `fetch()`
 * through your fetch.
 */

/** The client's `headers()`, whose failure is the app's, told as such. */
export function clientHeaders(h: IntentHandle, where: { intent: string; scope: string }): HeadersInit | undefined {
  try {
    return h.ctx.headers?.();
  } catch (error) {
    throw new InvalidArgumentError(
      `The client's headers() threw while preparing intent "${h.name}": ${(error as Error)?.message ?? String(error)}. Nothing was sent.`,
      { ...where, cause: error },
    );
  }
}

/** A schema's verdict within `ms`; a schema that throws or never answers is a validation failure. */
async function check(schema: StandardSchemaV1, answer: ReadAnswer, ms: number, context: ErrorContext) {
  const bounded = withTimeout(undefined, ms);
  try {
    const checked = await bounded.race(validate(schema, answer.body));
    if ('issues' in checked) throw new ResponseValidationError(answer, checked.issues as never, context);
    return checked.value;
  } catch (error) {
    if (error instanceof ResponseValidationError) throw error;
    const message = bounded.timedOut()
      ? 'the schema did not answer in time'
      : `the schema threw: ${(error as Error)?.message ?? String(error)}`;
    throw new ResponseValidationError(answer, [{ message }], { ...context, cause: error });
  } finally {
    bounded.clear();
  }
}

/** The key as the profile's header carries it; encoded once per intent (`hold()` does it before the click). */
export function keyHeader(h: IntentHandle): string {
  h.keyHeader ??= h.ctx.profile.encodeKey(h.key);
  return h.keyHeader;
}

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Methods no fetch sends (the Fetch standard's forbidden methods): refused before anything leaves. */
const FORBIDDEN = new Set(['CONNECT', 'TRACE', 'TRACK']);

export function checkMethod(method: unknown, where: { intent: string; scope: string }): string {
  const upper = typeof method === 'string' && METHOD.test(method) ? method.toUpperCase() : undefined;
  if (upper === undefined || FORBIDDEN.has(upper))
    throw new InvalidArgumentError(
      `A request method must be an HTTP token that fetch sends, such as "POST", got ${JSON.stringify(method)}.`,
      where,
    );
  return upper;
}

/** Synchronous: a click's request is planned and sent in one go, with no wait between. */
export function requestPlan<S extends StandardSchemaV1 | undefined>(
  h: IntentHandle,
  method: string,
  path: string,
  options: RequestOptions<S>,
): CallPlan<ReadAnswer, IntentResponse<DataOf<S>>> {
  const { ctx } = h;
  const where = { intent: h.name, scope: h.scope };
  const upper = checkMethod(method, where);
  const target = resolveTarget(ctx.baseUrl, path, where);
  const body = serializeBody(options.json, options.body, where);
  const headers = mergeHeaders([clientHeaders(h, where), options.headers], where);
  if (options.json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  // A request without the key is not idempotent at the server: the engine sends it once.
  const keyed = keyedBy(ctx.profile, upper, options.sendKey);
  if (keyed) headers.set(ctx.profile.header, keyHeader(h));
  const http: HttpTarget = { method: upper, url: target.url, headers, body };
  // Chromium refuses keepalive bodies past 64 KiB in flight per page: oncely's take at most half (src/http/keepalive.ts).
  const keepaliveBytes = body === undefined || !ctx.keepalive ? 0 : utf8Length(body, KEEPALIVE_BUDGET);
  let keepalive = ctx.keepalive && keepaliveBytes <= KEEPALIVE_BUDGET;
  const sender: HttpSender = ctx;
  return {
    fingerprint: fingerprint({ method: upper, path: target.path, body: body ?? null }),
    signal: options.signal,
    method: upper,
    url: target.url,
    keyed,
    attempt: async (_n, timeout, signal) => {
      const release = keepalive ? reserveKeepalive(keepaliveBytes) : undefined;
      http.keepalive = release !== undefined;
      const report = await httpAttempt(sender, http, timeout, signal).finally(release);
      // No answer with keepalive may be the browser's quota (the page's own beacons): the next attempt goes without.
      if (report.outcome === 'no_answer') keepalive = false;
      if (report.follow) http.url = report.follow;
      return report as Awaited<ReturnType<CallPlan<ReadAnswer, unknown>['attempt']>>;
    },
    finish: async (verdict, end, context, left) => {
      const answer = end.last.value as ReadAnswer;
      const { replayed } = end.last;
      if (verdict.result === 'key_reused') throw new KeyReusedError(answer, context);
      if (verdict.result === 'http_error') throw new HttpError({ ...answer, replayed }, context);
      let data: unknown = answer.body;
      if (options.schema) {
        if (!answer.json)
          throw new ResponseValidationError(answer, [{ message: 'the response body is not JSON' }], context);
        data = await check(options.schema, answer, left, context);
      }
      const { status, headers } = answer;
      return {
        data: data as DataOf<S>,
        status,
        headers,
        replayed,
        key: h.key,
        intent: h.name,
        attempts: end.attempts,
      };
    },
  };
}
