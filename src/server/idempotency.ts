/**
 * The HTTP half over the Fetch API (`Request` → `Response`), per
 * draft-ietf-httpapi-idempotency-key-header. Order of checks, the contract mock's: key
 * missing or invalid (400) → another operation or request under the key (422, also while
 * the first runs) → in progress (409 + Retry-After) → complete (replay, marked) → claim the
 * key, run the handler in the key's transaction, store its answer, commit, answer.
 */
import { InvalidArgumentError, StoreError } from '../errors.js';
import { receivedFingerprint } from '../intent/fingerprint.js';
import { readKeyHeader } from '../mock/key-header.js';
import { PROBLEM_TYPES, type Problem, problemResponse } from '../mock/problem.js';
import { compilePath, type RouteResult } from '../mock/routes.js';
import { checkClaim } from './once.js';
import { type IdempotencyOptions, type ResolvedOptions, resolveOptions } from './options.js';
import type { Execution, StoredAnswer } from './store.js';
import { Unsettled } from './unsettled.js';

/** What a handler answers: `{ status, headers, body }` (a string body is text, anything else JSON) or a `Response`. */
export type Answer = RouteResult | Response;

/** What a handler receives. */
export interface HandlerContext<Tx> {
  /** The transaction the key row lives in: write the effect here, so that it commits with the key. */
  tx: Tx;
  /** The request as received; its body is unread (`text` and `json` hold it). */
  request: Request;
  /** The body parsed as JSON, or `undefined` when it is empty or not JSON. */
  json: unknown;
  text: string;
  /** The decoded idempotency key. */
  key: string;
  scope: string;
  /** Values of the route's `:name` segments. */
  params: Record<string, string>;
  /** `METHOD /route`, what the key is bound to. */
  operation: string;
}

/**
 * Performs the effect of one request, once per key. Its answer — errors included — is
 * stored with the key and replayed byte for byte; when it throws, nothing is stored.
 */
export type IdempotentHandler<Tx> = (context: HandlerContext<Tx>) => Answer | Promise<Answer>;

/**
 * How a request on a configured route ended: `ran` (the handler ran and committed),
 * `replayed`, `in_progress` (409), `mismatch` (422), `bad_key` (400), `too_large` (413),
 * `threw` (the handler or the store threw: nothing committed).
 */
export type RequestOutcome = 'ran' | 'replayed' | 'in_progress' | 'mismatch' | 'bad_key' | 'too_large' | 'threw';

/** What `onRequest` hears once per request: for replay rates, 409s and 422s per operation. */
export interface RequestEvent {
  operation: string;
  outcome: RequestOutcome;
  /** The status answered; `undefined` when it threw. */
  status: number | undefined;
  /** The request's scope, once known. */
  scope: string | undefined;
  /** Time to the answer (the body not yet sent), in ms. */
  ms?: number;
}

/** How a request reaches a handler: the operation it is bound to, and the route's params. */
export interface Routed {
  /** `METHOD /route`, e.g. `POST /payments/:id`. */
  operation: string;
  params?: Record<string, string>;
}

export interface Idempotency<Tx> {
  /**
   * A Fetch handler for one route (`'POST /payments/:id'`, relative to `basePath`):
   * another method or path is a 404.
   * @example app.post('/payments', (c) => payments(c.req.raw));
   */
  route(spec: string, handler: IdempotentHandler<Tx>): (request: Request) => Promise<Response>;
  /** Answers a request that a framework has already routed (what the adapters call). */
  handle(request: Request, routed: Routed, handler: IdempotentHandler<Tx>): Promise<Response>;
}

const problem = (fields: Problem, headers?: HeadersInit) => problemResponse(fields, headers);

