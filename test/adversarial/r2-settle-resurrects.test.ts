/**
 * From a second adversarial review of the kept lock (fixed: only a call started under a kept lock puts a sent intent back over another record; a strict call's outcome writes over its own key only).
 *
 * Node, two processes (two clients over one store, each with its own in-process coordinator,
 * as SQLite/PostgreSQL processes are): the outcome write `settle` now goes over
 * `toInFlightOver(c, sending)`, so a late outcome of a call re-creates a record that was
 * deleted (reset by the app) during the call, and overwrites the *new* key's `ready` record
 * claimed in its place. With `toInFlight` keeping `succeeded`, a replay-resend of a succeeded
 * intent looks `succeeded` (not busy) to the other process, which legitimately resets it and
 * forms a new operation. The new operation is then lost: its key is gone, and the name gives
 * the old key back, whose send replays the OLD order as a success.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, LocalCoordinator, MemoryStore } from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c();
});

/** An IETF-style server: first request of a key takes effect (an order), later ones replay. */
async function orderServer() {
  const orders = new Map<string, number>();
  let gate: Promise<void> | undefined;
  let open = () => {};
  const server: WireServer = await wireServer(async (req) => {
    const key = String(req.headers['idempotency-key']);
    if (gate) await gate;
    const seen = orders.get(key);
    if (seen !== undefined) return { status: 201, headers: { 'Idempotent-Replayed': 'true' }, body: { order: seen } };
    orders.set(key, orders.size + 1);
    return { status: 201, body: { order: orders.size } };
  });
  closing.push(() => server.close());
  return {
    server,
    orders,
    slow() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      gate = undefined;
      open();
    },
  };
}

const processOf = (url: string, store: MemoryStore) =>
  createClient({ baseUrl: url, store, coordinator: new LocalCoordinator(), retry: { baseDelay: 1, maxDelay: 5 } });

describe('settle re-creates a record reset during the call (Node, no Web Locks)', () => {
  it("a replay-resend in process A overwrites process B's new operation after B reset the succeeded intent", async () => {
    const { server, orders, slow, release } = await orderServer();
    const store = new MemoryStore();
    const a = processOf(server.url, store);
    const b = processOf(server.url, store);

    const first = await a.intent('order:42');
    await first.post('orders', { json: { item: 'book' } }); // order 1, succeeded
    // A resends it (a retried HTTP handler / double submit): the server is slow to replay.
    slow();
    const resend = first.post('orders', { json: { item: 'book' } });
    await expect.poll(() => server.requests.length).toBe(2);
    // Meanwhile B sees the intent succeeded (toInFlight keeps `succeeded`: no sign of a call) ...
    const seen = await b.intent('order:42');
    expect(seen.state).toBe('succeeded');
    // ... and resets it to form a new operation: refused while A's resend holds a live lease
    // (issue 17), so B forces it (the app knows it is a new purchase): A must not overrule it.
    await expect(seen.reset()).rejects.toMatchObject({ code: 'INTENT_PENDING' });
    await seen.reset({ force: true });
    const second = await b.intent('order:42');
    expect(second.key).not.toBe(first.key);
    release();
    await resend; // A's late replay outcome lands

    const stored = await store.get('default', 'order:42');
    const sent = await second.post('orders', { json: { item: 'book' } }).then(
      (r) => `order ${(r.data as { order: number }).order}${r.replayed ? ' (replayed)' : ''}`,
      (e: Error) => e.name,
    );
    // The app retries the way the hook would after a reload: form the intent again and send.
    const again = await b.intent('order:42');
    const retried = await again.post('orders', { json: { item: 'book' } }).then(
      (r) => `order ${(r.data as { order: number }).order}${r.replayed ? ' (replayed)' : ''}`,
      (e: Error) => e.name,
    );
    expect({
      storedKey: stored?.key === second.key ? 'new key' : 'old key (resurrected)',
      sent,
      retried,
      ordersPlaced: orders.size,
    }).toEqual({ storedKey: 'new key', sent: 'order 2', retried: 'order 2 (replayed)', ordersPlaced: 2 });
  });

  it('client.clear() (logout) during a call: the late outcome puts the record back in the cleared scope', async () => {
    const { server, slow, release } = await orderServer();
    const store = new MemoryStore();
    const a = processOf(server.url, store);
    const b = processOf(server.url, store);
    const intent = await a.intent('order:7');
    slow();
    const call = intent.post('orders', { json: { item: 'pen' } });
    await expect.poll(() => server.requests.length).toBe(1);
    // The user logged out: refused while the call is on the wire (issue 17); forced, every
    // intent of the scope is removed, and the late outcome must not put one back.
    await expect(b.clear()).rejects.toMatchObject({ code: 'INTENT_PENDING', names: ['order:7'] });
    await b.clear({ force: true });
    release();
    await call;
    expect(await store.list('default', ['ready', 'in_flight', 'unknown', 'succeeded', 'failed'])).toEqual([]);
  });
});
