/**
 * The Express 5 adapter of oncely/server, over HTTP on 127.0.0.1: the oncely client (memory
 * store, ietf profile) against an Express app whose key store is PostgreSQL, with an
 * answer dropped after the commit — one effect, the retry's answer replayed. Also the
 * adapter on the memory store: body parsers, errors to next(), 409 and 422 on the wire.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { createClient } from '../src/client.js';
import { ietf } from '../src/profiles/profiles.js';
import { idempotent } from '../src/server/express.js';
import { createIdempotency, type IdempotentHandler, MemoryKeyStore } from '../src/server/index.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();

async function listen(app: express.Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

describe('the oncely client against an Express app on oncely/server (PostgreSQL)', () => {
  let url: string;

  beforeAll(async () => {
    const pool = db.pool({ max: 4 });
    const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
    await store.migrate();
    await db.admin.query(
      'CREATE TABLE payments (id bigserial PRIMARY KEY, key text NOT NULL, amount integer NOT NULL)',
    );
    const idempotency = createIdempotency({ store, scope: (request) => request.headers.get('x-account') ?? '' });
    const app = express();
    app.use(express.json());
    app.post(
      '/api/payments',
      idempotent(idempotency, async ({ tx, json, key }) => {
        const { amount } = json as { amount: number };
        const { rows } = await tx.query('INSERT INTO payments (key, amount) VALUES ($1, $2) RETURNING id', [
          key,
          amount,
        ]);
        return { status: 201, body: { id: Number(rows[0].id), amount } };
      }),
    );
    const server = await listen(app);
    closers.push(server.close);
    url = server.url;
  });

  it('a dropped answer and the retry: one payment row, the retry answered by the replay', async () => {
    let calls = 0;
    const client = createClient({
      baseUrl: `${url}/api/`,
      scope: 'acct-1',
      profile: ietf,
      store: new MemoryStore(),
      headers: { 'x-account': 'acct-1' },
      retry: { baseDelay: 10, maxDelay: 50 },
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        if (++calls === 1) {
          await response.arrayBuffer(); // the server answered and committed; the answer is lost
          throw new TypeError('fetch failed: socket hang up');
        }
        return response;
      },
    });
    const checkout = await client.intent('checkout:cart-1');
    const res = await checkout.post('payments', { json: { amount: 4200 } });
    expect(calls).toBe(2);
    expect(res.status).toBe(201);
    expect(res.replayed).toBe(true);
    expect(res.data).toEqual({ id: expect.any(Number), amount: 4200 });
    const rows = await db.admin.query('SELECT key, amount FROM payments WHERE key = $1', [res.key]);
    expect(rows.rows).toEqual([{ key: res.key, amount: 4200 }]);
    const keys = await db.admin.query('SELECT scope, operation FROM oncely_server_keys WHERE key = $1', [res.key]);
    expect(keys.rows).toEqual([{ scope: 'acct-1', operation: 'POST /api/payments' }]);
  });

  it('a second client sending the key of a committed payment gets the replay; another amount gets 422', async () => {
    const client = createClient({
      baseUrl: `${url}/api/`,
      scope: 'acct-2',
      store: new MemoryStore(),
      headers: { 'x-account': 'acct-2' },
    });
    const first = await (await client.intent('checkout:cart-2')).post('payments', { json: { amount: 1 } });
    const raw = (amount: number) =>
      fetch(`${url}/api/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-account': 'acct-2', 'idempotency-key': `"${first.key}"` },
        body: JSON.stringify({ amount }),
      });
    const replay = await raw(1);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(first.data);
    expect((await raw(2)).status).toBe(422);
    const rows = await db.admin.query('SELECT count(*)::int AS n FROM payments WHERE key = $1', [first.key]);
    expect(rows.rows[0].n).toBe(1);
  });
});

describe('the Express adapter on the memory store', () => {
  async function app(handler: IdempotentHandler<unknown>, parser?: express.RequestHandler) {
    const idempotency = createIdempotency({ store: new MemoryKeyStore() });
    const application = express();
    if (parser) application.use(parser);
    application.post('/orders/:id', idempotent(idempotency, handler));
    application.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).json({ error: error.message });
    });
    const server = await listen(application);
    closers.push(server.close);
    return server.url;
  }
  const send = (url: string, key: string | undefined, body: string) =>
    fetch(`${url}/orders/o1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body,
    });

  for (const [label, parser] of [
    ['no body parser', undefined],
    ['express.json()', express.json()],
    ['express.raw()', express.raw({ type: '*/*' })],
  ] as const) {
    it(`${label}: params and body reach the handler; replay, 422 and 400 on the wire`, async () => {
      let runs = 0;
      const url = await app(async ({ params, json, operation }) => {
        runs++;
        return { status: 201, headers: { 'x-op': operation }, body: { id: params.id, json } };
      }, parser);
      const first = await send(url, '"e1"', '{"b":1,"a":2}');
      expect(first.status).toBe(201);
      expect(first.headers.get('x-op')).toBe('POST /orders/:id');
      const firstBody = await first.text();
      expect(JSON.parse(firstBody)).toEqual({ id: 'o1', json: { a: 2, b: 1 } });
      const replay = await send(url, '"e1"', '{ "a": 2, "b": 1 }');
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.text()).toBe(firstBody);
      expect((await send(url, '"e1"', '{"a":3}')).status).toBe(422);
      const missing = await send(url, undefined, '{}');
      expect(missing.status).toBe(400);
      expect(missing.headers.get('content-type')).toBe('application/problem+json');
      expect(runs).toBe(1);
    });
  }

  it('409 with Retry-After on the wire while the first runs; a throwing handler goes to next() and stores nothing', async () => {
    let release!: () => void;
    let fail = true;
    let runs = 0;
    const url = await app(async () => {
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
    const thrown = await send(url, '"t1"', '{}');
    expect(thrown.status).toBe(500);
    expect(await thrown.json()).toEqual({ error: 'boom' });
    const first = send(url, '"t1"', '{}');
    while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
    const busy = await send(url, '"t1"', '{}');
    expect(busy.status).toBe(409);
    expect(busy.headers.get('retry-after')).toBe('1');
    release();
    expect((await first).status).toBe(201);
    expect(runs).toBe(2);
  });
});
