/**
 * `client.send()` (issue 19 §2): form and send in one go. The claim and the `in_flight`
 * write are one store write, with the guarantees of `intent()` + `request()`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, type IntentRecord, LocalCoordinator, MemoryStore, type RecordUpdater } from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Logs each store call, and what was stored when each request arrived. */
class LoggingStore extends MemoryStore {
  readonly log: string[] = [];
  override async claim(fresh: IntentRecord) {
    this.log.push('claim');
    return super.claim(fresh);
  }
  override async update(scope: string, name: string, updater: RecordUpdater) {
    const stored = await super.update(scope, name, updater);
    this.log.push(`update ${stored?.state ?? 'nothing'}`);
    return stored;
  }
}

async function setup(reply = () => ({ status: 201, body: { id: 'p' } }) as const) {
  const store = new LoggingStore();
  const seen: (string | undefined)[] = [];
  const server = await wireServer(async () => {
    seen.push((await store.get('default', 'payout:1'))?.state);
    return reply();
  });
  servers.push(server);
  const api = createClient({ baseUrl: server.url, store, retry: { baseDelay: 1, maxDelay: 5 } });
  return { store, seen, server, api };
}

describe('client.send()', () => {
  it('a fresh intent costs one write before the first byte (no claim) and one for the outcome', async () => {
    const { store, seen, server, api } = await setup();
    const response = await api.send('payout:1', 'POST', 'payouts', { json: { amount: 5 } });
    expect(response).toMatchObject({ status: 201, intent: 'payout:1' });
    expect(store.log).toEqual(['update in_flight', 'update succeeded']);
    expect(seen).toEqual(['in_flight']); // durable and in flight before the request arrived
    expect(server.requests[0]?.headers['idempotency-key']).toBe(`"${response.key}"`);
    expect((await store.get('default', 'payout:1'))?.key).toBe(response.key);
  });

  it('an intent formed before is sent under its stored key', async () => {
    const { server, api } = await setup();
    const formed = await api.intent('payout:1');
    const response = await api.send('payout:1', 'POST', 'payouts', { json: { amount: 5 } });
    expect(response.key).toBe(formed.key);
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${formed.key}"`]);
  });

  it('sent again (a retried job) it gets the replay under the same key, never a second key', async () => {
    const { server, api } = await setup();
    const first = await api.send('payout:1', 'POST', 'payouts', { json: { amount: 5 } });
    const second = await api.send('payout:1', 'POST', 'payouts', { json: { amount: 5 } });
    expect(second.key).toBe(first.key);
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('two processes sending one intent at once: one key, the second finds it in flight and waits', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store = new MemoryStore();
    const server = await wireServer(async (_req, n) => {
      if (n === 1) await held;
      return { status: 201, body: {} };
    });
    servers.push(server);
    const proc = () => createClient({ baseUrl: server.url, store, coordinator: new LocalCoordinator() });
    const a = proc().send('payout:2', 'POST', 'payouts', { json: {} });
    await expect.poll(() => server.requests.length).toBe(1);
    const b = proc().send('payout:2', 'POST', 'payouts', { json: {} });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests).toHaveLength(1); // waiting on a's lease
    release();
    const [ra, rb] = await Promise.all([a, b]);
    expect(rb.key).toBe(ra.key);
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('nothing sent (connection refused): the intent stays formed, ready, under its key', async () => {
    const store = new MemoryStore();
    const closed = await wireServer(() => ({ status: 201 }));
    await closed.close(); // nothing listens there any more: connections are refused
    const api = createClient({ baseUrl: closed.url, store, retry: { baseDelay: 1, maxDelay: 5 } });
    const error = await api.send('payout:3', 'POST', 'payouts', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_SENT', sent: false });
    const record = await store.get('default', 'payout:3');
    expect(record).toMatchObject({ state: 'ready', key: (error as { key: string }).key });
  });
});
