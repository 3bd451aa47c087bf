/** The default store of `createClient` from `oncely` in Node: SQLite in the state directory, one per file per process. */
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient } from '../node/default.js';
import { openSqliteStore, SqliteStore } from '../node/sqlite-store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { wireServer } from './helpers/wire-server.js';
import { runStoreConformance } from './store-conformance.js';

const saved = process.env.ONCELY_STATE_DIR;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (saved === undefined) delete process.env.ONCELY_STATE_DIR;
  else process.env.ONCELY_STATE_DIR = saved;
});

describe('createClient in Node', () => {
  it('keeps keys in intents.db of the state directory, one store shared by the clients of the process', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    process.env.ONCELY_STATE_DIR = dir;
    const a = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    const b = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    const [first, second] = await Promise.all([a.intent('checkout:1'), b.intent('checkout:1')]);
    expect(second.key).toBe(first.key);
    await a.close();
    // The other client keeps working after the first one closed.
    expect((await b.intent('checkout:1')).key).toBe(first.key);
    expect((await b.intent('checkout:2')).key).not.toBe(first.key);
    await b.close();
    const store = await openSqliteStore({ dir });
    expect(store.file).toBe(path.join(dir, 'intents.db'));
    expect((await store.get('u1', 'checkout:1'))?.key).toBe(first.key);
    await store.close();
    // A client made after every other closed opens the store again.
    const c = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    expect((await c.intent('checkout:1')).key).toBe(first.key);
    await c.close();
  });
});

/** The default client's store as `createClient()` builds it (a view of the process's shared SqliteStore). */
const defaultStoreIn = (dir: string) => {
  const before = process.env.ONCELY_STATE_DIR;
  process.env.ONCELY_STATE_DIR = dir;
  try {
    return createClient({ baseUrl: 'https://api.test/' }).store;
  } finally {
    if (before === undefined) delete process.env.ONCELY_STATE_DIR;
    else process.env.ONCELY_STATE_DIR = before;
  }
};
runStoreConformance('createClient() in Node: its default store', async () => {
  const { dir, remove } = await tempStoreDir();
  return { store: defaultStoreIn(dir), reopen: async () => defaultStoreIn(dir), cleanup: remove };
});

describe('issue 26, 1: reset() and clear() racing a send on the default client', () => {
  const races = [
    ['reset()', 'post()', 'delete'],
    ['clear()', 'post()', 'clear'],
    ['reset()', 'send()', 'delete'],
  ] as const;
  for (const [forget, send, method] of races)
    it(`${forget} that found the intent ready, then ${send} marks it in flight: refused (IntentPendingError), the record kept`, async () => {
      const { dir, remove } = await tempStoreDir();
      cleanups.push(remove);
      process.env.ONCELY_STATE_DIR = dir;
      let answer = () => {};
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      const s = await wireServer(async () => {
        await answered;
        return { status: 201, body: { id: 'p1' } };
      });
      cleanups.push(() => s.close());
      const sender = createClient({ baseUrl: s.url, retry: { timeout: 5_000, deadline: 10_000 } });
      const other = createClient({ baseUrl: s.url }); // another client of the process: the same default store
      cleanups.push(async () => {
        await sender.close();
        await other.close();
      });
      const intent = await other.intent('order:1');
      // The store's own write of reset()/clear() lands once the request is on the wire: the
      // client's check before it saw the intent ready, so only the store can keep it.
      let wire = () => {};
      const onWire = new Promise<void>((resolve) => {
        wire = resolve;
      });
      const real = SqliteStore.prototype[method] as (...args: unknown[]) => Promise<void>;
      vi.spyOn(SqliteStore.prototype, method).mockImplementation(async function (
        this: SqliteStore,
        ...args: unknown[]
      ) {
        await onWire;
        return real.apply(this, args);
      });
      const forgetting = (forget === 'reset()' ? intent.reset() : other.clear()).then(
        () => 'forgotten',
        (error: unknown) => error,
      );
      const sending =
        send === 'post()'
          ? (await sender.intent('order:1')).post('pay', { json: { amount: 1 } })
          : sender.send('order:1', 'POST', 'pay', { json: { amount: 1 } });
      while (s.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      wire();
      expect(await forgetting).toMatchObject({ code: 'INTENT_PENDING', names: ['order:1'] });
      expect(await other.store.get('default', 'order:1')).toMatchObject({ key: intent.key, state: 'in_flight' });
      answer();
      expect(await sending).toMatchObject({ status: 201, key: intent.key });
      expect((await other.pending()).map((p) => p.name)).toEqual([]);
      expect(await other.store.get('default', 'order:1')).toMatchObject({ key: intent.key, state: 'succeeded' });
      expect(new Set(s.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    });
});

describe('default clients of one process share the coordination of their shared store', () => {
  it('a second client sending the same intent waits its turn in the process, not on the lease', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    process.env.ONCELY_STATE_DIR = dir;
    const server = await wireServer(async () => {
      await new Promise((r) => setTimeout(r, 300));
      return { status: 201, body: { id: 'pay_1' } };
    });
    cleanups.push(() => server.close());
    const events: string[] = [];
    const a = createClient({ baseUrl: server.url, scope: 'u1' });
    const b = createClient({ baseUrl: server.url, scope: 'u1', onEvent: (e) => events.push(e.type) });
    cleanups.push(async () => {
      await a.close();
      await b.close();
    });
    const [ia, ib] = await Promise.all([a.intent('checkout:c'), b.intent('checkout:c')]);
    const [ra, rb] = await Promise.all([ia.post('pay', { json: { n: 1 } }), ib.post('pay', { json: { n: 1 } })]);
    expect(ra.status).toBe(201);
    expect(rb.key).toBe(ra.key);
    // b's turn came after a's, in the process: no wait on a's lease (a resend of the settled
    // intent, under the same key, asks the server for its replay).
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(events).not.toContain('lease_wait');
  });
});
