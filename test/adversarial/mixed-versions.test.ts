/**
 * Regression, from an adversarial review (F5; fixed: holds take only a free lock, never queue,
 * and a holder lets go of a lock someone waits for in the browser's queue, checked every
 * second). Was: A kept lock is let go only to a tab that ASKS over the BroadcastChannel. Any client that
 * takes the same Web Lock without asking — a tab still running the previous release (0.1.0's
 * WebLocksCoordinator.exclusive is a plain `navigator.locks.request('oncely:' + intentId)`,
 * same lock name, same channel) — waits for as long as the new tab keeps the component
 * mounted: its payment click never leaves. During a deploy both versions are open at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { IntentCoordinator } from '../../src/coordinator/coordinator.js';
import { createClient } from '../../src/index.js';
import { intentId } from '../../src/store/record-rules.js';
import { closeAll, heldIntent, setup } from './harness.js';

afterEach(closeAll);

/** What 0.1.0's WebLocksCoordinator does for a call (browser/cross-tab.ts at e19f17e, `exclusive`). */
class PreviousReleaseCoordinator implements IntentCoordinator {
  constructor(private readonly prefix: string) {}
  readonly coversStore = true;
  exclusive<T>(scope: string, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return navigator.locks.request(this.prefix + intentId(scope, name), signal ? { signal } : {}, () =>
      fn(),
    ) as Promise<T>;
  }
  publish() {}
  subscribe() {
    return () => {};
  }
}

describe('F5: a tab of the previous release while a new tab keeps the lock', () => {
  it("the old tab's call waits as long as the new tab's component is mounted", async () => {
    const { server, store, channel, tab } = await setup();
    await heldIntent(tab()); // new release, hook mounted: keeps the lock
    const old = createClient({
      baseUrl: server.url,
      store,
      coordinator: new PreviousReleaseCoordinator(`${channel}:`),
    });
    const intent = await old.intent('checkout:1');
    const outcome = await Promise.race([
      intent.post('pay', { json: { amount: 1 } }).then((r) => `sent ${r.status}`),
      new Promise<string>((r) => setTimeout(() => r('still waiting after 3 s'), 3000)),
    ]);
    expect(outcome).toBe('sent 201');
  });
});
