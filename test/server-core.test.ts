/**
 * oncely/server's core on the memory store: the three outcomes, 400 / 409 / 422, replays
 * byte for byte, a throwing handler leaving nothing, scopes, operations, retention, and the
 * fingerprint shared with the client.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../src/client.js';
import { StoreError } from '../src/errors.js';
import { canonicalJson } from '../src/intent/canonical-json.js';
import { fingerprint } from '../src/intent/fingerprint.js';
import { stripe } from '../src/profiles/stripe.js';
import { ietfBare } from '../src/profiles/variants.js';
import {
  createIdempotency,
  type Execution,
  type IdempotencyOptions,
  type KeyStore,
  MemoryKeyStore,
  type MemoryTransaction,
  once,
  PROBLEM_TYPES,
  receivedFingerprint,
} from '../src/server/index.js';
import { MemoryStore } from '../src/store/memory-store.js';

const BASE = 'https://shop.test';

function post(path: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}): Request {
  const all: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (key !== undefined) all['Idempotency-Key'] = key;
  return new Request(`${BASE}${path}`, { method: 'POST', headers: all, body: JSON.stringify(body) });
}

/** A payments route over a memory store, with a ledger written at commit only. */
function setup(options: Partial<IdempotencyOptions<MemoryTransaction>> = {}) {
  const store = new MemoryKeyStore();
  const ledger: { scope: string; key: string; amount: unknown }[] = [];
  let gate: Promise<void> | undefined;
  let fail: Error | undefined;
  const idempotency = createIdempotency({ store, ...options });
  let n = 0;
  const payments = idempotency.route('POST /payments', async ({ tx, json, key, scope }) => {
    await gate;
    if (fail) throw fail;
    const amount = (json as { amount: unknown }).amount;
    tx.onCommit(() => ledger.push({ scope, key, amount }));
    return {
      status: 201,
      headers: { 'set-cookie': 'session=1', location: `/payments/pay_${++n}`, 'x-run': String(n) },
      body: { id: `pay_${n}`, amount },
    };
  });
  return {
    store,
    ledger,
    idempotency,
    payments,
    hold() {
      let open!: () => void;
      gate = new Promise((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
    failWith(error: Error | undefined) {
      fail = error;
    },
  };
}

const problemOf = async (response: Response) => ({
  status: response.status,
  type: response.headers.get('content-type'),
  body: (await response.json()) as { type: string; status: number; title: string },
});

describe('oncely/server core: the three outcomes', () => {
  it('claims and runs once; a repeat replays status, chosen headers and body byte for byte, marked', async () => {
    const s = setup();
    const first = await s.payments(post('/payments', '"k1"', { amount: 100 }));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.get('set-cookie')).toBe('session=1');
    const firstBytes = new Uint8Array(await first.arrayBuffer());
    const replay = await s.payments(post('/payments', '"k1"', { amount: 100 }));
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe('/payments/pay_1');
    expect(replay.headers.get('x-run')).toBe('1');
    expect(replay.headers.get('content-type')).toBe('application/json');
    expect(replay.headers.get('set-cookie')).toBeNull(); // never stored
    expect(new Uint8Array(await replay.arrayBuffer())).toEqual(firstBytes);
    expect(s.ledger).toHaveLength(1);
  });

  it("the handler's request is unread and holds the body, its method, URL, headers and signal", async () => {
    const bytes = new Uint8Array([0, 255, 0xc3, 0x28, 10]);
    const seen: unknown[] = [];
    const abort = new AbortController();
    const route = createIdempotency({ store: new MemoryKeyStore() }).route('PUT /blobs', async ({ request }) => {
      seen.push(request.bodyUsed, request.method, request.url, request.headers.get('x-a'), request.signal.aborted);
      abort.abort();
      seen.push(request.signal.aborted, [...new Uint8Array(await request.arrayBuffer())]);
      return { status: 204 };
    });
    const headers = { 'Idempotency-Key': '"u"', 'x-a': 'b' };
    const request = new Request(`${BASE}/blobs?v=1`, { method: 'PUT', headers, body: bytes, signal: abort.signal });
    expect((await route(request)).status).toBe(204);
    expect(seen).toEqual([false, 'PUT', `${BASE}/blobs?v=1`, 'b', false, true, [...bytes]]);
  });

  it('a binary Response body is replayed byte for byte', async () => {
    const store = new MemoryKeyStore();
    const bytes = new Uint8Array([0, 255, 0xc3, 0x28, 10, 13, 0x80]);
    const route = createIdempotency({ store }).route(
      'POST /blobs',
      async () => new Response(bytes, { status: 200, headers: { 'content-type': 'application/octet-stream' } }),
    );
    const one = await route(post('/blobs', '"b"', {}));
    const two = await route(post('/blobs', '"b"', {}));
    expect(new Uint8Array(await one.arrayBuffer())).toEqual(bytes);
    expect(new Uint8Array(await two.arrayBuffer())).toEqual(bytes);
    expect(two.headers.get('idempotent-replayed')).toBe('true');
  });

  it('in progress: 409 problem+json with Retry-After, never success before the first commits', async () => {
    const s = setup({ retryAfter: 2 });
    const release = s.hold();
    const first = s.payments(post('/payments', '"k2"', { amount: 5 }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await s.payments(post('/payments', '"k2"', { amount: 5 }));
    expect(second.status).toBe(409);
    expect(second.headers.get('retry-after')).toBe('2');
    const problem = await problemOf(second);
    expect(problem.type).toBe('application/problem+json');
    expect(problem.body.type).toBe(PROBLEM_TYPES.inProgress);
    expect(s.ledger).toHaveLength(0);
    release();
    expect((await first).status).toBe(201);
    const third = await s.payments(post('/payments', '"k2"', { amount: 5 }));
    expect(third.headers.get('idempotent-replayed')).toBe('true');
    expect(s.ledger).toHaveLength(1);
  });

  it('another body under a used key is 422 — complete or still in progress', async () => {
    const s = setup();
    await s.payments(post('/payments', '"k3"', { amount: 1 }));
    const done = await problemOf(await s.payments(post('/payments', '"k3"', { amount: 2 })));
    expect(done.status).toBe(422);
    expect(done.body.type).toBe(PROBLEM_TYPES.keyReused);
    const release = s.hold();
    const first = s.payments(post('/payments', '"k4"', { amount: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await s.payments(post('/payments', '"k4"', { amount: 9 }))).status).toBe(422);
    expect((await s.payments(post('/payments', '"k4"', { amount: 1 }))).status).toBe(409);
    release();
    await first;
    expect(s.ledger.map((row) => row.key)).toEqual(['k3', 'k4']);
  });

  it('the same JSON with its members in another order is the same request (canonical JSON)', async () => {
    const s = setup();
    await s.payments(
      new Request(`${BASE}/payments`, {
        method: 'POST',
        headers: { 'Idempotency-Key': '"k5"' },
        body: '{"amount":1,"currency":"eur"}',
      }),
    );
    const again = await s.payments(
      new Request(`${BASE}/payments`, {
        method: 'POST',
        headers: { 'Idempotency-Key': '"k5"' },
        body: '{ "currency": "eur", "amount": 1 }',
      }),
    );
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('a key is bound to its operation: the same key on another route is 422', async () => {
    const s = setup();
    const refunds = s.idempotency.route('POST /refunds', async () => ({ status: 201, body: {} }));
    await s.payments(post('/payments', '"k6"', { amount: 1 }));
    expect((await refunds(post('/refunds', '"k6"', { amount: 1 }))).status).toBe(422);
  });

  it('keys are scoped: the same key in two scopes is two effects', async () => {
    const s = setup({ scope: (request) => request.headers.get('x-account') ?? '' });
    await s.payments(post('/payments', '"k7"', { amount: 1 }, { 'x-account': 'a' }));
    const b = await s.payments(post('/payments', '"k7"', { amount: 1 }, { 'x-account': 'b' }));
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(s.ledger.map((row) => row.scope)).toEqual(['a', 'b']);
  });
});

describe('oncely/server core: bad requests and handler failures', () => {
  it('400 problem+json for a missing key, a bare key under ietf, an empty or too long key', async () => {
    const s = setup();
    const missing = await problemOf(await s.payments(post('/payments', undefined, { amount: 1 })));
    expect(missing).toMatchObject({ status: 400, type: 'application/problem+json' });
    expect(missing.body.type).toBe(PROBLEM_TYPES.keyMissing);
    for (const bad of ['bare-key', '""', `"${'x'.repeat(256)}"`, '"a\\"b'])
      expect((await problemOf(await s.payments(post('/payments', bad, { amount: 1 })))).body.type).toBe(
        PROBLEM_TYPES.keyInvalid,
      );
    expect(s.ledger).toHaveLength(0);
  });

  it('a bare-key profile takes the header value as the key', async () => {
    for (const profile of [ietfBare, stripe]) {
      const s = setup({ profile });
      expect((await s.payments(post('/payments', 'k8', { amount: 1 }))).status).toBe(201);
      expect((await s.payments(post('/payments', '"k8"', { amount: 1 }))).status).toBe(201); // another key
      expect(s.ledger.map((row) => row.key)).toEqual(['k8', '"k8"']);
    }
  });

  it("under the stripe profile a mismatch is Stripe's 400 idempotency_error (what its client reads as reuse)", async () => {
    const s = setup({ profile: stripe });
    await s.payments(post('/payments', 'k9', { amount: 1 }));
    const response = await s.payments(post('/payments', 'k9', { amount: 2 }));
    expect(response.status).toBe(400);
    const answer = { status: 400, headers: response.headers, body: await response.json() };
    expect(stripe.classify(answer)).toBe('mismatch');
  });

  it('a handler that throws leaves nothing: no key, no effect; the next attempt runs once', async () => {
    const s = setup();
    s.failWith(new Error('database down'));
    await expect(s.payments(post('/payments', '"k10"', { amount: 1 }))).rejects.toThrow('database down');
    expect(s.store.state('', 'k10')).toBeUndefined();
    expect(s.ledger).toHaveLength(0);
    s.failWith(undefined);
    expect((await s.payments(post('/payments', '"k10"', { amount: 1 }))).status).toBe(201);
    expect((await s.payments(post('/payments', '"k10"', { amount: 1 }))).headers.get('idempotent-replayed')).toBe(
      'true',
    );
    expect(s.ledger).toHaveLength(1);
  });

  it('an error the handler answers is stored and replayed (the draft: success or an error)', async () => {
    const store = new MemoryKeyStore();
    let runs = 0;
    const route = createIdempotency({ store }).route('POST /payments', async () => {
      runs++;
      return { status: 503, headers: { 'retry-after': '30' }, body: { error: 'acquirer down' } };
    });
    const one = await route(post('/payments', '"e1"', {}));
    const two = await route(post('/payments', '"e1"', {}));
    expect([one.status, two.status, runs]).toEqual([503, 503, 1]);
    expect(two.headers.get('idempotent-replayed')).toBe('true');
    expect(await two.text()).toBe(await one.text());
  });

  it('413 for a body over maxBodyBytes; 404 for another method or path; misuse throws typed errors', async () => {
    const s = setup({ maxBodyBytes: 10 });
    expect((await s.payments(post('/payments', '"big"', { amount: 'x'.repeat(20) }))).status).toBe(413);
    // Without a Content-Length (a stream), reading stops at the limit.
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(8));
        if (pulled > 1000) controller.close();
      },
    });
    const streamed = new Request(`${BASE}/payments`, {
      method: 'POST',
      headers: { 'Idempotency-Key': '"big2"' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect((await s.payments(streamed)).status).toBe(413);
    expect(pulled).toBeLessThan(10);
    expect((await s.payments(post('/refunds', '"k"', {}))).status).toBe(404);
    expect(() => s.idempotency.route('payments', async () => ({}))).toThrow(/Invalid route/);
    expect(() => createIdempotency({} as never)).toThrow(/store/);
    expect(() => createIdempotency({ store: new MemoryKeyStore(), retryAfter: -1 })).toThrow(/retryAfter/);
    const bad = createIdempotency({ store: new MemoryKeyStore() }).route('POST /x', async () => ({ status: 42 }));
    await expect(bad(post('/x', '"k"', {}))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a key past retention is new: it runs again', async () => {
    let now = 0;
    const store = new MemoryKeyStore({ retentionMs: 1000, now: () => now });
    let runs = 0;
    const route = createIdempotency({ store }).route('POST /p', async () => ({ status: 201, body: { run: ++runs } }));
    await route(post('/p', '"old"', {}));
    now = 999;
    expect((await route(post('/p', '"old"', {}))).headers.get('idempotent-replayed')).toBe('true');
    now = 1000;
    expect(await (await route(post('/p', '"old"', {}))).json()).toEqual({ run: 2 });
  });
});

describe('once(): the primitive', () => {
  it('ran, replayed (the stored value), mismatch, in_progress; a throw leaves nothing', async () => {
    const store = new MemoryKeyStore();
    let effects = 0;
    const spec = { scope: 'acct', key: 'msg-1', operation: 'payout', request: { amount: 5 } };
    const work = async (tx: MemoryTransaction) => {
      tx.onCommit(() => effects++);
      return { paid: 5, at: new Date(0) };
    };
    expect(await once(store, spec, work)).toEqual({
      outcome: 'ran',
      value: { paid: 5, at: '1970-01-01T00:00:00.000Z' },
    });
    expect(await once(store, spec, work)).toEqual({
      outcome: 'replayed',
      value: { paid: 5, at: '1970-01-01T00:00:00.000Z' },
    });
    expect(await once(store, { ...spec, request: { amount: 6 } }, work)).toEqual({ outcome: 'mismatch' });
    expect(await once(store, { ...spec, operation: 'refund' }, work)).toEqual({ outcome: 'mismatch' });
    let open!: () => void;
    const held = once(store, { ...spec, key: 'msg-2' }, async () => {
      await new Promise<void>((resolve) => {
        open = resolve;
      });
      throw new Error('crashed');
    });
    expect(await once(store, { ...spec, key: 'msg-2' }, work)).toEqual({ outcome: 'in_progress' });
    open();
    await expect(held).rejects.toThrow('crashed');
    expect((await once(store, { ...spec, key: 'msg-2' }, work)).outcome).toBe('ran');
    expect(effects).toBe(2);
    await expect(once(store, { ...spec, key: '' }, work)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(once(store, { ...spec, request: 1n }, work)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('one fingerprint for the client and the server', () => {
  it('receivedFingerprint is the client fingerprint over what the client sends', () => {
    const body = canonicalJson({ b: [1, { d: 2, c: 3 }], a: 'é' });
    expect(receivedFingerprint('post', '/payments?x=1', JSON.stringify({ a: 'é', b: [1, { c: 3, d: 2 }] }))).toBe(
      fingerprint({ method: 'POST', path: 'payments?x=1', body }),
    );
    expect(receivedFingerprint('POST', 'payments', '')).toBe(
      fingerprint({ method: 'POST', path: 'payments', body: null }),
    );
  });

  it('a client mounted at basePath stores the fingerprint the server claims with', async () => {
    const claims: string[] = [];
    const memory = new MemoryKeyStore();
    const store: KeyStore<MemoryTransaction> = {
      execute: (claim, work) => {
        claims.push(claim.fingerprint);
        return memory.execute(claim, work);
      },
    };
    const route = createIdempotency({ store, basePath: '/api/v1' }).route('POST /payments', async ({ json }) => ({
      status: 201,
      body: json,
    }));
    const clientStore = new MemoryStore();
    const client = createClient({
      baseUrl: `${BASE}/api/v1/`,
      scope: 's',
      store: clientStore,
      fetch: async (input, init) => route(new Request(input, init)),
    });
    const intent = await client.intent('checkout:1');
    const res = await intent.post('payments?cart=1', { json: { z: 1, a: [2, 3] } });
    expect(res.status).toBe(201);
    const record = await clientStore.get('s', 'checkout:1');
    expect(claims).toEqual([record?.fingerprint]);
  });
});

describe('onRequest: what each request did, per operation', () => {
  it('hears ran, replayed, in_progress, mismatch, bad_key, too_large and threw; a throwing observer changes nothing', async () => {
    const events: { operation: string; outcome: string; status: number | undefined; scope: string | undefined }[] = [];
    let fail = false;
    let gate: Promise<void> | undefined;
    const idempotency = createIdempotency({
      store: new MemoryKeyStore(),
      maxBodyBytes: 100,
      scope: () => 'acct',
      onRequest: ({ operation, outcome, status, scope }) => {
        events.push({ operation, outcome, status, scope });
        throw new Error('a broken observer');
      },
    });
    const route = idempotency.route('POST /payments', async () => {
      await gate;
      if (fail) throw new Error('boom');
      return { status: 201, body: {} };
    });
    await route(post('/payments', '"o1"', { amount: 1 }));
    await route(post('/payments', '"o1"', { amount: 1 }));
    await route(post('/payments', '"o1"', { amount: 2 }));
    await route(post('/payments', undefined, {}));
    await route(post('/payments', '"o2"', { pad: 'x'.repeat(200) }));
    let open!: () => void;
    gate = new Promise((resolve) => {
      open = resolve;
    });
    const held = route(post('/payments', '"o3"', {}));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await route(post('/payments', '"o3"', {}));
    open();
    await held;
    gate = undefined;
    fail = true;
    await expect(route(post('/payments', '"o4"', {}))).rejects.toThrow('boom');
    expect(events.map(({ outcome, status }) => [outcome, status])).toEqual([
      ['ran', 201],
      ['replayed', 201],
      ['mismatch', 422],
      ['bad_key', 400],
      ['too_large', 413],
      ['in_progress', 409],
      ['ran', 201],
      ['threw', undefined],
    ]);
    expect(events.every((event) => event.operation === 'POST /payments')).toBe(true);
    expect(events[0]!.scope).toBe('acct');
  });
});

describe('a key store that lies (the store is a boundary too)', () => {
  /** A memory store that runs the work, then answers `lie(what it did)`. */
  function lying(lie: (real: Execution) => unknown): KeyStore<MemoryTransaction> {
    const real = new MemoryKeyStore();
    return { execute: async (claim, work) => lie(await real.execute(claim, work)) as Execution };
  }
  const answer = {
    status: 201,
    headers: [['content-type', 'application/json']] as [string, string][],
    body: new Uint8Array([123, 125]),
  };
  it.each([
    ['answers ran without running the handler', () => ({ outcome: 'ran', answer })],
    ['answers nothing', () => undefined],
    ['answers an unknown outcome', () => ({ outcome: 'done', answer })],
    ['answers a replay without an answer', () => ({ outcome: 'replayed' })],
    ['answers a replay with a status of 0', () => ({ outcome: 'replayed', answer: { ...answer, status: 0 } })],
    [
      'answers a replay whose headers are not strings',
      () => ({ outcome: 'replayed', answer: { ...answer, headers: [['a', 1]] } }),
    ],
    ['answers a replay whose body is a string', () => ({ outcome: 'replayed', answer: { ...answer, body: '{}' } })],
  ])('execute() %s: a StoreError, never a success', async (_name, lie) => {
    let handlerRan = false;
    const store: KeyStore<MemoryTransaction> = { execute: async () => lie() as Execution };
    const idempotency = createIdempotency({ store });
    const route = idempotency.route('POST /payments', async () => {
      handlerRan = true;
      return { status: 201, body: {} };
    });
    const error = await route(post('/payments', '"k1"', { amount: 1 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(handlerRan).toBe(false);
  });
  it("a store whose execute() really ran the handler and answers 'ran' passes through", async () => {
    const idempotency = createIdempotency({ store: lying((real) => real) });
    const route = idempotency.route('POST /payments', async () => ({ status: 201, body: { ok: true } }));
    expect((await route(post('/payments', '"k1"', { amount: 1 }))).status).toBe(201);
  });
  it('a store that throws after the handler ran: the StoreError reaches the caller, no success', async () => {
    const idempotency = createIdempotency({
      store: lying(() => {
        throw new StoreError('commit lost');
      }),
    });
    const route = idempotency.route('POST /payments', async () => ({ status: 201, body: {} }));
    await expect(route(post('/payments', '"k1"', { amount: 1 }))).rejects.toBeInstanceOf(StoreError);
  });
});
