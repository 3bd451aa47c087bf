/**
 * The engine against a real HTTP server on 127.0.0.1 (issue 9): store failures after
 * sending, redirects, vanished records, attempts that never left, coordination of two
 * clients over one store against a server whose own dedup races.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  createClient,
  type IntentRecord,
  LocalCoordinator,
  MemoryStore,
  type RecordUpdater,
  type Store,
} from '../../src/index.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/**
 * A payments endpoint with its own effect ledger per key and a key store. `racy`: the key
 * store is read, then written after the effect (a window where two first requests both run).
 */
async function payments(script: (n: number) => Reply | undefined = () => undefined, racy = false) {
  const effects = new Map<string, number>();
  const stored = new Map<string, Reply>();
  const server = await wireServer(async (req, n) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    const scripted = script(n);
    if (scripted && scripted !== 'drop') return scripted;
    if (stored.has(key)) {
      const reply = stored.get(key) as { status: number; body: unknown };
      return { ...reply, headers: { 'idempotent-replayed': 'true' } };
    }
    if (racy) await new Promise((resolve) => setTimeout(resolve, 20));
    effects.set(key, (effects.get(key) ?? 0) + 1);
    const reply = { status: 201, body: { id: `pay_${effects.size}`, body: req.body } };
    stored.set(key, reply);
    return scripted === 'drop' ? 'drop' : reply;
  });
  servers.push(server);
  return { server, effects: (key: string) => effects.get(`"${key}"`) ?? 0 };
}

const client = (server: WireServer, extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: server.url, store: new MemoryStore(), retry: { baseDelay: 1, maxDelay: 5 }, ...extra });

/** A store that fails the writes `fails` picks, like a full disk. */
function failing(inner: Store, fails: (next: IntentRecord | undefined) => boolean): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'update') {
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return (scope: string, name: string, updater: RecordUpdater, options?: unknown) => {
        let doomed = false;
        const guarded: RecordUpdater = (current) => {
          const next = updater(current);
          doomed = fails(next);
          return doomed ? undefined : next;
        };
        return target.update(scope, name, guarded, options as never).then((stored) => {
          if (doomed) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          return stored;
        });
      };
    },
  });
}

