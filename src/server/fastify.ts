/**
 * `oncely/server/fastify`: the Fastify 5 adapter — a route handler over the Fetch core.
 * Fastify is an optional peer; nothing here imports it (the types are structural).
 */
import { canonicalJson } from '../intent/canonical-json.js';
import type { Idempotency, IdempotentHandler } from './idempotency.js';

/** What the adapter reads of Fastify's `request` (Fastify 5 fits). */
export interface FastifyRequestLike {
  method: string;
  /** Path and query as received. */
  url: string;
  protocol: string;
  host: string;
  headers: Record<string, string | string[] | undefined>;
  params?: unknown;
  /** Parsed by Fastify's content-type parser: JSON as an object, text as a string, or a Buffer. */
  body?: unknown;
  routeOptions: { url?: string };
}

/** What the adapter writes on Fastify's `reply`. */
export interface FastifyReplyLike {
  code(status: number): unknown;
  header(name: string, value: string | string[]): unknown;
  send(payload?: Uint8Array): unknown;
}

/**
 * A Fastify route handler that runs `handler` once per key. The operation is the method
 * and the route pattern (`POST /payments/:id`); a handler that throws goes to Fastify's
 * error handler with nothing stored.
 *
 * @example
 * app.post('/payments', idempotent(idempotency, async ({ tx, json }) => ({ status: 201, body: await pay(tx, json) })));
 */
export function idempotent<Tx>(
  idempotency: Idempotency<Tx>,
  handler: IdempotentHandler<Tx>,
): (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<FastifyReplyLike> {
  return async (request, reply) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    const { body } = request;
    const sent =
      body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array
        ? (body ?? undefined)
        : canonicalJson(body); // parsed JSON: its canonical form fingerprints as the bytes did
    const fetchRequest = new Request(`${request.protocol}://${request.host}${request.url}`, {
      method: request.method,
      headers,
      body: sent as BodyInit | undefined,
    });
    const route = request.routeOptions.url ?? request.url.replace(/\?.*$/, '');
    const params = (request.params ?? {}) as Record<string, string>;
    const response = await idempotency.handle(
      fetchRequest,
      { operation: `${request.method.toUpperCase()} ${route}`, params: { ...params } },
      handler,
    );
    reply.code(response.status);
    for (const [name, value] of response.headers) if (name !== 'set-cookie') reply.header(name, value);
    const cookies = response.headers.getSetCookie();
    if (cookies.length) reply.header('set-cookie', cookies.length === 1 ? cookies[0]! : cookies);
    return reply.send(new Uint8Array(await response.arrayBuffer())) as FastifyReplyLike;
  };
}
