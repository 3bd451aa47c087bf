/**
 * The contract server: a stateful idempotency-key server over the Fetch API
 * (`Request` → `Response`), per draft-ietf-httpapi-idempotency-key-header, with fault
 * injection and effect counting. Adapters: `mswHandlers` (`oncely/mock/msw`) and
 * `listenContractServer` (node:http, `oncely/node`).
 *
 * Order of checks for a request: CORS preflight → injected faults that answer in front of
 * the idempotency layer → no route (404) → then `oncely/server`'s own core on a memory
 * store: key missing / invalid (400) → another request under the key (422, even while in
 * progress) → in progress (409 + Retry-After) → completed (replay, `Idempotent-Replayed:
 * true`) → claim the key, run the effect, store the answer. The faults are layered around
 * that core (docs/mock.md), so the mock and the server cannot disagree on the protocol.
 */
import { ietf, type Profile } from '../profiles/profiles.js';
import { createIdempotency } from '../server/idempotency.js';
import { corsHeaders } from './cors.js';
import { createDefaultRoutes } from './default-routes.js';
import { type Fault, FaultQueue, type FaultSpec } from './faults.js';
import { requestFingerprint } from './fingerprint.js';
import { type KeyReading, readKeyHeader } from './key-header.js';
import { FaultyKeyStore, type RecordState } from './key-store.js';
import { Ledger, type RequestLogEntry } from './ledger.js';
import { type ContractServerOptions, resolveOptions } from './options.js';
import { PROBLEM_TYPES, problemResponse } from './problem.js';
import {
  compileRoutes,
  fromStoredResponse,
  type RouteHandler,
  type StoredResponse,
  toStoredResponse,
} from './routes.js';

/** A running contract server. Drive it with `fetch`, or mount it with an adapter. */
export interface ContractServer {
  /** Answer one request. Resolves to `Response.error()` when the connection "dies". */
  fetch(request: Request): Promise<Response>;
  /**
   * Queue faults for the next matching requests (see `FaultSpec`).
   * @example server.inject({ fault: 'drop-after-commit', times: 1, match: { method: 'POST', path: '/payments' } });
   */
  inject(...faults: FaultSpec[]): void;
  /** Times a route's effect ran for `key` (in `scope`, or over all scopes); all effects without `key`. GET/HEAD are not effects. */
  effects(key?: string, scope?: string): number;
  /** Requests that carried `key` (in `scope`, or over all scopes), whatever their answer. */
  attempts(key: string, scope?: string): number;
  /**
   * Whether one of the routes answers `method` on `path` (for a CORS preflight: any
   * method on `path`). Adapters use it to leave other requests to other handlers.
   */
  serves(method: string, path: string): boolean;
  /** True when no `routes` were given: the default routes serve every path. */
  readonly defaultRoutes: boolean;
  /** Where the server's record for `key` stands, or `undefined` when it has none (never seen, released, expired). */
  keyState(key: string, scope?: string): RecordState | undefined;
  /** Every request seen since creation or `reset()`, in arrival order. */
  readonly requests: readonly RequestLogEntry[];
  /** Injected faults not yet used up. */
  readonly pendingFaults: number;
  /** Forget everything: records, counts, log, queued faults, default resources. Releases hung requests. */
  reset(): void;
}