describe('a store write that fails after an attempt went out', () => {
  it('a success whose outcome write fails: the caller gets the answer, an unsaved event the StoreError; the intent stays in flight; a resume gives one effect', async () => {
    const { server, effects } = await payments();
    const store = new MemoryStore();
    const broken = failing(store, (next) => next?.state === 'succeeded');
    const api = client(server, { store: broken });
    const unsaved: unknown[] = [];
    api.on('unsaved', (event) => unsaved.push(event.error));
    const intent = await api.intent('pay');
    const res = await intent.post('payments', { json: { amount: 1 } });
    expect(res).toMatchObject({ key: intent.key, status: 201, replayed: false });
    await api.pending(); // the outcome write was queued: a read waits for it
    expect(unsaved).toMatchObject([{ code: 'STORE_FAILED', sent: true, cause: { code: 'ENOSPC' } }]);
    expect((unsaved[0] as Error).message).toMatch(/stays in flight/);
    const stored = await store.get('default', 'pay');
    expect(stored).toMatchObject({ key: intent.key, state: 'in_flight' });
    expect(stored?.fingerprint).toMatch(/^v2\./);
    const again = await (await client(server, { store }).intent('pay')).post('payments', { json: { amount: 1 } });
    expect(again).toMatchObject({ key: intent.key, replayed: true });
    expect(effects(intent.key)).toBe(1);
  });

  it('a client that fails before its first attempt (a beforeRequest hook throws) leaves the record as it was', async () => {
    const { server, effects } = await payments();
    const store = new MemoryStore();
    const hook = async () => {
      throw new Error('token refresh failed');
    };
    const broken = client(server, { store, ky: { hooks: { beforeRequest: [hook] } } });
    const intent = await broken.intent('pay');
    const error = await intent.post('payments', { json: { amount: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_SENT', cause: { message: 'token refresh failed' } });
    expect(await store.get('default', 'pay')).toMatchObject({ state: 'ready', attempts: 0 });
    expect((await store.get('default', 'pay'))?.fingerprint).toBeUndefined();
    expect(server.requests).toHaveLength(0);
    expect(effects(intent.key)).toBe(0);
  });

  it("never overwrites another client's in-flight record: it waits for the lease, then gives up with nothing sent", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { server, effects } = await payments();
    const store = new MemoryStore();
    // Two processes over one store: separate coordinators, so only the lease in the record keeps them apart.
    const slowFetch: typeof fetch = async (input, init) => {
      await held;
      return fetch(input, init);
    };
    const a = await client(server, { store, coordinator: new LocalCoordinator(), fetch: slowFetch }).intent('pay');
    const sending = a.post('payments', { json: { amount: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const b = await client(server, { store, coordinator: new LocalCoordinator(), retry: { deadline: 300 } }).intent(
      'pay',
    );
    const error = await b.post('payments', { json: { amount: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'IN_PROGRESS', holder: 'client', attempts: 0 });
    expect(await store.get('default', 'pay')).toMatchObject({ state: 'in_flight', lease: expect.any(Object) });
    release();
    expect(await sending).toMatchObject({ status: 201, replayed: false });
    expect(await store.get('default', 'pay')).toMatchObject({ state: 'succeeded', attempts: 1 });
    expect((await store.get('default', 'pay'))?.lease).toBeUndefined();
    expect(effects(a.key)).toBe(1);
  });
  it("a call waiting for another client's lease is cancelled by its signal at once, nothing sent", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { server, effects } = await payments();
    const store = new MemoryStore();
    const slowFetch: typeof fetch = async (input, init) => {
      await held;
      return fetch(input, init);
    };
    const a = await client(server, { store, coordinator: new LocalCoordinator(), fetch: slowFetch }).intent('pay');
    const sending = a.post('payments', { json: { amount: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const b = await client(server, { store, coordinator: new LocalCoordinator() }).intent('pay');
    const controller = new AbortController();
    const waiting = b.post('payments', { json: { amount: 1 }, signal: controller.signal }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort(new Error('user left'));
    expect(await waiting).toMatchObject({ code: 'CANCELLED', sent: false, cause: { message: 'user left' } });
    release();
    await sending;
    expect(server.requests).toHaveLength(1);
    expect(effects(a.key)).toBe(1);
  });
});

describe('redirects (requests go out with redirect: manual)', () => {
  it('a 307 to the same origin is followed under the same key and body, inside the budget', async () => {
    const { server, effects } = await payments((n) =>
      n === 1 ? { status: 307, headers: { location: '/v2/payments' } } : undefined,
    );
    const intent = await client(server).intent('pay');
    const res = await intent.post('payments', { json: { amount: 5 } });
    expect(res).toMatchObject({ status: 201, attempts: 2 });
    expect(server.requests.map((r) => [r.method, r.url, r.body, r.headers['idempotency-key']])).toEqual([
      ['POST', '/payments', '{"amount":5}', `"${intent.key}"`],
      ['POST', '/v2/payments', '{"amount":5}', `"${intent.key}"`],
    ]);
    expect(effects(intent.key)).toBe(1);
  });

  it.each([301, 302, 303])(
    'a %s on a keyed POST is not followed: RedirectError with location, key kept',
    async (status) => {
      const { server } = await payments(() => ({ status, headers: { location: '/receipt/1' } }));
      const intent = await client(server).intent('pay');
      const error = await intent.post('payments', { json: { amount: 5 } }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'REDIRECT', status, location: '/receipt/1' });
      expect(intent.state).toBe('unknown');
      expect(server.requests.map((r) => r.method)).toEqual(['POST']);
    },
  );

  it('a 307 to another origin is not followed: the key and body never reach it', async () => {
    const other = await wireServer(() => ({ status: 201, body: {} }));
    servers.push(other);
    const { server } = await payments(() => ({ status: 307, headers: { location: `${other.url}payments` } }));
    const intent = await client(server).intent('pay');
    const error = await intent.post('payments', { json: { amount: 5 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'REDIRECT', status: 307, location: `${other.url}payments` });
    expect(other.requests).toHaveLength(0);
    expect(intent.state).toBe('unknown');
  });

  it('an absolute URL on another origin is refused before anything is sent', async () => {
    const { server } = await payments();
    const intent = await client(server).intent('pay');
    await expect(intent.post('https://elsewhere.test/payments', { json: {} })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(intent.state).toBe('ready');
    expect(await intent.post(`${server.url}payments`, { json: {} })).toMatchObject({ status: 201 });
  });
});

describe('attempts that provably never left', () => {
  it('connection refused on every attempt: NotSentError, the intent as it was, a changed request still allowed', async () => {
    const gone = await wireServer(() => ({ status: 500 }));
    await gone.close();
    const store = new MemoryStore();
    const intent = await client(gone, { store, retry: { maxAttempts: 3, baseDelay: 1, maxDelay: 2 } }).intent('pay');
    const error = await intent.post('payments', { json: { amount: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_SENT', attempts: 3 });
    expect((error as Error).message).toMatch(/Nothing of intent "pay" reached a server/);
    expect(await store.get('default', 'pay')).toMatchObject({ state: 'ready', attempts: 0 });
  });

  it('pending() elsewhere reports the attempts of an in-flight intent as they go out', async () => {
    let seen: number | undefined;
    const store = new MemoryStore();
    const { server } = await payments((n) => {
      if (n < 3) return { status: 503 };
      return undefined;
    });
    const observer = client(server, { store });
    const api = client(server, {
      store,
      onEvent: async (event) => {
        if (event.type === 'attempt' && event.attempt === 3) seen = (await observer.pending())[0]?.attempts;
      },
    });
    const res = await (await api.intent('pay')).post('payments', { json: {} });
    expect(res.attempts).toBe(3);
    expect(seen).toBeGreaterThanOrEqual(2);
    expect(await store.get('default', 'pay')).toMatchObject({ attempts: 3, state: 'succeeded' });
  });
});

describe('two clients, one process, one store', () => {
  it('sending one intent at the same instant against a server whose dedup races: one effect', async () => {
    const { server, effects } = await payments(undefined, true);
    const store = new MemoryStore();
    const [a, b] = [client(server, { store }), client(server, { store })];
    const [ia, ib] = await Promise.all([a.intent('pay'), b.intent('pay')]);
    expect(ia.key).toBe(ib.key);
    const results = await Promise.all([
      ia.post('payments', { json: { amount: 1 } }),
      ib.post('payments', { json: { amount: 1 } }),
    ]);
    expect(results.map((r) => r.status)).toEqual([201, 201]);
    expect(effects(ia.key)).toBe(1);
  });

  it('two processes (separate coordinators) over one store: the lease keeps one attempt in flight', async () => {
    const { server, effects } = await payments(undefined, true);
    const store = new MemoryStore();
    const make = () => client(server, { store, coordinator: new LocalCoordinator() });
    const [ia, ib] = await Promise.all([make().intent('pay'), make().intent('pay')]);
    await Promise.all([ia.post('payments', { json: {} }), ib.post('payments', { json: {} })]);
    expect(effects(ia.key)).toBe(1);
  });
});