/** A handler's answer as stored: status, the headers chosen, the body's bytes. */
async function toStored(answer: Answer, storeHeader: (name: string) => boolean): Promise<[StoredAnswer, Headers]> {
  let status: number;
  let headers: Headers;
  let body: Uint8Array;
  if (answer instanceof Response) {
    status = answer.status;
    headers = new Headers(answer.headers);
    body = new Uint8Array(await answer.arrayBuffer());
  } else {
    if (answer === null || typeof answer !== 'object')
      throw new InvalidArgumentError('An idempotent handler must answer { status, headers, body } or a Response.');
    status = answer.status ?? 200;
    headers = new Headers(stringHeaders(answer.headers));
    let text = '';
    if (typeof answer.body === 'string') {
      text = answer.body;
      if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    } else if (answer.body !== undefined) {
      const json: string | undefined = JSON.stringify(answer.body);
      // A function or a symbol has no JSON: storing "" as its answer would replay nothing forever.
      if (json === undefined)
        throw new InvalidArgumentError(
          `An idempotent handler answered a ${typeof answer.body} body; it must be a string or JSON.`,
        );
      text = json;
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
    body = new TextEncoder().encode(text);
  }
  if (!Number.isInteger(status) || status < 200 || status > 599)
    throw new InvalidArgumentError(`An idempotent handler answered status ${status}; it must be 200 to 599.`);
  const stored = [...headers].filter(([name]) => storeHeader(name));
  return [{ status, headers: stored, body }, headers];
}

/** The handler's headers, refused unless every value is a string (`new Headers` would store `[object Object]`). */
function stringHeaders(init: HeadersInit | undefined): HeadersInit | undefined {
  if (init === undefined || init instanceof Headers) return init;
  const values = Array.isArray(init) ? init.map((pair) => pair?.[1]) : Object.values(init as object);
  if (values.some((value) => typeof value !== 'string'))
    throw new InvalidArgumentError('An idempotent handler answered a header whose value is not a string.');
  return init;
}

const NULL_BODY = new Set([204, 205, 304]);
const decoder = new TextDecoder();

/** The body's bytes, or `undefined` as soon as more than `max` arrive (the rest is not read). */
async function readAtMost(request: Request, max: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      // Not awaited: a cancelled branch of a tee (a clone) settles only when the other one does.
      reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return all;
}

function toResponse(stored: StoredAnswer, headers: HeadersInit): Response {
  return new Response(NULL_BODY.has(stored.status) ? null : stored.body.slice(), { status: stored.status, headers });
}

/**
 * Create the server half over a key store.
 *
 * @example
 * const idempotency = createIdempotency({ store: new MemoryKeyStore(), scope: (r) => r.headers.get('x-account') ?? '' });
 * const payments = idempotency.route('POST /payments', async ({ json, tx }) => ({ status: 201, body: { id: 'pay_1' } }));
 * const response = await payments(request);
 */
export function createIdempotency<Tx>(options: IdempotencyOptions<Tx>): Idempotency<Tx> {
  const config: ResolvedOptions<Tx> = resolveOptions(options);
  const name = config.header;

  /** The path and query after `basePath`, with its leading `/`; `undefined` outside it. */
  function relative(url: URL): string | undefined {
    const { pathname } = url;
    if (config.basePath === '') return pathname + url.search;
    if (pathname !== config.basePath && !pathname.startsWith(`${config.basePath}/`)) return undefined;
    return (pathname.slice(config.basePath.length) || '/') + url.search;
  }

  async function handle(request: Request, routed: Routed, handler: IdempotentHandler<Tx>): Promise<Response> {
    const started = performance.now();
    const seen: { outcome: RequestOutcome; scope?: string } = { outcome: 'threw' };
    let status: number | undefined;
    try {
      const response = await answer(request, routed, handler, seen);
      status = response.status;
      return response;
    } finally {
      if (config.onRequest) {
        const event: RequestEvent = { operation: routed.operation, outcome: seen.outcome, status, scope: seen.scope };
        event.ms = performance.now() - started;
        try {
          config.onRequest(event);
        } catch {
          // An observer never changes an answer.
        }
      }
    }
  }

  async function answer(
    request: Request,
    routed: Routed,
    handler: IdempotentHandler<Tx>,
    seen: { outcome: RequestOutcome; scope?: string },
  ): Promise<Response> {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    const raw = request.headers.get(name);
    if (raw === null) {
      seen.outcome = 'bad_key';
      const detail = `${method} requests to this route must carry an ${name} header.`;
      return problem({ type: PROBLEM_TYPES.keyMissing, title: `${name} is missing`, status: 400, detail });
    }
    const reading = readKeyHeader(raw, config.keyFormat, config.maxKeyLength);
    if (!reading.ok) {
      seen.outcome = 'bad_key';
      return problem({
        type: PROBLEM_TYPES.keyInvalid,
        title: `${name} is invalid`,
        status: 400,
        detail: reading.reason,
      });
    }
    const length = Number(request.headers.get('content-length') ?? 0);
    // Read from the request itself (a clone tees the stream: the most of this layer's CPU);
    // the handler gets a fresh Request over the bytes, if it asks for one.
    const bytes = length > config.maxBodyBytes ? undefined : await readAtMost(request, config.maxBodyBytes);
    if (!bytes) {
      seen.outcome = 'too_large';
      const detail = `The body is larger than ${config.maxBodyBytes} bytes.`;
      return problem({ type: PROBLEM_TYPES.tooLarge, title: 'Content Too Large', status: 413, detail });
    }
    const text = decoder.decode(bytes);
    const scope = await config.scope(request);
    seen.scope = scope;
    const path = relative(url) ?? url.pathname + url.search;
    const claim = checkClaim({
      scope,
      key: reading.key,
      operation: routed.operation,
      fingerprint: receivedFingerprint(method, path, text),
    });
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    let firstHeaders: Headers | undefined;
    let execution: Execution;
    try {
      execution = checkedExecution(
        await config.store.execute(claim, async (tx) => {
          const params = routed.params ?? {};
          let unread: Request | undefined;
          const context = {
            tx,
            get request() {
              // From the URL and parts, not from the read request: some Request classes
              // (happy-dom's, under MSW) clone the input's consumed body before taking the new one.
              unread ??=
                request.body === null
                  ? new Request(request)
                  : new Request(request.url, {
                      method: request.method,
                      headers: request.headers,
                      body: bytes as Uint8Array<ArrayBuffer>,
                      signal: request.signal,
                    });
              return unread;
            },
            json,
            text,
            key: reading.key,
            scope,
            params,
            operation: routed.operation,
          };
          const [stored, headers] = await toStored(await handler(context), config.storeHeader);
          firstHeaders = headers;
          return stored;
        }),
        firstHeaders !== undefined,
      );
    } catch (error) {
      if (!(error instanceof Unsettled)) throw error;
      // Rolled back, nothing stored: answered as a held key (see unsettled.ts).
      seen.outcome = error.reason === 'mismatch' ? 'mismatch' : 'in_progress';
      return error.reason === 'mismatch' ? mismatch(error.detail) : inProgress(error.retryAfter, error.detail);
    }
    seen.outcome = execution.outcome;
    switch (execution.outcome) {
      case 'ran':
        // The body is the stored bytes: the replay will send exactly these.
        return toResponse(execution.answer, firstHeaders ?? execution.answer.headers);
      case 'replayed': {
        const headers = new Headers(execution.answer.headers);
        headers.set(config.replayHeader, 'true');
        return toResponse(execution.answer, headers);
      }
      case 'in_progress':
        return inProgress();
      case 'mismatch':
        return mismatch();
    }
  }

  /** 409 problem+json with `Retry-After`. */
  function inProgress(retryAfter = config.retryAfter, detail?: string): Response {
    const title = `A request is outstanding for this ${name}`;
    detail ??= `The first request with this ${name} is still being processed. Retry later with the same key.`;
    return problem(
      { type: PROBLEM_TYPES.inProgress, title, status: 409, detail },
      { 'Retry-After': String(retryAfter) },
    );
  }

  /** 422 problem+json, or what the profile reads as a mismatch when it does not read 422 so (Stripe: a 400). */
  function mismatch(
    detail = `This ${name} was already used with a different request (method, path or body). Use a new key for a new request.`,
  ): Response {
    const response = problem({ type: PROBLEM_TYPES.keyReused, title: `${name} is already used`, status: 422, detail });
    const probe = { status: 422, headers: new Headers(), body: {} };
    if (config.profile.classify(probe) === 'mismatch') return response;
    const body = JSON.stringify({ error: { type: 'idempotency_error', message: detail } });
    return new Response(body, { status: 400, headers: { 'content-type': 'application/json' } });
  }

  return {
    handle,
    route(spec, handler) {
      const [method, pattern, ...rest] = typeof spec === 'string' ? spec.trim().split(/\s+/) : [];
      if (!method || !pattern?.startsWith('/') || rest.length > 0 || typeof handler !== 'function')
        throw new InvalidArgumentError(
          `Invalid route "${String(spec)}": expected "METHOD /path" and a handler, e.g. "POST /payments".`,
        );
      const upper = method.toUpperCase();
      const match = compilePath(pattern);
      const operation = `${upper} ${pattern}`;
      return async (request) => {
        const path = relative(new URL(request.url));
        const params = path === undefined ? undefined : match(path.replace(/\?.*$/, ''));
        if (request.method.toUpperCase() !== upper || !params) {
          const detail = `No route for ${request.method} ${new URL(request.url).pathname}.`;
          return problem({ type: PROBLEM_TYPES.notFound, title: 'Not Found', status: 404, detail });
        }
        return handle(request, { operation, params }, handler);
      };
    },
  };
}

const OUTCOMES = new Set(['ran', 'replayed', 'in_progress', 'mismatch']);

/**
 * A key store's answer, checked before anything is sent: `ran` only when the handler ran to
 * its answer here, and a stored answer that can be sent as it is. A store that lies (a custom
 * one, a broken one) gets a `StoreError`, never a success for work that did not run.
 */
function checkedExecution(execution: Execution, ranHere: boolean): Execution {
  const lie = (what: string) =>
    new StoreError(`The key store's execute() ${what}: nothing is answered from it. Fix the store.`);
  if (!execution || typeof execution !== 'object' || !OUTCOMES.has(execution.outcome))
    throw lie(`answered ${JSON.stringify(execution)?.slice(0, 80)}, not an Execution`);
  if (execution.outcome === 'ran' && !ranHere) throw lie("answered 'ran' though the handler did not run to its answer");
  if (execution.outcome === 'ran' || execution.outcome === 'replayed') {
    const { answer } = execution;
    const valid =
      answer &&
      Number.isInteger(answer.status) &&
      answer.status >= 200 &&
      answer.status <= 599 &&
      Array.isArray(answer.headers) &&
      answer.headers.every((h) => Array.isArray(h) && typeof h[0] === 'string' && typeof h[1] === 'string') &&
      answer.body instanceof Uint8Array;
    if (!valid) throw lie(`answered '${execution.outcome}' with an answer that is not a stored answer`);
  }
  return execution;
}
