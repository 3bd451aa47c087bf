/**
 * Routes: the handlers that perform the *effect* behind the idempotency layer, and the
 * small path matcher they share with fault matching.
 */

/** What a route handler gets. */
export interface RouteContext {
  /** The request as received; its body is still unread. */
  request: Request;
  /** The body parsed as JSON, or `undefined` when it is empty or not JSON. */
  json: unknown;
  /** The body text (`''` when there is none). */
  text: string;
  /** Values of the `:name` segments of the route pattern. */
  params: Record<string, string>;
  /** The decoded idempotency key, or `undefined` when the request carried none. */
  key: string | undefined;
  /** The scope the key lives in (see `ContractServerOptions.scope`). */
  scope: string;
  url: URL;
}

/**
 * What a route handler answers: a plain description (a string `body` is sent as text,
 * anything else as JSON) or a ready `Response`.
 */
export interface RouteResult {
  /** @default 200 */
  status?: number;
  headers?: HeadersInit;
  body?: unknown;
}

/**
 * Performs the effect of one request. Each call that returns counts as one effect in
 * `server.effects()` (GET and HEAD excepted); a call that throws counts as no effect and
 * answers 500.
 *
 * @example
 * const createPayment: RouteHandler = async ({ json, key }) => ({ status: 201, body: { id: 'pay_1', key, ...(json as object) } });
 */
export type RouteHandler = (context: RouteContext) => RouteResult | Response | Promise<RouteResult | Response>;

/**
 * Route table: `'METHOD /path'` → handler. `METHOD` is an HTTP method or `*` (any); path
 * segments may be `:name` (one segment, captured in `params`) or a final `*` (the rest).
 * The first matching entry wins, in insertion order.
 *
 * @example
 * { 'POST /payments': createPayment, 'GET /payments/:id': getPayment, '* /admin/*': admin }
 */
export type Routes = Record<string, RouteHandler>;

/** A compiled path pattern: the params on a match, `undefined` otherwise. */
export type PathMatcher = (pathname: string) => Record<string, string> | undefined;

const segmentsOf = (path: string): string[] => path.split('/').filter((segment) => segment !== '');

/** Compile `/payments/:id` or `/files/*` into a matcher over URL pathnames. */
export function compilePath(pattern: string): PathMatcher {
  const parts = segmentsOf(pattern);
  return (pathname) => {
    const segments = segmentsOf(pathname);
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (part === '*' && i === parts.length - 1) return params;
      const segment = segments[i];
      if (segment === undefined) return undefined;
      if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(segment);
      else if (part !== segment) return undefined;
    }
    return segments.length === parts.length ? params : undefined;
  };
}

interface CompiledRoute {
  method: string;
  path: PathMatcher;
  handler: RouteHandler;
}

/** A route table compiled once: `match(method, pathname)` finds the handler. */
export function compileRoutes(routes: Routes): {
  match(method: string, pathname: string): { handler: RouteHandler; params: Record<string, string> } | undefined;
  /** Whether any route, whatever its method, serves `pathname`. */
  matchesPath(pathname: string): boolean;
} {
  const compiled: CompiledRoute[] = Object.entries(routes).map(([spec, handler]) => {
    const [method, path, ...rest] = spec.trim().split(/\s+/);
    if (!method || !path?.startsWith('/') || rest.length > 0) {
      throw new TypeError(`Invalid route "${spec}": expected "METHOD /path", e.g. "POST /payments".`);
    }
    return { method: method.toUpperCase(), path: compilePath(path), handler };
  });
  return {
    match(method, pathname) {
      for (const route of compiled) {
        if (route.method !== '*' && route.method !== method) continue;
        const params = route.path(pathname);
        if (params) return { handler: route.handler, params };
      }
      return undefined;
    },
    matchesPath: (pathname) => compiled.some((route) => route.path(pathname) !== undefined),
  };
}

/** A response as the server stores it, to replay it byte for byte. */
export interface StoredResponse {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

/** Turn what a route answered into a storable response. */
export async function toStoredResponse(result: RouteResult | Response): Promise<StoredResponse> {
  if (result instanceof Response) {
    return { status: result.status, headers: [...result.headers], body: new Uint8Array(await result.arrayBuffer()) };
  }
  const headers = new Headers(result.headers);
  let text = '';
  if (typeof result.body === 'string') {
    text = result.body;
    if (!headers.has('Content-Type')) headers.set('Content-Type', 'text/plain;charset=UTF-8');
  } else if (result.body !== undefined) {
    text = JSON.stringify(result.body);
    if (!headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
  }
  return { status: result.status ?? 200, headers: [...headers], body: new TextEncoder().encode(text) };
}

/** Build a fresh `Response` from a stored one, with extra headers on top. */
export function fromStoredResponse(stored: StoredResponse, extra: HeadersInit = {}): Response {
  const headers = new Headers(stored.headers);
  for (const [name, value] of new Headers(extra)) headers.set(name, value);
  const nullBody = stored.status === 204 || stored.status === 205 || stored.status === 304;
  return new Response(nullBody ? null : stored.body.slice(), { status: stored.status, headers });
}
