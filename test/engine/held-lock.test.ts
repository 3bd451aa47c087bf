/**
 * The click's path (issue 13): with the intent's lock kept (`intent.hold()`, Web Locks),
 * the request leaves without waiting for the store, and the `in_flight` write goes out
 * with it. What must still hold: the write lands, every later write waits for it, a sent
 * intent is never forgotten (not even when the record was deleted or replaced meanwhile
 * by something that writes without the lock), and two tabs still send one at a time.
 * Node 24's Web Locks and BroadcastChannel stand in for the tabs'; a real HTTP server.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { type Client, type ClientOptions, createClient, IntentGoneError, StoreError } from '../../src/index.js';
import { intentId } from '../../src/store/record-rules.js';
import type { IntentRecord } from '../../src/store/store.js';
import { GatedStore, NoteMap } from '../adversarial/harness.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

let channels = 0;
async function setup(handler: (n: number) => Reply = () => ({ status: 201, body: { id: 'pay_1' } })) {
  const log: string[] = [];
  const server: WireServer = await wireServer((_req, n) => {
    log.push('request');
    return handler(n);
  });
  closing.push(() => server.close());
  const store = new GatedStore(log);
  store.logKeys = false;
  const notes = new NoteMap();
  const channel = `oncely-held-${process.pid}-${channels++}`;
  const tab = (options: Partial<ClientOptions> = {}): Client => {
    const coordinator = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes });
    const client = createClient({
      baseUrl: server.url,
      store,
      coordinator,
      retry: { baseDelay: 1, maxDelay: 5 },
      ...options,
    });
    closing.push(() => coordinator.close());
    return client;
  };
  return { log, server, store, notes, channel, tab };
}

/** Forms the intent and keeps its lock, resolving once its record was read under the lock. */
async function heldIntent(client: Client, name = 'checkout:1') {
  const intent = await client.intent(name);
  closing.push(intent.hold());
  await intent.sync();
  return intent;
}

const body = { amount: 1999 };

