/**
 * Issue 26 §2: `sent` is the engine's to know, not guessed from what foreign code throws.
 * Only an attempt oncely made itself, through its own transport, and refused before a byte
 * left is "not sent". Once a `run()` function or a fetch of the app's has the attempt,
 * nothing it throws proves that nothing left: `sent: true`, the intent `unknown`, its key
 * and fingerprint kept, and a resume sends under the same key (one effect).
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ClientOptions, createClient, intentFetch, MemoryStore, run } from '../../src/index.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const FAST = { baseDelay: 1, maxDelay: 5, timeout: 500, deadline: 2_000, maxAttempts: 3 };

/** An idempotent payments server: one effect per key, replays after; `script` may drop a request. */
async function payments(script: (n: number) => 'drop' | undefined = () => undefined) {
  const effects = new Map<string, number>();
  const stored = new Map<string, Reply>();
  const server: WireServer = await wireServer((req, n) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    const reply = stored.get(key);
    if (reply && typeof reply === 'object') return { ...reply, headers: { 'idempotent-replayed': 'true' } };
    effects.set(key, (effects.get(key) ?? 0) + 1);
    const created = { status: 201, body: { id: `pay_${effects.size}` } };
    stored.set(key, created);
    return script(n) ?? created;
  });
  closing.push(() => server.close());
  return { server, effects: (key: string) => effects.get(`"${key}"`) ?? 0 };
}

/** A port nothing listens on: connections to it are refused (ECONNREFUSED from the platform's fetch). */
async function refusedUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return `http://127.0.0.1:${port}/`;
}

const client = (server: WireServer, store: MemoryStore, extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: server.url, store, retry: FAST, ...extra });

describe('foreign code that does several things inside one attempt', () => {
  it('run(): charges (201), then a second request is refused: unknown, sent, fingerprint kept; the resume makes no second effect', async () => {
    const { server, effects } = await payments();
    const receipts = await refusedUrl();
    const store = new MemoryStore();
    const api = client(server, store);
    const intent = await api.intent('order:1');
    const charge = async ({ headers }: { headers: Record<string, string> }, second: boolean) => {
      const paid = await fetch(`${server.url}pay`, { method: 'POST', headers, body: '{"amount":1}' });
      await paid.text();
      if (second) await fetch(`${receipts}receipt`); // refused: nothing of *this* request left
      return { status: paid.status };
    };
    const error = await run(intent, (c) => charge(c, true), { request: { amount: 1 } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
    const record = await store.get('default', 'order:1');
    expect(record).toMatchObject({ state: 'unknown', key: intent.key });
    expect(record?.fingerprint).toMatch(/^v2\./);
    expect(effects(intent.key)).toBe(1);
    // The app that trusts the error resumes instead of resetting: the same key, no second charge.
    await expect(intent.reset()).rejects.toMatchObject({ code: 'INTENT_PENDING' });
    await run(intent, (c) => charge(c, false), { request: { amount: 1 } });
    expect(effects(intent.key)).toBe(1);
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  for (const transport of ['post()', 'intentFetch()'] as const)
    it(`${transport} through a client fetch that retries a network error by itself, its retry refused: unknown, sent`, async () => {
      // The first request charges and its connection drops; the server then goes away, so
      // the fetch's own retry, and every later attempt, is refused.
      let down: Promise<void> | undefined;
      const { server, effects } = await payments((n) => {
        if (n !== 1) return undefined;
        down = server.close();
        return 'drop';
      });
      const selfRetrying: typeof fetch = async (input, init) => {
        const request = new Request(input, init);
        try {
          return await fetch(request.clone());
        } catch {
          await down;
          return fetch(request);
        }
      };
      const store = new MemoryStore();
      const intent = await client(server, store, { fetch: selfRetrying }).intent('order:2');
      const call =
        transport === 'post()'
          ? intent.post('pay', { json: { amount: 2 } })
          : intentFetch(intent, 'pay', { method: 'POST', body: '{"amount":2}' });
      const error = await call.catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
      expect(effects(intent.key)).toBe(1);
      const record = await store.get('default', 'order:2');
      expect(record).toMatchObject({ state: 'unknown', key: intent.key });
      expect(record?.fingerprint).toMatch(/^v2\./);
    });

  it("a refusal thrown by the app's fetch proves nothing either: unknown with the key kept, not NotSentError", async () => {
    const { server } = await payments();
    const store = new MemoryStore();
    const refusing: typeof fetch = async () => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    };
    const intent = await client(server, store, { fetch: refusing }).intent('order:3');
    const error = await intent.post('pay', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, attempts: 3 });
    expect(await store.get('default', 'order:3')).toMatchObject({ state: 'unknown', key: intent.key });
  });

  it("oncely's own transport refused before a byte left is still not sent (rule 14): NotSentError, the intent as it was", async () => {
    const store = new MemoryStore();
    const api = createClient({ baseUrl: await refusedUrl(), store, retry: FAST });
    const intent = await api.intent('order:4');
    const error = await intent.post('pay', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_SENT', sent: false, attempts: 3 });
    const record = await store.get('default', 'order:4');
    expect(record).toMatchObject({ state: 'ready', attempts: 0 });
    expect(record?.fingerprint).toBeUndefined();
  });
});
