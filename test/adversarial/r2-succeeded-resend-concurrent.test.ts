/**
 * From a second adversarial review of the kept lock (fixed: a live lease of another client is waited on whatever the state, and a late replay does not overrule a reset).
 *
 * `toInFlight` keeps `succeeded`: the in-flight lease check in `begin` only looks at
 * `in_flight`, so across processes (SQLite/PostgreSQL; no Web Locks, coversStore false) two
 * resends of a succeeded intent are in flight at once under one key — "one call in flight per
 * intent" no longer holds for a succeeded intent. The second process also steals the first's
 * lease (toInFlight overwrites it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, IdempotentMutationObserver, LocalCoordinator, MemoryStore } from '../../src/index.js';
import { wireServer } from '../helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c();
});

describe('two processes resend one succeeded intent', () => {
  it('both requests are in flight at the server at once; the first call loses its lease mid-call', async () => {
    let inside = 0;
    let most = 0;
    let first = true;
    const server = await wireServer(async () => {
      inside++;
      most = Math.max(most, inside);
      if (!first) await new Promise((r) => setTimeout(r, 300));
      first = false;
      inside--;
      return { status: 201, headers: { 'Idempotent-Replayed': 'true' }, body: { id: 'p' } };
    });
    closing.push(() => server.close());
    const store = new MemoryStore();
    const proc = () =>
      createClient({
        baseUrl: server.url,
        store,
        coordinator: new LocalCoordinator(),
        retry: { baseDelay: 1, maxDelay: 5 },
      });
    const a = await proc().intent('order:1');
    await a.post('orders', { json: { x: 1 } });
    const b = await proc().intent('order:1');
    const one = a.post('orders', { json: { x: 1 } });
    await new Promise((r) => setTimeout(r, 50));
    const mid = await store.get('default', 'order:1');
    const two = b.post('orders', { json: { x: 1 } });
    await new Promise((r) => setTimeout(r, 50));
    const stolen = await store.get('default', 'order:1');
    await Promise.all([one, two]);
    expect({ most, leaseChangedHands: mid?.lease?.owner !== stolen?.lease?.owner }).toEqual({
      most: 1,
      leaseChangedHands: false,
    });
  });

  it("the hook's forget() in process B while process A resends a succeeded intent: refused (a live lease), forced it is, and the new key stays", async () => {
    let open = () => {};
    const gate = new Promise<void>((r) => (open = r));
    let n = 0;
    const server = await wireServer(async () => {
      if (++n > 1) await gate;
      return { status: 201, body: { id: 'p' } };
    });
    closing.push(() => server.close());
    const store = new MemoryStore();
    const proc = () =>
      createClient({
        baseUrl: server.url,
        store,
        coordinator: new LocalCoordinator(),
        retry: { baseDelay: 1, maxDelay: 5 },
      });
    const a = await proc().intent('order:1');
    await a.post('orders', { json: { x: 1 } });
    const resend = a.post('orders', { json: { x: 1 } });
    await new Promise((r) => setTimeout(r, 50));
    const o = new IdempotentMutationObserver({
      client: proc(),
      intent: 'order:1',
      request: (_v, { intent, signal }) => intent.post('orders', { json: { x: 1 }, signal }),
    });
    const off = o.subscribe(() => {});
    await expect.poll(() => o.getState().key).toBe(a.key);
    // A's resend is on the wire under a live lease (issue 17): not forgotten unless forced.
    const refused = await o.forget().then(
      () => 'forgotten',
      (e: Error) => e.name,
    );
    const forgot = await o.forget({ force: true }).then(
      () => 'forgotten',
      (e: Error) => e.name,
    );
    open();
    await resend;
    const stored = await store.get('default', 'order:1');
    off();
    // The intent had succeeded: a new order may start, and A's late replay does not overrule it.
    expect({ refused, forgot, storedKey: stored?.key === a.key ? 'old key back' : 'new key' }).toEqual({
      refused: 'IntentPendingError',
      forgot: 'forgotten',
      storedKey: 'new key',
    });
  });
});
