/**
 * Regression, from an adversarial review (F3; fixed: a closed coordinator keeps no lock).
 * Was: After `close()` a WebLocksCoordinator still takes and keeps Web Locks through `hold()`
 * (LockHolds survives close; only its current holds are let go), but its BroadcastChannel is
 * closed for good: it never hears another tab ask. The other tab's call for that intent then
 * waits for as long as the closed client's component stays mounted (here: forever).
 * Reachable through the hook: `client.close()` (logout) while an observer stays subscribed, then
 * any resubscribe (StrictMode remount, a re-render that re-subscribes) calls intent.hold().
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { createClient, IdempotentMutationObserver, MemoryStore } from '../../src/index.js';
import { closeAll, closing } from './harness.js';

afterEach(closeAll);
let n = 0;
const race = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p.then(() => 'ran'), new Promise<string>((r) => setTimeout(() => r('still waiting'), ms))]);

describe('F3: a closed coordinator keeps a lock no one can ask for', () => {
  it('coordinator-level: hold() after close() keeps the lock; another tab waits forever', async () => {
    const channel = `oncely-attack-closed-${process.pid}-${n++}`;
    const a = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    const b = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    closing.push(() => b.close());
    a.exclusive('u', 'pay', async () => undefined); // a has been used
    a.close();
    let held = false;
    const release = a.hold('u', 'pay', async () => {
      held = true;
    });
    closing.push(release);
    expect(
      await race(
        b.exclusive('u', 'pay', async () => 'b'),
        1500,
      ),
    ).toBe('ran');
    expect(held).toBe(false); // closed, it keeps no lock
  });

  it("hook-level: client.close() while subscribed, then a resubscribe: the other tab's click never runs", async () => {
    const channel = `oncely-attack-closed-${process.pid}-${n++}`;
    const store = new MemoryStore();
    const fetch = async () =>
      new Response(JSON.stringify({ id: 'p' }), { status: 201, headers: { 'content-type': 'application/json' } });
    const client = (coordinator: WebLocksCoordinator) =>
      createClient({ baseUrl: 'http://x.test/', store, coordinator, fetch });
    const ca = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    const cb = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    closing.push(() => cb.close());
    const tabA = client(ca);
    const tabB = client(cb);
    const observer = new IdempotentMutationObserver({
      client: tabA,
      intent: 'checkout:1',
      request: (_v, { intent, signal }) => intent.post('pay', { json: { a: 1 }, signal }),
    });
    let off = observer.subscribe(() => {});
    await expect.poll(() => observer.getState().key).toBeDefined();
    await tabA.close(); // logout: the client is closed, the component is still on screen
    off();
    off = observer.subscribe(() => {}); // StrictMode / remount: #load → intent.hold()
    closing.push(off);
    await new Promise((r) => setTimeout(r, 100));
    const other = await tabB.intent('checkout:1');
    expect(await race(other.post('pay', { json: { a: 1 } }), 1500)).toBe('ran');
  });
});
