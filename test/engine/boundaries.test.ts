/**
 * Issue 17: each place where the engine hands control to something it does not own may
 * hang, fail after doing its work, or lie. One regression test per point of the issue,
 * against a real server on 127.0.0.1 (raw sockets where Node's server would refuse).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  createClient,
  type IntentRecord,
  intentFetch,
  isOncelyError,
  LocalCoordinator,
  MemoryStore,
  type RecordUpdater,
  run,
} from '../../src/index.js';
import { ietf } from '../../src/profiles/index.js';
import { inProgressBackoff, resolveRetryOptions } from '../../src/retry/policy.js';
import { type Reply, wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const FAST = { baseDelay: 1, maxDelay: 5, timeout: 200, deadline: 1_500, maxAttempts: 3 };

async function server(handler: (n: number) => Reply | Promise<Reply> = () => ({ status: 201, body: { id: 'p' } })) {
  const s = await wireServer((_req, n) => handler(n));
  closing.push(() => s.close());
  return s;
}

/** A server that holds every request until `release()`, then answers 201. */
async function heldServer() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const s = await server(async () => {
    await held;
    return { status: 201, body: {} };
  });
  return { s, release };
}

/** A raw HTTP server: `respond` writes whatever it likes on the socket once a request arrived. */
async function raw(respond: (socket: Socket, n: number) => void) {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const srv: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (!buffered.includes('\r\n\r\n')) return;
      requests.push(buffered);
      buffered = '';
      respond(socket, requests.length);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  closing.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        srv.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    keys: () => requests.map((r) => /idempotency-key: (.*)\r/i.exec(r)?.[1]),
  };
}

const client = (baseUrl: string, extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl, store: new MemoryStore(), retry: FAST, ...extra });

const timed = async <T>(work: Promise<T>) => {
  const start = performance.now();
  const result = await work.then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  return { ...result, ms: performance.now() - start };
};

describe('1. every read is bounded', () => {
  it('a body that drips forever ends the attempt at its timeout: retried under the same key, then unknown', async () => {
    const drip = await raw((socket) => {
      socket.write('HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{');
      const timer = setInterval(() => socket.writable && socket.write(' '), 50);
      socket.on('close', () => clearInterval(timer));
    });
    const intent = await client(drip.url).intent('order:1');
    const { error, ms } = await timed(intent.post('pay', { json: { order: 1 } }));
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 3 });
    expect(new Set(drip.keys()).size).toBe(1);
    expect(ms).toBeLessThan(FAST.deadline + 1_000);
    expect(intent.state).toBe('unknown');
  });

  it('a body run() reads from the returned Response, and the error body fetch() reads, are bounded too', async () => {
    const stalled = () =>
      new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{')) }), {
        status: 503,
        headers: { 'content-type': 'application/json' },
      });
    const api = client('http://127.0.0.1:9/', { fetch: async () => stalled() });
    const viaRun = timed(run(await api.intent('run'), async () => stalled()));
    const viaFetch = timed(intentFetch(await api.intent('fetch'), 'pay', { method: 'POST', body: '{}' }));
    for (const { error, ms } of await Promise.all([viaRun, viaFetch])) {
      expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
      expect(ms).toBeLessThan(FAST.deadline + 1_000);
    }
  });

  it('a fetch that never returns and ignores its signal ends at the deadline', async () => {
    const api = client('http://127.0.0.1:9/', { fetch: () => new Promise<Response>(() => {}) });
    const { error, ms } = await timed((await api.intent('x')).post('pay', { json: {} }));
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
    expect(ms).toBeLessThan(FAST.deadline + 1_000);
  });
});

