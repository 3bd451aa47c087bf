/** The contract server core through `server.fetch`, no adapter: what adapters cannot show. */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { type ContractServerOptions, createContractServer, PROBLEM_TYPES } from '../src/mock/index.js';

const post = (path: string, key: string | undefined, body: unknown = {}, init: RequestInit = {}) =>
  new Request(`https://api.test${path}`, {
    method: 'POST',
    ...init,
    headers: { ...(key === undefined ? {} : { 'Idempotency-Key': `"${key}"` }), ...(init.headers as object) },
    body: JSON.stringify(body),
  });

afterEach(() => {
  vi.useRealTimers();
});

describe('core', () => {
  test('drop-after-commit resolves to Response.error()', async () => {
    const server = createContractServer();
    server.inject({ fault: 'drop-after-commit' });
    const res = await server.fetch(post('/orders', 'k1'));
    expect(res.type).toBe('error');
    expect(server.effects('k1')).toBe(1);
  });

  test('the default 409 carries Retry-After: 1', async () => {
    const server = createContractServer();
    server.inject({ fault: 'in-progress', ms: 1_000 });
    const res = await server.fetch(post('/orders', 'k1'));
    expect(res.status).toBe(409);
    expect(res.headers.get('Retry-After')).toBe('1');
    expect((await res.json()).type).toBe(PROBLEM_TYPES.inProgress);
  });

  test('a route that throws answers 500 problem+json, counts no effect, and the 500 is stored', async () => {
    const server = createContractServer({
      routes: {
        'POST /boom': () => {
          throw new Error('database down');
        },
      },
    });
    const res = await server.fetch(post('/boom', 'k1'));
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({
      type: PROBLEM_TYPES.routeFailed,
      detail: expect.stringContaining('database down'),
    });
    expect(server.effects()).toBe(0);
    const replay = await server.fetch(post('/boom', 'k1'));
    expect(replay.status).toBe(500);
    expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
  });

  test('an unknown route is a 404 with no record and no effect', async () => {
    const server = createContractServer({ routes: { 'POST /payments': () => ({ status: 201 }) } });
    const res = await server.fetch(post('/nope', 'k1'));
    expect(res.status).toBe(404);
    expect(res.headers.get('Content-Type')).toBe('application/problem+json');
    expect(server.keyState('k1')).toBeUndefined();
    expect(server.effects()).toBe(0);
  });

  test('route params, and GET is not an effect', async () => {
    const routes: ContractServerOptions['routes'] = {
      'GET /orders/:id': ({ params }) => ({ body: { id: params.id } }),
      'POST /orders/:id/items/*': ({ params, url }) => ({ status: 201, body: { id: params.id, path: url.pathname } }),
    };
    const server = createContractServer({ routes });
    const read = await server.fetch(new Request('https://api.test/orders/o%201'));
    expect(await read.json()).toEqual({ id: 'o 1' });
    const added = await server.fetch(post('/orders/o1/items/a/b', 'k1'));
    expect(await added.json()).toEqual({ id: 'o1', path: '/orders/o1/items/a/b' });
    expect(server.effects()).toBe(1);
  });

  test('default routes: PATCH creates then merges', async () => {
    const server = createContractServer();
    const patch = (key: string, body: unknown) => post('/carts/c1', key, body, { method: 'PATCH' });
    const created = await server.fetch(patch('p1', { items: 1 }));
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({ id: 'c1', items: 1 });
    const merged = await server.fetch(patch('p2', { note: 'x' }));
    expect(merged.status).toBe(200);
    expect(await merged.json()).toEqual({ id: 'c1', items: 1, note: 'x' });
  });

  test('headerName and requireKeyFor are configurable', async () => {
    const server = createContractServer({ headerName: 'X-Request-Key', requireKeyFor: ['POST'] });
    const missing = await server.fetch(post('/orders', undefined));
    expect(missing.status).toBe(400);
    expect((await missing.json()).title).toBe('X-Request-Key is missing');
    // The standard header is not the configured one: still missing.
    expect((await server.fetch(post('/orders', 'k1'))).status).toBe(400);
    const keyed = await server.fetch(post('/orders', undefined, {}, { headers: { 'X-Request-Key': '"k1"' } }));
    expect(keyed.status).toBe(201);
    expect(server.attempts('k1')).toBe(1);
    const patch = await server.fetch(post('/orders/x', undefined, {}, { method: 'PATCH' }));
    expect(patch.status).toBe(201);
    expect(server.effects()).toBe(2);
    expect(server.effects('k1')).toBe(1);
  });

  test('reset() forgets records, counts, log and faults, restarts ids, and releases hung requests', async () => {
    const server = createContractServer();
    server.inject({ fault: 'hang' }, { fault: 'drop-after-commit', times: 5 });
    const hung = server.fetch(post('/orders', 'k1'));
    await vi.waitFor(() => expect(server.keyState('k1')).toBe('in_progress'));
    expect((await server.fetch(post('/orders', 'k2'))).type).toBe('error');
    server.reset();
    expect((await hung).type).toBe('error');
    expect(server.keyState('k1')).toBeUndefined();
    expect(server.keyState('k2')).toBeUndefined();
    expect([server.effects(), server.attempts('k2'), server.requests.length, server.pendingFaults]).toEqual([
      0, 0, 0, 0,
    ]);
    const res = await server.fetch(post('/orders', 'k2'));
    expect(res.status).toBe(201);
    expect((await res.json()).id).toBe('id_1');
  });

  test('invalid routes, faults and options are rejected up front', () => {
    expect(() => createContractServer({ routes: { payments: () => ({}) } })).toThrow(TypeError);
    expect(() => createContractServer({ retentionMs: 0 })).toThrow(TypeError);
    const server = createContractServer();
    expect(() => server.inject({ fault: 'respond', times: 0 })).toThrow(TypeError);
    expect(() => server.inject({ fault: 'delay', ms: -1 })).toThrow(TypeError);
    expect(server.pendingFaults).toBe(0);
  });

  test('fake timers: a delay waits on setTimeout and the default clock follows the fake Date', async () => {
    vi.useFakeTimers({ now: 0 });
    const server = createContractServer();
    server.inject({ fault: 'delay', ms: 60_000 });
    let done = false;
    const delayed = server.fetch(post('/orders', 'k1')).then((res) => {
      done = true;
      return res;
    });
    await vi.waitFor(() => expect(server.keyState('k1')).toBe('in_progress'));
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await delayed).status).toBe(201);

    vi.setSystemTime(24 * 3_600_000 - 1);
    expect(server.keyState('k1')).toBe('completed');
    vi.setSystemTime(24 * 3_600_000 + 60_000);
    expect(server.keyState('k1')).toBeUndefined();
    expect((await server.fetch(post('/orders', 'k1'))).headers.get('Idempotent-Replayed')).toBeNull();
    expect(server.effects('k1')).toBe(2);
  });
});
