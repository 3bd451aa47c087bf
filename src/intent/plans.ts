import {
  type ErrorContext,
  HttpError,
  InvalidArgumentError,
  KeyReusedError,
  ResponseValidationError,
  TransportError,
} from '../errors.js';
import type { ReadAnswer } from '../http/answer.js';
import {
  answerReport,
  fetchAttempt,
  type HttpSender,
  type HttpTarget,
  httpAttempt,
  readCopy,
  withTimeout,
} from '../http/attempt.js';
import { type StandardSchemaV1, validate } from '../http/schema.js';
import { reportThrown, reportValue } from '../http/thrown.js';
import type { CallPlan, IntentHandle } from './call.js';
import { lastAnswer } from './ending.js';
import { fingerprint, legacyFingerprint } from './fingerprint.js';
import type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './options.js';
import { mergeHeaders, resolveTarget, serializeBody } from './request-spec.js';

/**
 * What each of an intent's transports brings to the engine (`sendCall`): the request's
 * fingerprint, how one attempt is sent, and how a call the table ended well becomes the
 * caller's value. `request()` goes through ky, `run()` through your function, `fetch()`
 * through your fetch.
 */

/** The client's `headers()`, whose failure is the app's, told as such. */
function clientHeaders(h: IntentHandle, where: { intent: string; scope: string }): HeadersInit | undefined {
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

/** Largest body sent with `keepalive` (bytes). */
const KEEPALIVE_BODY = 32 * 1024;

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkMethod(method: unknown, where: { intent: string; scope: string }): string {
  if (typeof method !== 'string' || !METHOD.test(method))
    throw new InvalidArgumentError(
      `A request method must be an HTTP token such as "POST", got ${JSON.stringify(method)}.`,
      where,
    );
  return method.toUpperCase();
}

/** The 0.1.0 fingerprint, computed only when the record last seen carries one. */
function legacyIf(h: IntentHandle, compute: () => string): string | undefined {
  const stored = h.record.fingerprint;
  return stored !== undefined && !stored.startsWith('v2.') ? compute() : undefined;
}

export async function requestPlan<S extends StandardSchemaV1 | undefined>(
  h: IntentHandle,
  method: string,
  path: string,
  options: RequestOptions<S>,
): Promise<CallPlan<ReadAnswer, IntentResponse<DataOf<S>>>> {
  const { ctx } = h;
  const where = { intent: h.name, scope: h.scope };
  const upper = checkMethod(method, where);
  const target = resolveTarget(ctx.baseUrl, path, where);
  const body = serializeBody(options.json, options.body, where);
  const headers = mergeHeaders([clientHeaders(h, where), options.headers], where);
  if (options.json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  // A request without the key is not idempotent at the server: it is sent once, never retried.
  const keyed = options.sendKey === true || ctx.profile.keyedMethods.includes(upper);
  if (keyed) headers.set(ctx.profile.header, ctx.profile.encodeKey(h.key));
  const http: HttpTarget = { method: upper, url: target.url, headers, body };
  // Chromium refuses keepalive bodies past 64 KB in flight per page: only small ones, in UTF-16 units × 3 bytes at most.
  if (ctx.keepalive && (body?.length ?? 0) * 3 <= KEEPALIVE_BODY) http.keepalive = true;
  const sender: HttpSender = ctx;
  return {
    fingerprint: fingerprint({ method: upper, path: target.path, body: body ?? null }),
    legacyFingerprint: legacyIf(h, () => legacyFingerprint(upper, target.url, options.json, options.body)),
    signal: options.signal,
    method: upper,
    url: target.url,
    attempt: async (_n, timeout, signal) => {
      const report = await httpAttempt(sender, http, timeout, signal);
      // No answer with keepalive may be the browser's quota: the next attempt goes without.
      if (report.outcome === 'no_answer') http.keepalive = false;
      if (report.follow) http.url = report.follow;
      else if (!keyed) report.final = true;
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

export async function runPlan<T>(
  h: IntentHandle,
  fn: (context: RunContext) => Promise<T>,
  options: RunOptions,
): Promise<CallPlan<T, T>> {
  const { ctx } = h;
  const where = { intent: h.name, scope: h.scope };
  if (typeof fn !== 'function') throw new InvalidArgumentError('run() needs a function that sends the request.', where);
  const request = serializeBody(options.request ?? null, undefined, where)!;
  const headers = { [ctx.profile.header]: ctx.profile.encodeKey(h.key) };
  return {
    fingerprint: fingerprint({ method: 'RUN', path: h.name, body: request }),
    legacyFingerprint: legacyIf(h, () => legacyFingerprint('RUN', h.name, options.request ?? null, undefined)),
    signal: options.signal,
    method: 'RUN',
    url: h.name,
    attempt: async (attempt, timeout, parent) => {
      const bounded = withTimeout(parent, timeout);
      // The last answer through the context's fetch: a parsed body does not hide its status.
      let seen: Response | undefined;
      const fetch = async (input: string | URL | Request, init: RequestInit = {}) => {
        const sent = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
        for (const [name, value] of Object.entries(headers)) sent.set(name, value);
        const response = await ctx.fetch(input, { ...init, headers: sent, signal: bounded.signal });
        seen = response;
        return response;
      };
      try {
        // The value's own answer (a Response's body) is read within the attempt's bound too.
        return await bounded.race(
          Promise.resolve()
            .then(() => fn({ key: h.key, headers: { ...headers }, attempt, signal: bounded.signal, fetch }))
            .then(async (value) => {
              if (value instanceof Response || !seen || seen.ok) return reportValue(value, ctx.profile);
              const body = seen.bodyUsed ? undefined : (await readCopy(seen)).body;
              return answerReport(ctx.profile, { status: seen.status, headers: seen.headers, body }, value);
            }),
        );
      } catch (error) {
        if (bounded.signal.aborted)
          return { outcome: 'no_answer', replayed: false, sent: true, error: bounded.signal.reason };
        return reportThrown(error, ctx.profile, options.classify);
      } finally {
        bounded.clear();
      }
    },
    finish: (verdict, end, context) => {
      const { error } = end.last;
      if (verdict.result === 'ok') return end.last.value as T;
      const answer = lastAnswer(end);
      if (verdict.result === 'key_reused')
        throw new KeyReusedError(answer ?? { status: 0, body: undefined }, { ...context, cause: error });
      if (answer) throw new HttpError({ ...answer, replayed: end.last.replayed }, { ...context, cause: error });
      throw new TransportError({ ...context, cause: error });
    },
  };
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

export async function fetchPlan(
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
