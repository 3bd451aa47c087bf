/**
 * Issue 19 §3: a fleet says what it waits for. A call held by another process's lease
 * emits `lease_wait` (waiting, then released or taken_over); an intent formed in a
 * transaction that never committed is refused as gone, naming that cause.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, LocalCoordinator, MemoryStore, type OncelyEvent } from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const leaseEvents = (events: OncelyEvent[]) =>
  events.flatMap((e) => (e.type === 'lease_wait' ? [{ phase: e.phase, holder: e.holder }] : []));

describe('lease_wait', () => {
  it('a process waiting on another process’s live lease hears waiting, then released', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = await wireServer(async (_req, n) => {
      if (n === 1) await held;
      return { status: 201, body: {} };
    });
    servers.push(server);
    const store = new MemoryStore();
    const proc = (onEvent?: (e: OncelyEvent) => void) =>
      createClient({
        baseUrl: server.url,
        store,
        coordinator: new LocalCoordinator(),
        ...(onEvent ? { onEvent } : {}),
      });
    const first = (await proc().intent('payout:1')).post('payouts', { json: { id: 1 } });
    await expect.poll(() => server.requests.length).toBe(1);
    const owner = (await store.get('default', 'payout:1'))?.lease?.owner;
    const events: OncelyEvent[] = [];
    const second = (await proc((e) => events.push(e)).intent('payout:1')).post('payouts', { json: { id: 1 } });
    await expect.poll(() => leaseEvents(events).length).toBe(1);
    release();
    await Promise.all([first, second]);
    expect(leaseEvents(events)).toEqual([
      { phase: 'waiting', holder: owner },
      { phase: 'released', holder: owner },
    ]);
  });

  it('a dead predecessor’s lease that ran out is taken over, and said so', async () => {
    const server = await wireServer(() => ({ status: 201, body: {} }));
    servers.push(server);
    const store = new MemoryStore();
    const events: OncelyEvent[] = [];
    const api = createClient({ baseUrl: server.url, store, onEvent: (e) => events.push(e) });
    const intent = await api.intent('payout:2');
    await store.update('default', 'payout:2', (r) =>
      r ? { ...r, state: 'in_flight', attempts: 1, lease: { owner: 'dead-worker:1', until: Date.now() - 1 } } : r,
    );
    await intent.post('payouts', { json: { id: 2 } });
    expect(leaseEvents(events)).toEqual([{ phase: 'taken_over', holder: 'dead-worker:1' }]);
  });
});

describe('an intent formed in a transaction that did not commit', () => {
  it('is refused as gone, naming the transaction', async () => {
    const store = new MemoryStore();
    const api = createClient({ baseUrl: 'http://127.0.0.1:9/', store });
    const intent = await api.intent('payout:3', { transaction: {} });
    await store.delete('default', 'payout:3'); // what a rollback leaves
    const error = await intent.post('payouts', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INTENT_GONE', reason: 'transaction', sent: false });
    expect((error as Error).message).toMatch(/transaction that has not committed, or rolled back/);
  });
});
