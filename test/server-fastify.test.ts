/**
 * The Fastify 5 adapter of oncely/server on the memory store, through Fastify's own request
 * pipeline (its JSON parser, route params, error handler) and over HTTP with the oncely client.
 */
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/client.js';
import { idempotent } from '../src/server/fastify.js';
import {
  createIdempotency,
  type IdempotentHandler,
  MemoryKeyStore,
  type MemoryTransaction,
} from '../src/server/index.js';
import { MemoryStore } from '../src/store/memory-store.js';

const apps: { close(): Promise<unknown> }[] = [];
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

function build(handler: IdempotentHandler<MemoryTransaction>) {
  const app = Fastify();
  apps.push(app);
  const idempotency = createIdempotency({ store: new MemoryKeyStore() });
  app.post('/orders/:id', idempotent(idempotency, handler));
  return app;
}

const send = (app: ReturnType<typeof build>, key: string | undefined, payload: string) =>
  app.inject({
    method: 'POST',
    url: '/orders/o1?x=1',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    payload,
  });

describe('the Fastify adapter', () => {
  it('runs once; the replay is byte for byte and marked; 422 on another body; 400 without a key', async () => {
    const ledger: unknown[] = [];
    const app = build(async ({ tx, json, params, operation }) => {
      tx.onCommit(() => ledger.push(json));
      return { status: 201, headers: { 'x-op': operation, 'set-cookie': 's=1' }, body: { id: params.id, json } };
    });
    const first = await send(app, '"f1"', '{"b":1,"a":2}');
    expect(first.statusCode).toBe(201);
    expect(first.headers['x-op']).toBe('POST /orders/:id');
    expect(first.headers['set-cookie']).toBe('s=1');
    expect(JSON.parse(first.body)).toEqual({ id: 'o1', json: { a: 2, b: 1 } });
    const replay = await send(app, '"f1"', '{ "a": 2, "b": 1 }');
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['set-cookie']).toBeUndefined();
    expect(replay.rawPayload).toEqual(first.rawPayload);
    const other = await send(app, '"f1"', '{"a":3}');
    expect(other.statusCode).toBe(422);
    expect(other.headers['content-type']).toBe('application/problem+json');
    expect((await send(app, undefined, '{}')).statusCode).toBe(400);
    expect((await send(app, 'bare', '{}')).statusCode).toBe(400);
    expect(ledger).toHaveLength(1);
  });

  it('409 + Retry-After while the first runs; a throwing handler reaches the error handler and stores nothing', async () => {
    let release!: () => void;
    let fail = true;
    let runs = 0;
    const app = build(async () => {
      runs++;
      if (fail) {
        fail = false;
        throw new Error('boom');
      }
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return { status: 201, body: { ok: true } };
    });
    expect((await send(app, '"f2"', '{}')).statusCode).toBe(500);
    const first = send(app, '"f2"', '{}');
    while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
    const busy = await send(app, '"f2"', '{}');
    expect(busy.statusCode).toBe(409);
    expect(busy.headers['retry-after']).toBe('1');
    release();
    expect((await first).statusCode).toBe(201);
    expect(runs).toBe(2);
  });

  it('the oncely client over HTTP: an answer lost after the commit, the retry replayed, one effect', async () => {
    let effects = 0;
    const app = build(async ({ tx }) => {
      tx.onCommit(() => effects++);
      return { status: 201, body: { paid: true } };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    let calls = 0;
    const client = createClient({
      baseUrl: `${url}/`,
      scope: 's',
      store: new MemoryStore(),
      retry: { baseDelay: 10, maxDelay: 50 },
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (++calls === 1) throw new TypeError('fetch failed: socket hang up');
        return response;
      },
    });
    const res = await (await client.intent('order:o1')).post('orders/o1', { json: { amount: 1 } });
    expect([res.status, res.replayed, calls, effects]).toEqual([201, true, 2, 1]);
  });
});