/** A memory store whose updates of one kind fail (after their effect, when `after`). */
class FailingStore extends MemoryStore {
  failing: ((next: IntentRecord | undefined, current: IntentRecord | undefined) => boolean) | undefined;
  after = false;
  hang = false;
  override async update(scope: string, name: string, updater: RecordUpdater) {
    let fail = false;
    const stored = await super.update(scope, name, (current) => {
      const next = updater(current);
      fail = this.failing?.(next, current) ?? false;
      return fail && !this.after ? undefined : next;
    });
    if (fail && this.hang) return new Promise<never>(() => {});
    if (fail) throw new Error('EIO: i/o error');
    return stored;
  }
}
const settling = (next: IntentRecord | undefined, current: IntentRecord | undefined) =>
  current?.state === 'in_flight' && next !== undefined && next.lease === undefined;
const counting = (next: IntentRecord | undefined, current: IntentRecord | undefined) =>
  next !== undefined && current !== undefined && next.attempts > current.attempts && next.state === current.state;

describe('2. sent never lies; 7. no store call outlives the deadline', () => {
  for (const after of [false, true])
    it(`a success whose outcome write fails ${after ? 'after' : 'before'} its effect: the answer, and an unsaved StoreError that says sent`, async () => {
      const s = await server();
      const store = new FailingStore();
      store.failing = settling;
      store.after = after;
      const api = client(s.url, { store });
      const unsaved: unknown[] = [];
      api.on('unsaved', (event) => unsaved.push(event.error));
      const intent = await api.intent('order:2');
      await expect(intent.post('pay', { json: { order: 2 } })).resolves.toMatchObject({ key: intent.key });
      await api.pending(); // the outcome write was queued: a read waits for it
      const [error] = unsaved;
      expect(error).toMatchObject({ code: 'STORE_FAILED', sent: true, intent: 'order:2' });
      expect((error as { key?: string }).key).toBe(intent.key);
      expect((error as Error).message).toMatch(/may have taken effect/);
      expect((await store.get('default', 'order:2'))?.state).toBe(after ? 'succeeded' : 'in_flight');
    });

  it('a store call that hangs inside the loop (the attempt count) is bounded by what is left of the deadline', async () => {
    const s = await server(() => ({ status: 503 }));
    const store = new FailingStore();
    store.failing = counting;
    store.hang = true;
    const api = client(s.url, { store, storeTimeout: 60_000 });
    const { error, ms } = await timed((await api.intent('order:3')).post('pay', { json: {} }));
    expect(error).toMatchObject({ sent: true });
    expect(isOncelyError(error)).toBe(true);
    expect(ms).toBeLessThan(FAST.deadline + 1_500);
  });

  it('an outcome write that hangs does not hold the call (it ends once the write is queued); the write gives up within the settle grace: an unsaved StoreError that says sent, the intent pending', async () => {
    const s = await server();
    const store = new FailingStore();
    store.failing = settling;
    store.hang = true;
    const api = client(s.url, { store, storeTimeout: 60_000 });
    const unsaved: unknown[] = [];
    api.on('unsaved', (event) => unsaved.push(event.error));
    const intent = await api.intent('order:4');
    const { error, ms } = await timed(intent.post('pay', { json: {} }));
    expect(error).toBeUndefined();
    expect(ms).toBeLessThan(1_000); // not the deadline + grace a waited write would take
    expect(intent.state).toBe('succeeded'); // this object sees the outcome at once
    expect(unsaved).toEqual([]);
    // A read waits for the queued write (read your writes): here until it gives up.
    const { ms: read } = await timed(api.pending());
    expect(unsaved).toMatchObject([{ code: 'STORE_FAILED', sent: true }]);
    expect(read + ms).toBeLessThan(FAST.deadline + 1_500);
    expect(await api.pending()).toMatchObject([{ name: 'order:4', state: 'in_flight' }]);
    expect(intent.state).toBe('in_flight'); // kept pending: a resend under its key gets the replay
  });

  it('a lease is not renewed past the deadline', async () => {
    const s = await server(() => ({ status: 201, body: {} }));
    const renewals: number[] = [];
    class Watching extends FailingStore {
      override async update(scope: string, name: string, updater: RecordUpdater) {
        return super.update(scope, name, (current) => {
          const next = updater(current);
          if (next?.lease && current?.lease?.owner === next.lease.owner && next.state === current.state)
            renewals.push(performance.now());
          return next;
        });
      }
    }
    const store = new Watching();
    store.failing = settling;
    store.hang = true; // the call sits in its outcome write past the deadline
    const api = client(s.url, { store, leaseTtl: 300, storeTimeout: 60_000, retry: { ...FAST, deadline: 400 } });
    const start = performance.now();
    await (await api.intent('order:5')).post('pay', { json: {} }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(renewals.filter((t) => t - start > 500)).toEqual([]);
  });
});

describe('no wait outlives the deadline', () => {
  it("a call waiting for the lock behind another client's long call ends at its deadline, nothing sent", async () => {
    const { s, release } = await heldServer();
    const store = new MemoryStore();
    const slow = client(s.url, { store, retry: { ...FAST, timeout: 10_000, deadline: 20_000 } });
    const waiting = client(s.url, { store, retry: { ...FAST, deadline: 400 } });
    const first = (await slow.intent('lock:1')).post('pay', { json: {} });
    while (s.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const { error, ms } = await timed((await waiting.intent('lock:1')).post('pay', { json: {} }));
    expect(error).toMatchObject({ code: 'IN_PROGRESS', holder: 'client', sent: false });
    expect(ms).toBeLessThan(400 + 500);
    expect(s.requests).toHaveLength(1);
    release();
    await first;
  });
});

describe('a store that answers garbage', () => {
  it('a claim or a list answered with garbage is a StoreError, not a TypeError', async () => {
    class Garbage extends MemoryStore {
      override async claim() {
        return { record: undefined } as never;
      }
      override async list() {
        return { rows: [] } as never;
      }
    }
    const api = client('http://127.0.0.1:9/', { store: new Garbage() });
    await expect(api.intent('g')).rejects.toMatchObject({ code: 'STORE_FAILED', sent: false });
    await expect(api.pending()).rejects.toMatchObject({ code: 'STORE_FAILED' });
  });

  it('an intent() resolves only after a strict (durable) claim', async () => {
    const seen: unknown[] = [];
    class Spy extends MemoryStore {
      override async claim(fresh: IntentRecord, options?: object) {
        seen.push(options);
        return super.claim(fresh);
      }
    }
    await client('http://127.0.0.1:9/', { store: new Spy() }).intent('durable');
    expect(seen).toEqual([{ durability: 'strict' }]);
  });
});

describe('3. a transport that throws after sending is not "no effect"', () => {
  it('run(): sends, then throws a plain Error: unknown, not failed, not retried', async () => {
    const s = await server();
    const intent = await client(s.url).intent('order:6');
    const error = await run(intent, async ({ headers }) => {
      await fetch(`${s.url}pay`, { method: 'POST', headers, body: '{}' });
      throw new Error('response parsing failed');
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
    expect(s.requests).toHaveLength(1);
    expect(intent.state).toBe('unknown');
  });
});

describe('4. nothing outside the call forgets what is on the wire', () => {
  it('reset() and clear() from another process refuse while the request is on the wire, and drop it with force', async () => {
    const { s, release } = await heldServer();
    const store = new MemoryStore();
    const a = client(s.url, { store, retry: { ...FAST, timeout: 5_000, deadline: 10_000 } });
    // Another process: the same store, its own coordinator (only the record's lease is shared).
    const b = client(s.url, { store, coordinator: new LocalCoordinator() });
    const sending = (await a.intent('order:7')).post('pay', { json: {} });
    while (s.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const other = await b.intent('order:7');
    await expect(other.reset()).rejects.toMatchObject({ code: 'INTENT_PENDING', sent: false });
    await expect(b.clear()).rejects.toMatchObject({ code: 'INTENT_PENDING', names: ['order:7'] });
    expect((await store.get('default', 'order:7'))?.state).toBe('in_flight');
    release();
    await sending;
    expect((await store.get('default', 'order:7'))?.state).toBe('succeeded');
    await other.reset(); // settled: the app may form a new operation
    expect(await store.get('default', 'order:7')).toBeUndefined();
  });

  it('an unknown intent is kept by reset() and clear() unless forced', async () => {
    const s = await server(() => 'drop');
    const api = client(s.url);
    const intent = await api.intent('order:8');
    await intent.post('pay', { json: {} }).catch(() => undefined);
    expect(intent.state).toBe('unknown');
    await expect(intent.reset()).rejects.toMatchObject({ code: 'INTENT_PENDING' });
    await expect(api.clear()).rejects.toMatchObject({ code: 'INTENT_PENDING' });
    expect((await api.pending()).map((p) => p.name)).toEqual(['order:8']);
    await api.clear({ force: true });
    expect(await api.pending()).toEqual([]);
  });
});

describe('5. unkeyed means not retried', () => {
  it('a PUT (not keyed by the ietf profile) that goes unanswered is sent once', async () => {
    const s = await server(() => 'drop');
    const intent = await client(s.url).intent('profile:1');
    const error = await intent.put('profile', { json: { name: 'a' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 1 });
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]?.headers['idempotency-key']).toBeUndefined();
  });
});

describe('6. retention is the stricter of the two', () => {
  it('a record formed under a 24 h ttl, read by a client whose keyTtl is 1 h, expires after 1 h', async () => {
    const s = await server(() => 'drop');
    const store = new MemoryStore();
    let now = Date.now();
    const first = client(s.url, { store, now: () => now });
    await (await first.intent('order:9')).post('pay', { json: {} }).catch(() => undefined);
    now += 2 * 60 * 60 * 1000;
    const second = client(s.url, { store, now: () => now, keyTtl: 60 * 60 * 1000 });
    expect((await second.pending())[0]?.expired).toBe(true);
    const error = await (await second.intent('order:9')).post('pay', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INTENT_EXPIRED', sent: false });
    expect(s.requests).toHaveLength(3); // the first call's attempts only
  });
});

describe('9. lease owners are unique', () => {
  it('owners come from the crypto source, not Math.random: two module instances with one Math.random differ', async () => {
    const { vi } = await import('vitest');
    const random = Math.random;
    Math.random = () => 0.5;
    try {
      const owners: string[] = [];
      for (let i = 0; i < 2; i++) {
        vi.resetModules();
        const fresh = await import('../../src/index.js');
        const store = new fresh.MemoryStore();
        const s = await server(async () => {
          const record = await store.get('default', 'o');
          owners.push(record?.lease?.owner ?? '');
          return { status: 201, body: {} };
        });
        const api = fresh.createClient({ baseUrl: s.url, store });
        await (await api.intent('o')).post('pay', { json: {} });
      }
      expect(owners[0]).not.toBe(owners[1]);
      expect(owners[0]?.split(':')[0]).not.toBe(owners[1]?.split(':')[0]);
    } finally {
      Math.random = random;
    }
  });
});

describe('10. statuses outside 100–599 are no answer', () => {
  it('HTTP 600 and 999 are retried under the same key, then unknown', async () => {
    for (const status of [600, 999]) {
      const r = await raw((socket) => socket.end(`HTTP/1.1 ${status} Odd\r\ncontent-length: 2\r\n\r\n{}`));
      const intent = await client(r.url).intent(`odd:${status}`);
      const error = await intent.post('pay', { json: {} }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 3 });
      expect(intent.state).toBe('unknown');
    }
  });
});

describe('11. bodies are valid JSON', () => {
  it('a sparse array is sent as JSON.stringify writes it (holes are null)', async () => {
    const s = await server();
    // biome-ignore lint/suspicious/noSparseArray: the point of the test
    const json = { items: [1, , 3] };
    await (await client(s.url).intent('sparse')).post('pay', { json });
    expect(s.requests[0]?.body).toBe('{"items":[1,null,3]}');
    expect(JSON.parse(s.requests[0]?.body ?? '')).toEqual(JSON.parse(JSON.stringify(json)));
  });
});

describe("12. the app's own callbacks", () => {
  it('headers() that throws: InvalidArgumentError with the cause, nothing sent, record as it was', async () => {
    const s = await server();
    const bug = new Error('no token');
    const api = client(s.url, {
      headers: () => {
        throw bug;
      },
    });
    const intent = await api.intent('cb:1');
    await expect(intent.post('pay', { json: {} })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      sent: false,
      cause: bug,
    });
    expect(s.requests).toHaveLength(0);
    expect(intent.state).toBe('ready');
  });

  it("a profile's classify that throws: unknown with the cause, the record settled, not left in flight", async () => {
    const s = await server();
    const bug = new Error('classify bug');
    const profile = {
      ...ietf,
      classify: () => {
        throw bug;
      },
    };
    const api = client(s.url, { profile });
    for (const call of ['post', 'run', 'fetch'] as const) {
      const intent = await api.intent(`cb:${call}`);
      const error = await (call === 'post'
        ? intent.post('pay', { json: {} })
        : call === 'run'
          ? run(intent, ({ headers }) => fetch(`${s.url}pay`, { method: 'POST', headers, body: '{}' }))
          : intentFetch(intent, 'pay', { method: 'POST', body: '{}' })
      ).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, cause: bug });
      expect(intent.state).toBe('unknown');
    }
  });

  it('a schema whose validate throws or never answers: ResponseValidationError, the intent succeeded', async () => {
    const s = await server();
    const api = client(s.url);
    const schema = (validate: () => never) => ({ '~standard': { version: 1 as const, vendor: 't', validate } });
    const bug = new Error('schema bug');
    const throwing = schema(() => {
      throw bug;
    });
    const hanging = schema(() => new Promise(() => {}) as never);
    const first = await api.intent('schema:1');
    await expect(first.post('pay', { json: {}, schema: throwing })).rejects.toMatchObject({
      code: 'RESPONSE_VALIDATION',
      cause: bug,
    });
    expect(first.state).toBe('succeeded');
    const second = await api.intent('schema:2');
    const { error, ms } = await timed(second.post('pay', { json: {}, schema: hanging }));
    expect(error).toMatchObject({ code: 'RESPONSE_VALIDATION' });
    expect(ms).toBeLessThan(FAST.deadline + 1_500);
  });
});

describe('13. intentFetch(intent, new Request(...))', () => {
  it('sends the Request as fetch would: method, URL, headers, body', async () => {
    const s = await server();
    const intent = await client(s.url).intent('req');
    const response = await intentFetch(
      intent,
      new Request(`${s.url}pay?x=1`, { method: 'POST', headers: { 'x-app': 'a' }, body: '{"a":1}' }),
    );
    expect(response.status).toBe(201);
    expect(s.requests[0]).toMatchObject({ method: 'POST', url: '/pay?x=1', body: '{"a":1}' });
    expect(s.requests[0]?.headers['x-app']).toBe('a');
    expect(s.requests[0]?.headers['idempotency-key']).toBe(`"${intent.key}"`);
  });
});

describe('14. the 409 floor', () => {
  it('no wait after a 409 without Retry-After is shorter than inProgressDelay, whatever maxDelay is', () => {
    for (const maxDelay of [0, 10, 500, 1_000, 1_999, 10_000])
      for (let n = 1; n <= 8; n++) {
        const options = resolveRetryOptions({ maxDelay, inProgressDelay: 1_000 });
        expect(inProgressBackoff(n, options, () => 0)).toBeGreaterThanOrEqual(1_000);
      }
  });
});

describe('15. hashing a large body counts in the deadline', () => {
  it('10 MB to a server that never reads ends within deadline + 1 s', async () => {
    const sockets: Socket[] = [];
    const srv = createServer((socket) => {
      sockets.push(socket);
      socket.pause(); // never reads: the upload stalls
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    closing.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          srv.close(() => resolve());
        }),
    );
    const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/`;
    const api = client(url, { retry: { ...FAST, timeout: 0 } });
    const big = { blob: 'x'.repeat(10 * 1024 * 1024) };
    const { error, ms } = await timed((await api.intent('big')).post('upload', { json: big }));
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
    expect(ms).toBeLessThan(FAST.deadline + 1_000);
  });
});
