/**
 * The contract server's idempotency contract, driven with plain `fetch` through both
 * adapters: MSW (setupServer) and node:http (real HTTP on 127.0.0.1).
 */
import { setupServer } from 'msw/node';
import { describe, expect, onTestFinished, test, vi } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import {
  type ContractServer,
  type ContractServerOptions,
  createContractServer,
  serializeSfString,
} from '../src/mock/index.js';
import { mswHandlers } from '../src/mock/msw.js';

type Mount = (contract: ContractServer) => Promise<{ baseUrl: string; unmount: () => Promise<void> }>;

const adapters: Record<string, Mount> = {
  msw: async (contract) => {
    const baseUrl = 'https://api.test';
    const msw = setupServer(...mswHandlers(contract, { baseUrl }));
    msw.listen({ onUnhandledFrame: 'error' });
    return { baseUrl, unmount: async () => msw.close() };
  },
  node: async (contract) => {
    const http = await listenContractServer(contract, { port: 0, host: '127.0.0.1' });
    return { baseUrl: http.url, unmount: () => http.close() };
  },
};

interface Send {
  key?: string;
  /** Raw header value instead of `"key"`. */
  rawKey?: string;
  body?: unknown;
  method?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

describe.each(Object.entries(adapters))('contract server through %s', (_name, mount) => {
  async function setup(options: ContractServerOptions = {}) {
    const contract = createContractServer(options);
    const { baseUrl, unmount } = await mount(contract);
    onTestFinished(async () => {
      contract.reset();
      await unmount();
    });
    const send = (path: string, init: Send = {}) => {
      const headers = new Headers(init.headers);
      if (init.rawKey !== undefined) headers.set('Idempotency-Key', init.rawKey);
      else if (init.key !== undefined) headers.set('Idempotency-Key', serializeSfString(init.key));
      if (init.body !== undefined) headers.set('Content-Type', 'application/json');
      return fetch(`${baseUrl}${path}`, {
        method: init.method ?? 'POST',
        headers,
        body:
          init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
        signal: init.signal,
      });
    };
    return { contract, baseUrl, send };
  }

  const payments = (): ContractServerOptions['routes'] => {
    let n = 0;
    return {
      'POST /payments': ({ json, key }) => ({ status: 201, body: { id: `pay_${++n}`, key, ...(json as object) } }),
    };
  };

  test('first request runs the effect once; the same request replays the stored response', async () => {
    const { contract, send } = await setup({ routes: payments() });
    const first = await send('/payments', { key: 'k1', body: { amount: 100, currency: 'eur' } });
    expect(first.status).toBe(201);
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await first.json()).toEqual({ id: 'pay_1', key: 'k1', amount: 100, currency: 'eur' });

    // Same JSON with other key order and spacing: the same request.
    const again = await send('/payments', { key: 'k1', body: '{ "currency": "eur", "amount": 100 }' });
    expect(again.status).toBe(201);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(again.headers.get('Content-Type')).toBe('application/json');
    expect(await again.json()).toEqual({ id: 'pay_1', key: 'k1', amount: 100, currency: 'eur' });

    expect(contract.effects('k1')).toBe(1);
    expect(contract.effects()).toBe(1);
    expect(contract.attempts('k1')).toBe(2);
    expect(contract.keyState('k1')).toBe('completed');
    expect(contract.requests).toEqual([
      { method: 'POST', path: '/payments', key: 'k1', scope: '', status: 201, replayed: false, fault: undefined },
      { method: 'POST', path: '/payments', key: 'k1', scope: '', status: 201, replayed: true, fault: undefined },
    ]);
  });

  test('the same key with a different body is a 422 problem, and the effect does not run', async () => {
    const { contract, send } = await setup({ routes: { ...payments(), 'POST /refunds': () => ({ status: 201 }) } });
    expect((await send('/payments', { key: 'k1', body: { amount: 100 } })).status).toBe(201);
    const reused = await send('/payments', { key: 'k1', body: { amount: 200 } });
    expect(reused.status).toBe(422);
    expect(reused.headers.get('Content-Type')).toBe('application/problem+json');
    const problem = await reused.json();
    expect(problem).toMatchObject({ status: 422, title: 'Idempotency-Key is already used' });
    expect(problem.type).toMatch(/^tag:/);
    expect(problem.detail).toEqual(expect.any(String));
    // A different path is a different request too.
    expect((await send('/refunds', { key: 'k1', body: { amount: 100 } })).status).toBe(422);
    expect(contract.effects()).toBe(1);
  });

  test('while the first request is in progress: same request → 409 + Retry-After, other body → 422', async () => {
    const { contract, send } = await setup({ routes: payments(), retryAfter: 3 });
    contract.inject({ fault: 'delay', ms: 300, when: 'before-commit' });
    const first = send('/payments', { key: 'k1', body: { amount: 100 } });
    await vi.waitFor(() => expect(contract.keyState('k1')).toBe('in_progress'));

    const concurrent = await send('/payments', { key: 'k1', body: { amount: 100 } });
    expect(concurrent.status).toBe(409);
    expect(concurrent.headers.get('Retry-After')).toBe('3');
    expect(await concurrent.json()).toMatchObject({
      status: 409,
      title: 'A request is outstanding for this Idempotency-Key',
    });

    const mismatch = await send('/payments', { key: 'k1', body: { amount: 999 } });
    expect(mismatch.status).toBe(422);
    expect(contract.effects()).toBe(0);

    expect((await first).status).toBe(201);
    expect(contract.effects('k1')).toBe(1);
    const retry = await send('/payments', { key: 'k1', body: { amount: 100 } });
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(contract.attempts('k1')).toBe(4);
  });

  test('a missing key is a 400 for POST and PATCH; GET needs none', async () => {
    const { contract, send } = await setup();
    const missing = await send('/orders', { body: { item: 'book' } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ status: 400, title: 'Idempotency-Key is missing' });
    expect((await send('/orders/1', { method: 'PATCH', body: { item: 'pen' } })).status).toBe(400);
    expect(contract.effects()).toBe(0);

    const created = await send('/orders', { key: 'o1', body: { item: 'book' } });
    expect(created.status).toBe(201);
    const { id } = await created.json();
    expect(created.headers.get('Location')).toBe(`/orders/${id}`);
    const read = await send(`/orders/${id}`, { method: 'GET' });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ id, item: 'book' });
    expect(contract.effects()).toBe(1);
  });

  test('invalid keys are a 400 and count no attempt', async () => {
    const { contract, send } = await setup({ maxKeyLength: 8 });
    for (const rawKey of ['abc', '"abc', '"a\\bc"', '""', '"abc";p=1', '"123456789"']) {
      const res = await send('/orders', { rawKey, body: { item: 'book' } });
      expect(res.status, rawKey).toBe(400);
      expect(await res.json()).toMatchObject({ title: 'Idempotency-Key is invalid' });
    }
    expect(contract.effects()).toBe(0);
    expect(contract.requests.map((r) => r.key)).toEqual(Array(6).fill(undefined));
    // Escapes are decoded: "a\"b" is the key a"b.
    expect((await send('/orders', { rawKey: '"a\\"b"', body: {} })).status).toBe(201);
    expect(contract.attempts('a"b')).toBe(1);
  });

  // One setup per test: two MSW servers in one test would both intercept.
  test("keyFormat 'bare' takes the raw value as the key, quotes included", async () => {
    const bare = await setup({ keyFormat: 'bare' });
    expect((await bare.send('/orders', { rawKey: 'abc', body: {} })).status).toBe(201);
    const quoted = await bare.send('/orders', { rawKey: '"abc"', body: {} });
    expect(quoted.status).toBe(201); // the key "abc" with its quotes: a new key
    expect(quoted.headers.get('Idempotent-Replayed')).toBeNull();
    expect(bare.contract.effects('abc')).toBe(1);
    expect(bare.contract.effects('"abc"')).toBe(1);
  });

  test("keyFormat 'any' decodes a quoted key and takes a bare one as is", async () => {
    const any = await setup({ keyFormat: 'any' });
    expect((await any.send('/orders', { rawKey: 'abc', body: {} })).status).toBe(201);
    const same = await any.send('/orders', { rawKey: '"abc"', body: {} });
    expect(same.headers.get('Idempotent-Replayed')).toBe('true');
    expect(any.contract.effects('abc')).toBe(1);
  });

  test('scopeHeader isolates keys: the same key under two header values is two keys', async () => {
    const { contract, send } = await setup({ routes: payments(), scopeHeader: 'Authorization' });
    const alice = await send('/payments', {
      key: 'k1',
      body: { amount: 1 },
      headers: { Authorization: 'Bearer alice' },
    });
    const bob = await send('/payments', { key: 'k1', body: { amount: 2 }, headers: { Authorization: 'Bearer bob' } });
    expect(alice.status).toBe(201);
    expect(bob.status).toBe(201); // not a 422: another scope
    expect((await bob.json()).id).toBe('pay_2');
    expect(contract.effects('k1')).toBe(2);
    expect(contract.effects('k1', 'Bearer alice')).toBe(1);
    expect(contract.attempts('k1', 'Bearer bob')).toBe(1);
    const aliceAgain = await send('/payments', {
      key: 'k1',
      body: { amount: 1 },
      headers: { Authorization: 'Bearer alice' },
    });
    expect((await aliceAgain.json()).id).toBe('pay_1');
  });

  test('a scope function replaces the scope header', async () => {
    const { contract, send } = await setup({
      scope: (request) => new URL(request.url).searchParams.get('tenant') ?? '',
    });
    expect((await send('/orders?tenant=a', { key: 'k1', body: { n: 1 } })).status).toBe(201);
    // Same key in tenant b with another body: no 422, since it is another scope.
    expect((await send('/orders?tenant=b', { key: 'k1', body: { n: 2 } })).status).toBe(201);
    expect(contract.effects('k1', 'a')).toBe(1);
    expect(contract.effects('k1', 'b')).toBe(1);
  });

  test('after retentionMs (fake clock) the key is forgotten and the request runs again', async () => {
    let now = 1_000_000;
    const { contract, send } = await setup({ routes: payments(), retentionMs: 60_000, now: () => now });
    expect((await send('/payments', { key: 'k1', body: { amount: 1 } })).status).toBe(201);
    now += 59_999;
    expect((await send('/payments', { key: 'k1', body: { amount: 1 } })).headers.get('Idempotent-Replayed')).toBe(
      'true',
    );
    now += 1;
    expect(contract.keyState('k1')).toBeUndefined();
    const rerun = await send('/payments', { key: 'k1', body: { amount: 1 } });
    expect(rerun.headers.get('Idempotent-Replayed')).toBeNull();
    expect((await rerun.json()).id).toBe('pay_2');
    expect(contract.effects('k1')).toBe(2);
  });

  const flaky = (): ContractServerOptions['routes'] => {
    let calls = 0;
    return {
      'POST /jobs': () =>
        ++calls === 1 ? { status: 500, body: { error: 'boom' } } : { status: 201, body: { id: calls } },
    };
  };

  test("storeResponses 'all' (default) stores and replays an error", async () => {
    const all = await setup({ routes: flaky() });
    expect((await all.send('/jobs', { key: 'j1', body: {} })).status).toBe(500);
    const replayed = await all.send('/jobs', { key: 'j1', body: {} });
    expect(replayed.status).toBe(500);
    expect(replayed.headers.get('Idempotent-Replayed')).toBe('true');
    expect(all.contract.effects('j1')).toBe(1);
  });

  test("storeResponses '2xx' forgets an error, so a retry runs again", async () => {
    const only2xx = await setup({ routes: flaky(), storeResponses: '2xx' });
    expect((await only2xx.send('/jobs', { key: 'j1', body: {} })).status).toBe(500);
    expect(only2xx.contract.keyState('j1')).toBeUndefined();
    const rerun = await only2xx.send('/jobs', { key: 'j1', body: {} });
    expect(rerun.status).toBe(201);
    expect(rerun.headers.get('Idempotent-Replayed')).toBeNull();
    expect(only2xx.contract.effects('j1')).toBe(2);
  });

  test('drop-after-commit: the client gets a network error, the effect ran once, a retry gets the replay', async () => {
    const { contract, send } = await setup({ routes: payments() });
    contract.inject({ fault: 'drop-after-commit', times: 1, match: { method: 'POST', path: '/payments' } });
    await expect(send('/payments', { key: 'k1', body: { amount: 100 } })).rejects.toThrow(TypeError);
    expect(contract.effects('k1')).toBe(1);
    expect(contract.keyState('k1')).toBe('completed');
    expect(contract.pendingFaults).toBe(0);

    const retry = await send('/payments', { key: 'k1', body: { amount: 100 } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await retry.json()).id).toBe('pay_1');
    expect(contract.effects('k1')).toBe(1);
    expect(contract.requests.map((r) => [r.status, r.fault])).toEqual([
      [null, 'drop-after-commit'],
      [201, undefined],
    ]);
  });

  test('fail-before-commit: a 503 with Retry-After, no effect, no record; the retry runs for real', async () => {
    const { contract, send } = await setup({ routes: payments() });
    contract.inject({ fault: 'fail-before-commit', retryAfter: 2, times: 2 });
    for (let i = 0; i < 2; i++) {
      const failed = await send('/payments', { key: 'k1', body: { amount: 100 } });
      expect(failed.status).toBe(503);
      expect(failed.headers.get('Retry-After')).toBe('2');
      expect(await failed.json()).toMatchObject({ status: 503 });
    }
    expect(contract.effects()).toBe(0);
    expect(contract.keyState('k1')).toBeUndefined();
    const retry = await send('/payments', { key: 'k1', body: { amount: 100 } });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('Idempotent-Replayed')).toBeNull();
    expect(contract.effects('k1')).toBe(1);
  });

  test('hang: the key stays in progress until the client aborts, then is released with no effect', async () => {
    const { contract, send } = await setup({ routes: payments() });
    contract.inject({ fault: 'hang' });
    const abort = new AbortController();
    const hung = send('/payments', { key: 'k1', body: { amount: 100 }, signal: abort.signal });
    await vi.waitFor(() => expect(contract.keyState('k1')).toBe('in_progress'));
    expect((await send('/payments', { key: 'k1', body: { amount: 100 } })).status).toBe(409);

    abort.abort();
    await expect(hung).rejects.toThrow();
    await vi.waitFor(() => expect(contract.keyState('k1')).toBeUndefined());
    expect(contract.effects()).toBe(0);
    const retry = await send('/payments', { key: 'k1', body: { amount: 100 } });
    expect(retry.status).toBe(201);
    expect(contract.effects('k1')).toBe(1);
  });

  test('in-progress fault: 409 for that key for ms (server clock), without the effect; then it runs', async () => {
    let now = 0;
    const { contract, send } = await setup({ routes: payments(), now: () => now });
    contract.inject({ fault: 'in-progress', ms: 5_000, retryAfter: 5, match: { key: 'k1' } });
    // Another key is untouched by the fault.
    expect((await send('/payments', { key: 'k0', body: { amount: 1 } })).status).toBe(201);
    for (const at of [0, 4_999]) {
      now = at;
      const busy = await send('/payments', { key: 'k1', body: { amount: 100 } });
      expect(busy.status).toBe(409);
      expect(busy.headers.get('Retry-After')).toBe('5');
    }
    // A different body still loses to the held fingerprint: mismatch wins.
    expect((await send('/payments', { key: 'k1', body: { amount: 7 } })).status).toBe(422);
    expect(contract.effects('k1')).toBe(0);
    now = 5_000;
    expect((await send('/payments', { key: 'k1', body: { amount: 100 } })).status).toBe(201);
    expect(contract.effects('k1')).toBe(1);
  });

  test('status fault: a 429 is answered in front of the idempotency layer and not stored', async () => {
    const { contract, send } = await setup({ routes: payments() });
    contract.inject({ fault: 'status', status: 429, headers: { 'Retry-After': '7' }, body: { error: 'slow down' } });
    const limited = await send('/payments', { key: 'k1', body: { amount: 1 } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('Retry-After')).toBe('7');
    expect(await limited.json()).toEqual({ error: 'slow down' });
    expect(contract.keyState('k1')).toBeUndefined();
    expect((await send('/payments', { key: 'k1', body: { amount: 1 } })).status).toBe(201);
    expect(contract.effects('k1')).toBe(1);
  });

  test('status fault with store: true is the stored outcome (even under 2xx) and is replayed', async () => {
    const { contract, send } = await setup({ routes: payments(), storeResponses: '2xx' });
    contract.inject({ fault: 'status', status: 500, body: 'stored failure', store: true });
    const failed = await send('/payments', { key: 'k1', body: { amount: 1 } });
    expect(failed.status).toBe(500);
    expect(await failed.text()).toBe('stored failure');
    const replay = await send('/payments', { key: 'k1', body: { amount: 1 } });
    expect(replay.status).toBe(500);
    expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await replay.text()).toBe('stored failure');
    expect(contract.effects()).toBe(0);
  });

  test('delay after commit: the stored response is replayed to a retry before the first answer arrives', async () => {
    const { contract, send } = await setup({ routes: payments() });
    contract.inject({ fault: 'delay', ms: 400, when: 'after-commit' });
    let firstDone = false;
    const first = send('/payments', { key: 'k1', body: { amount: 1 } }).then((res) => {
      firstDone = true;
      return res;
    });
    await vi.waitFor(() => expect(contract.keyState('k1')).toBe('completed'));
    const retry = await send('/payments', { key: 'k1', body: { amount: 1 } });
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(firstDone).toBe(false);
    expect((await first).status).toBe(201);
    expect(contract.effects('k1')).toBe(1);
  });

  test('faults are consumed in order by matching requests only', async () => {
    const { contract, send } = await setup({ routes: { ...payments(), 'POST /refunds': () => ({ status: 201 }) } });
    contract.inject(
      { fault: 'fail-before-commit', status: 502, match: { path: '/refunds' } },
      { fault: 'respond', match: { path: '/payments' } },
      { fault: 'drop-after-commit', match: { path: '/payments' } },
    );
    expect((await send('/payments', { key: 'a', body: {} })).status).toBe(201); // respond
    await expect(send('/payments', { key: 'b', body: {} })).rejects.toThrow(TypeError); // dropped
    expect(contract.pendingFaults).toBe(1);
    expect((await send('/payments', { key: 'c', body: {} })).status).toBe(201);
    expect((await send('/refunds', { key: 'd', body: {} })).status).toBe(502);
    expect(contract.pendingFaults).toBe(0);
    expect(contract.requests.map((r) => r.fault)).toEqual([
      'respond',
      'drop-after-commit',
      undefined,
      'fail-before-commit',
    ]);
  });

  test('CORS: preflight is answered and responses expose Retry-After and Idempotent-Replayed', async () => {
    const { send } = await setup({ cors: { allowOrigin: 'http://app.test' } });
    const preflight = await send('/orders', {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://app.test',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'idempotency-key, content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('Access-Control-Allow-Origin')).toBe('http://app.test');
    expect(preflight.headers.get('Access-Control-Allow-Methods')).toContain('PATCH');
    const allowed = preflight.headers.get('Access-Control-Allow-Headers')?.toLowerCase().split(/,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(['idempotency-key', 'content-type', 'authorization']));

    const created = await send('/orders', { key: 'k1', body: {}, headers: { Origin: 'http://app.test' } });
    expect(created.headers.get('Access-Control-Allow-Origin')).toBe('http://app.test');
    const exposed = created.headers.get('Access-Control-Expose-Headers')?.split(/,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(['Retry-After', 'Idempotent-Replayed', 'Idempotency-Key']));
    expect(created.headers.get('Idempotency-Key')).toBe('"k1"');
    const missing = await send('/orders', { body: {} });
    expect(missing.headers.get('Access-Control-Allow-Origin')).toBe('http://app.test');
  });

  test('CORS defaults to allowing any origin', async () => {
    const open = await setup();
    expect((await open.send('/orders', { key: 'k1', body: {} })).headers.get('Access-Control-Allow-Origin')).toBe('*');
  });

  test('cors: false sends no CORS headers and leaves OPTIONS to the routes', async () => {
    const closed = await setup({ cors: false });
    const res = await closed.send('/orders', { key: 'k1', body: {} });
    expect(res.status).toBe(201);
    expect(res.headers.get('Access-Control-Allow-Origin')).toBeNull();
    expect((await closed.send('/orders', { method: 'OPTIONS' })).status).toBe(404);
  });
});