/** Per-request state while the server answers it. */
interface Exchange {
  request: Request;
  url: URL;
  method: string;
  scope: string;
  reading: KeyReading | undefined;
  key: string | undefined;
  fault: Fault | undefined;
  entry: RequestLogEntry;
  /** True once a `delay` or `hang` fault has been applied where it belongs. */
  faultApplied: boolean;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const isSuccess = (status: number): boolean => status >= 200 && status < 300;

const REPLAYED = 'Idempotent-Replayed';

/** Thrown from the core's handler by a `hang` released: the key rolls back, the client gets no answer. */
class Hung extends Error {}

/** Thrown from the core's handler for an answer `storeResponses: '2xx'` does not keep: the key rolls back. */
class NotStored extends Error {
  constructor(readonly stored: StoredResponse) {
    super('not stored');
  }
}

/**
 * Create a contract server.
 *
 * @example
 * const server = createContractServer({
 *   routes: { 'POST /payments': ({ json }) => ({ status: 201, body: { id: 'pay_1', ...(json as object) } }) },
 * });
 * const res = await server.fetch(new Request('https://api.test/payments', {
 *   method: 'POST', headers: { 'Idempotency-Key': '"k1"' }, body: '{"amount":100}',
 * }));
 * server.effects('k1'); // 1
 */
export function createContractServer(options: ContractServerOptions = {}): ContractServer {
  const config = resolveOptions(options);
  let nextId = 0;
  const defaults = options.routes ? undefined : createDefaultRoutes(options.generateId ?? (() => `id_${++nextId}`));
  const routes = compileRoutes(options.routes ?? defaults?.routes ?? {});
  const keys = new FaultyKeyStore({ retentionMs: config.retentionMs, now: config.now });
  /** The scope of each request in flight, computed once (a scope function may not be pure). */
  const scopes = new WeakMap<Request, string>();
  // The core takes whole seconds; another value is set on its 409s below.
  const coreRetryAfter = Number.isInteger(config.retryAfter) && config.retryAfter >= 0 ? config.retryAfter : 1;
  const profile: Profile = { ...ietf, name: 'oncely-mock', header: config.headerName, replayHeaders: [REPLAYED] };
  const core = createIdempotency({
    store: keys,
    profile,
    keyFormat: config.keyFormat,
    maxKeyLength: config.maxKeyLength,
    scope: (request) => scopes.get(request) ?? '',
    retryAfter: coreRetryAfter,
    maxBodyBytes: Number.POSITIVE_INFINITY,
  });
  const ledger = new Ledger();
  const faults = new FaultQueue();
  const cors =
    config.cors === false
      ? undefined
      : corsHeaders(config.cors, { keyHeader: config.headerName, scopeHeader: config.scopeHeader });
  /** Aborted by `reset()` to release hung requests. */
  let hangs = new AbortController();

  const name = config.headerName;

  const scopeHeader = (request: Request): string =>
    config.scopeHeader === undefined ? '' : (request.headers.get(config.scopeHeader) ?? '');

  /**
   * Requests held by a `hang`, kept strongly reachable: a Request's signal follows the
   * caller's through a weak reference, so an otherwise unreferenced hung Request (and
   * its signal) could be garbage-collected and never release its key.
   */
  const hung = new Set<Request>();

  /** Resolves when the client gives up (the request's signal aborts) or on `reset()`. */
  const released = (request: Request): Promise<void> => {
    const { signal } = request;
    if (signal.aborted || hangs.signal.aborted) return Promise.resolve();
    hung.add(request);
    const resetSignal = hangs.signal;
    return new Promise<void>((resolve) => {
      const done = () => {
        hung.delete(request);
        signal.removeEventListener('abort', done);
        resetSignal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      resetSignal.addEventListener('abort', done, { once: true });
    });
  };

  async function runRoute(
    ex: Exchange,
    handler: RouteHandler,
    params: Record<string, string>,
    text: string,
    request: Request,
  ) {
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    try {
      const result = await handler({
        request,
        json,
        text,
        params,
        key: ex.key,
        scope: ex.scope,
        url: ex.url,
      });
      if (!SAFE_METHODS.has(ex.method)) ledger.countEffect(ex.scope, ex.key);
      return await toStoredResponse(result);
    } catch (error) {
      const detail = `The route handler for ${ex.method} ${ex.url.pathname} threw: ${error instanceof Error ? error.message : String(error)}`;
      return toStoredResponse(
        problemResponse({ type: PROBLEM_TYPES.routeFailed, title: 'Internal Server Error', status: 500, detail }),
      );
    }
  }

  /** Run the effect without a key, applying delay and hang faults. */
  async function runKeyless(ex: Exchange, perform: () => Promise<StoredResponse>): Promise<Response> {
    const { fault } = ex;
    if (fault?.fault === 'hang') {
      ex.faultApplied = true;
      await released(ex.request);
      return Response.error();
    }
    const delay = fault?.fault === 'delay' ? fault : undefined;
    if (delay && delay.when !== 'after-commit') await sleep(delay.ms);
    const stored = await perform();
    if (delay && delay.when === 'after-commit') await sleep(delay.ms);
    ex.faultApplied = delay !== undefined;
    return fromStoredResponse(stored);
  }

  /**
   * Under a key, the server core decides (400, 422, 409, replay, claim); the faults act
   * inside its handler (delay, hang, a forced stored answer, `storeResponses: '2xx'`) and
   * around its answer (a late answer, a hold's `Retry-After`).
   */
  async function runKeyed(
    ex: Exchange,
    perform: (text: string, request: Request) => Promise<StoredResponse>,
  ): Promise<Response> {
    const { fault } = ex;
    const delay = fault?.fault === 'delay' ? fault : undefined;
    const operation = `${ex.method} ${ex.url.pathname}`;
    if (fault?.fault === 'in-progress' && ex.key !== undefined) {
      const text = await ex.request.clone().text();
      const fingerprint = await requestFingerprint(ex.method, ex.url, text);
      keys.hold({ scope: ex.scope, key: ex.key, operation, fingerprint }, fault.ms, fault.retryAfter);
    }
    let ranHere = false;
    let response: Response;
    try {
      response = await core.handle(ex.request, { operation }, async (context) => {
        ranHere = true;
        if (fault?.fault === 'hang') {
          ex.faultApplied = true;
          await released(ex.request);
          throw new Hung();
        }
        if (delay && delay.when !== 'after-commit') await sleep(delay.ms);
        // The core has read the body: its context holds a Request still unread, for the route.
        const stored = await perform(context.text, context.request);
        const forced = fault?.fault === 'status' && fault.store === true;
        if (!forced && config.storeResponses === '2xx' && !isSuccess(stored.status)) throw new NotStored(stored);
        return fromStoredResponse(stored);
      });
    } catch (error) {
      // Thrown from the handler: the core rolled the key back, as for a server that died.
      if (error instanceof Hung) return Response.error();
      if (!(error instanceof NotStored)) throw error;
      response = fromStoredResponse(error.stored);
    }
    if (ranHere) {
      if (delay && delay.when === 'after-commit') await sleep(delay.ms);
      ex.faultApplied = delay !== undefined;
    } else if (response.headers.get(REPLAYED) === 'true') ex.entry.replayed = true;
    else if (response.status === 409 && ex.key !== undefined) {
      const retryAfter =
        keys.heldRetryAfter(ex.scope, ex.key) ?? (coreRetryAfter === config.retryAfter ? undefined : config.retryAfter);
      if (retryAfter !== undefined) response.headers.set('Retry-After', String(retryAfter));
    }
    return response;
  }

  /** The answer before the wrapping faults (drop, late delay or hang) apply. */
  async function answer(ex: Exchange): Promise<Response> {
    const { fault } = ex;
    if (fault?.fault === 'fail-before-commit') {
      const status = fault.status ?? 503;
      const detail = 'Injected fault: the server failed before doing anything; a retry runs for real.';
      const headers = fault.retryAfter === undefined ? undefined : { 'Retry-After': String(fault.retryAfter) };
      return problemResponse({ type: PROBLEM_TYPES.injected, title: 'Injected failure', status, detail }, headers);
    }
    if (fault?.fault === 'status' && !fault.store) return fromStoredResponse(await toStoredResponse(fault));
    const storedFault = fault?.fault === 'status' ? fault : undefined;
    const route = routes.match(ex.method, ex.url.pathname);
    if (!route && !storedFault) {
      const detail = `No route for ${ex.method} ${ex.url.pathname}.`;
      return problemResponse({ type: PROBLEM_TYPES.notFound, title: 'Not Found', status: 404, detail });
    }
    const perform = (text: string, request: Request) =>
      storedFault || !route
        ? toStoredResponse(storedFault ?? {})
        : runRoute(ex, route.handler, route.params, text, request);
    if (ex.reading || config.requireKeyFor.has(ex.method)) return runKeyed(ex, perform);
    return runKeyless(ex, async () => perform(await ex.request.clone().text(), ex.request));
  }

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    // No await without a scope function: a request is logged in the same step it arrives.
    const scope = config.scope ? await config.scope(request) : scopeHeader(request);
    const entry: RequestLogEntry = {
      method,
      path: url.pathname,
      key: undefined,
      scope,
      status: null,
      replayed: false,
      fault: undefined,
    };
    if (method === 'OPTIONS' && cors) {
      ledger.requests.push({ ...entry, status: 204 });
      return new Response(null, { status: 204, headers: cors.preflight });
    }
    const raw = request.headers.get(name);
    const reading = raw === null ? undefined : readKeyHeader(raw, config.keyFormat, config.maxKeyLength);
    const key = reading?.ok ? reading.key : undefined;
    const fault = faults.take({ method, pathname: url.pathname, key });
    Object.assign(entry, { key, fault: fault?.fault });
    ledger.requests.push(entry);
    if (key !== undefined) ledger.countAttempt(scope, key);

    scopes.set(request, scope);
    const ex: Exchange = { request, url, method, scope, reading, key, fault, entry, faultApplied: false };
    let response = await answer(ex);
    if (fault?.fault === 'delay' && !ex.faultApplied) await sleep(fault.ms);
    if (fault?.fault === 'hang' && !ex.faultApplied) {
      await released(request);
      response = Response.error();
    }
    if (fault?.fault === 'drop-after-commit') response = Response.error();
    if (response.type === 'error') return response;

    entry.status = response.status;
    for (const [header, value] of Object.entries(cors?.common ?? {})) response.headers.set(header, value);
    if (key !== undefined && raw !== null) response.headers.set(name, raw);
    return response;
  }

  return {
    fetch: handle,
    inject(...specs) {
      for (const spec of specs) faults.add(spec);
    },
    serves(method, path) {
      const upper = method.toUpperCase();
      if (upper === 'OPTIONS' && cors) return routes.matchesPath(path);
      return routes.match(upper, path) !== undefined;
    },
    defaultRoutes: defaults !== undefined,
    effects: (key, scope) => ledger.effects(key, scope),
    attempts: (key, scope) => ledger.attempts(key, scope),
    keyState: (key, scope) => (scope === undefined ? keys.stateInAnyScope(key) : keys.state(scope, key)),
    get requests() {
      return ledger.requests;
    },
    get pendingFaults() {
      return faults.size;
    },
    reset() {
      hangs.abort();
      hangs = new AbortController();
      keys.clear();
      ledger.clear();
      faults.clear();
      defaults?.clear();
      nextId = 0;
    },
  };
}
