/**
 * `oncely/server/express`: the Express 5 adapter — a request handler over the Fetch core.
 * Express is an optional peer; nothing here imports it (the types are structural).
 */
import { canonicalJson } from '../intent/canonical-json.js';
import type { Idempotency, IdempotentHandler } from './idempotency.js';

/** What the adapter reads of Express's `req` (Express 5 fits). */
export interface ExpressRequestLike extends AsyncIterable<Uint8Array | string> {
  method: string;
  originalUrl: string;
  protocol: string;
  headers: Record<string, string | string[] | undefined>;
  baseUrl: string;
  route?: { path: unknown };
  params?: Record<string, string>;
  /** Set by a body parser: a Buffer (`express.raw()`), a string (`express.text()`) or parsed JSON (`express.json()`). */
  body?: unknown;
  get(name: string): string | undefined;
  /** Node's `Readable#resume`: discards the rest of a body the handler will not read. */
  resume?(): unknown;
}

/** What the adapter writes on Express's `res`. */
export interface ExpressResponseLike {
  status(code: number): unknown;
  setHeader(name: string, value: string | string[]): unknown;
  end(chunk?: Uint8Array): unknown;
}

export type ExpressHandler = (
  req: ExpressRequestLike,
  res: ExpressResponseLike,
  next: (error?: unknown) => void,
) => Promise<void>;

/**
 * The body as a parser left it — after `express.json()` its canonical JSON, which
 * fingerprints the same — or else the request itself as a stream read on demand, so that
 * the core stops at `maxBodyBytes` (a 413) instead of this reading a body of any size first.
 */
function bodyOf(req: ExpressRequestLike): Uint8Array | string | ReadableStream<Uint8Array> | undefined {
  const { body } = req;
  if (body instanceof Uint8Array || typeof body === 'string') return body;
  if (body !== undefined && body !== null && typeof body === 'object') return canonicalJson(body);
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  const chunks = req[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await chunks.next();
        if (done) controller.close();
        else controller.enqueue(typeof value === 'string' ? new TextEncoder().encode(value) : value);
      },
      // Past the limit (a 413): left unread here; ending the iterator would destroy the
      // socket before the 413 leaves. The handler below discards the rest once it answered.
      cancel() {},
    },
    { highWaterMark: 0 },
  );
}

/** The Fetch `Request` for an Express request. */
export async function toFetchRequest(req: ExpressRequestLike): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const url = `${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`;
  const body = bodyOf(req);
  // `duplex: 'half'` lets a stream be a request body (Node's fetch requires it).
  return new Request(url, { method: req.method, headers, body, duplex: 'half' } as RequestInit);
}

/**
 * An Express handler that runs `handler` once per key. The operation is the method and the
 * route as Express matched it (`POST /api/payments/:id`); a handler that throws goes to
 * `next(error)` with nothing stored.
 *
 * @example
 * app.post('/payments', idempotent(idempotency, async ({ tx, json }) => ({ status: 201, body: await pay(tx, json) })));
 */
export function idempotent<Tx>(idempotency: Idempotency<Tx>, handler: IdempotentHandler<Tx>): ExpressHandler {
  return async (req, res, next) => {
    try {
      const route = typeof req.route?.path === 'string' ? req.route.path : req.originalUrl.replace(/\?.*$/, '');
      const operation = `${req.method.toUpperCase()} ${req.baseUrl}${route}`;
      const response = await idempotency.handle(
        await toFetchRequest(req),
        { operation, params: { ...req.params } },
        handler,
      );
      res.status(response.status);
      for (const [name, value] of response.headers) if (name !== 'set-cookie') res.setHeader(name, value);
      const cookies = response.headers.getSetCookie();
      if (cookies.length) res.setHeader('set-cookie', cookies.length === 1 ? cookies[0]! : cookies);
      res.end(new Uint8Array(await response.arrayBuffer()));
      // A body not read to its end (a 413) is discarded as it comes, as Node does for a body
      // nobody read: left unread, the kernel would reset the connection under the answer.
      req.resume?.();
    } catch (error) {
      next(error);
    }
  };
}