describe('a kept lock: the request leaves with the in_flight write', () => {
  it('the request reaches the server while the in_flight write is still held back; the write lands, then the outcome', async () => {
    const { log, server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    store.holdWrites();
    const call = intent.post('pay', { json: body });
    await expect.poll(() => server.requests.length).toBe(1);
    expect((await store.get(intent.scope, intent.name))?.state).toBe('ready');
    store.releaseWrites();
    const res = await call;
    expect(res.status).toBe(201);
    expect(log).toEqual(['request', 'stored in_flight', 'stored succeeded']);
    const stored = (await store.get(intent.scope, intent.name))!;
    expect(stored).toMatchObject({ key: intent.key, state: 'succeeded', attempts: 1 });
    expect(stored.fingerprint).toMatch(/^v2\./);
    expect(stored.lease).toBeUndefined();
  });

  it('without a kept lock the in_flight write lands before the first byte, as always', async () => {
    const { log, tab } = await setup();
    const intent = await tab().intent('checkout:1');
    await intent.post('pay', { json: body });
    expect(log).toEqual(['stored in_flight', 'request', 'stored succeeded']);
  });

  it('a call on an intent already sent takes the strict path: its write lands before its request', async () => {
    const { log, server, tab } = await setup();
    const intent = await heldIntent(tab());
    await intent.post('pay', { json: body });
    log.length = 0;
    // No bodies are stored: the same key is sent again for the server's replay; it stays succeeded.
    await intent.post('pay', { json: body });
    expect(log).toEqual(['stored succeeded', 'request', 'stored succeeded']);
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key']))).toEqual(new Set([`"${intent.key}"`]));
  });

  it('a record deleted meanwhile without the lock (reset, clear, sweep elsewhere) is put back: a sent intent is never forgotten', async () => {
    const { store, tab } = await setup();
    const intent = await heldIntent(tab());
    await store.delete(intent.scope, intent.name);
    await intent.post('pay', { json: body });
    expect(await store.get(intent.scope, intent.name)).toMatchObject({ key: intent.key, state: 'succeeded' });
  });

  it('another key claimed in its place meanwhile loses to the sent one; sending that key is refused, nothing sent twice', async () => {
    const { server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    await store.delete(intent.scope, intent.name);
    const other = await tab().intent('checkout:1');
    expect(other.key).not.toBe(intent.key);
    await intent.post('pay', { json: body });
    expect(await store.get(intent.scope, intent.name)).toMatchObject({ key: intent.key, state: 'succeeded' });
    await expect(other.post('pay', { json: body })).rejects.toBeInstanceOf(IntentGoneError);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${intent.key}"`]);
  });

  it('an in_flight write that fails does not lose the outcome: the settle write records it, fingerprint included', async () => {
    const { store, tab } = await setup();
    const intent = await heldIntent(tab());
    store.failNext = 1;
    const res = await intent.post('pay', { json: body });
    expect(res.status).toBe(201);
    const stored = (await store.get(intent.scope, intent.name))!;
    expect(stored).toMatchObject({ key: intent.key, state: 'succeeded', attempts: 1 });
    expect(stored.fingerprint).toMatch(/^v2\./);
  });

  it('when every write of a success fails after the request left: the answer, an unsaved StoreError that says an attempt went out; the key stays', async () => {
    const { server, store, tab } = await setup();
    const client = tab();
    const unsaved: unknown[] = [];
    client.on('unsaved', (event) => unsaved.push(event.error));
    const intent = await heldIntent(client);
    store.failNext = 2;
    await expect(intent.post('pay', { json: body })).resolves.toMatchObject({ status: 201 });
    await client.pending(); // the outcome write was queued: a read waits for it
    const [error] = unsaved;
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toMatch(/An attempt had gone out/);
    expect(server.requests).toHaveLength(1);
    expect((await store.get(intent.scope, intent.name))?.key).toBe(intent.key);
  });

  it('two tabs that both keep the lock and pay together send one request, one at a time', async () => {
    let inside = 0;
    let overlap = false;
    const { server, tab } = await setup(() => {
      if (++inside > 1) overlap = true;
      return new Promise((resolve) =>
        setTimeout(() => {
          inside--;
          resolve({ status: 201, body: { id: 'pay_1' } });
        }, 30),
      ) as never;
    });
    const [a, b] = [await heldIntent(tab()), await heldIntent(tab())];
    expect(b.key).toBe(a.key);
    const [ra, rb] = await Promise.all([a.post('pay', { json: body }), b.post('pay', { json: body })]);
    expect([ra.status, rb.status]).toEqual([201, 201]);
    // The second tab sends after the first one's call ended, with the same key (for the replay).
    expect(overlap).toBe(false);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${a.key}"`, `"${a.key}"`]);
  });

  it('an unsent call (connection refused) puts the record back to ready: unsent, no fingerprint, no attempt', async () => {
    const { log, server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    await server.close();
    await expect(intent.post('pay', { json: body })).rejects.toBeDefined();
    const record: IntentRecord | undefined = await store.get(intent.scope, intent.name);
    expect(record).toMatchObject({ key: intent.key, state: 'ready', attempts: 0 });
    expect(record?.fingerprint).toBeUndefined();
    expect(log).not.toContain('request');
  });

  it('the request is handed to fetch within the call itself (no wait for a lock, the store or a microtask), after its note', async () => {
    const { notes, tab } = await setup();
    const handed: { notes: number; events: string[] }[] = [];
    const events: string[] = [];
    const client = tab({
      fetch: (input, init) => {
        handed.push({ notes: notes.map.size, events: [...events] });
        return globalThis.fetch(input, init);
      },
      onEvent: (event) => events.push(event.type),
    });
    const intent = await heldIntent(client);
    events.length = 0;
    const call = intent.post('pay', { json: body });
    expect(handed).toEqual([{ notes: 1, events: [] }]);
    expect(events).toEqual(['attempt']); // told once the request was handed over
    await expect(call).resolves.toMatchObject({ status: 201, attempts: 1 });
  });

  it('a note of the sent intent is written before the request leaves (localStorage), and dropped once the write lands', async () => {
    const { server, store, notes, tab } = await setup();
    const intent = await heldIntent(tab());
    store.holdWrites();
    const call = intent.post('pay', { json: body });
    await expect.poll(() => server.requests.length).toBe(1);
    const [note] = [...notes.map.values()].map((text) => JSON.parse(text) as IntentRecord);
    expect(note).toMatchObject({ key: intent.key, state: 'in_flight', attempts: 1 });
    expect(note?.fingerprint).toMatch(/^v2\./);
    store.releaseWrites();
    await call;
    expect(notes.map.size).toBe(0);
  });

  it('a page gone before its in_flight write landed: the next tab to take the lock stores the intent as sent, and resumes it with its key', async () => {
    const { server, store, notes, tab } = await setup();
    const first = await heldIntent(tab());
    store.failNext = 2; // the in_flight write and the outcome's never land: as if the tab died
    await expect(first.post('pay', { json: body })).resolves.toMatchObject({ status: 201 }); // unsaved
    expect((await store.get(first.scope, first.name))?.state).toBe('ready');
    expect(notes.map.size).toBe(1);

    const second = await tab().intent('checkout:1');
    expect(second.key).toBe(first.key);
    expect(second.state).toBe('ready'); // read outside the lock: the note is not applied
    const record = await second.sync(); // under the lock: it is
    expect(record).toMatchObject({ key: first.key, state: 'in_flight', attempts: 1 });
    expect(record.fingerprint).toMatch(/^v2\./);
    expect(notes.map.size).toBe(0);
    await second.post('pay', { json: body });
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${first.key}"`, `"${first.key}"`]);
  });

  it('a note never brings back a key over another sent one, and a garbled note is ignored', async () => {
    const { store, notes, channel, tab } = await setup();
    const intent = await heldIntent(tab());
    await intent.post('pay', { json: body });
    const noteName = `${channel}:sent:${intentId(intent.scope, intent.name)}`;
    const sent = (await store.get(intent.scope, intent.name))!;
    for (const text of ['{not json', JSON.stringify({ ...sent, key: 'someone-else', state: 'in_flight' })]) {
      notes.map.set(noteName, text);
      expect(await intent.sync()).toMatchObject({ key: intent.key, state: 'succeeded' });
      expect(await store.get(intent.scope, intent.name)).toMatchObject({ key: intent.key, state: 'succeeded' });
    }
  });
});
