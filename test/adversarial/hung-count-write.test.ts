/**
 * Regression, from an adversarial review (F4; fixed: the count write goes through storeCall's
 * time bound, and a lost count is harmless). Was: The attempt-count write before a retry (`withMoreAttempts`, in sendCall's retry loop) is
 * awaited WITHOUT storeCall's time bound: a store that stops answering at that moment hangs the
 * call forever — and with it the intent's Web Lock, so every tab's call of that intent waits too.
 * (Pre-existing line, but the brief's "store that never answers" case; storeTimeout is meant to
 * bound every store call.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, MemoryStore } from '../../src/index.js';
import type { RecordUpdater } from '../../src/store/store.js';
import { closeAll, heldIntent, setup } from './harness.js';

afterEach(closeAll);

class StallingStore extends MemoryStore {
  updates = 0;
  stallFrom = Number.POSITIVE_INFINITY;
  override async update(scope: string, name: string, updater: RecordUpdater) {
    if (++this.updates >= this.stallFrom) return new Promise<never>(() => {});
    return super.update(scope, name, updater);
  }
}

const race = <T>(p: Promise<T>, ms: number) =>
  Promise.race([
    p.then(
      () => 'settled',
      (e: Error) => `rejected ${e.name}`,
    ),
    new Promise<string>((r) => setTimeout(() => r('HUNG'), ms)),
  ]);

describe('F4: a store that stops answering before a retry', () => {
  it('the call never settles although storeTimeout is 300 ms', async () => {
    const { server } = await setup((n) => (n === 1 ? { status: 503 } : { status: 201, body: { id: 'p' } }));
    const store = new StallingStore();
    const client = createClient({
      baseUrl: server.url,
      store,
      storeTimeout: 300,
      retry: { baseDelay: 1, maxDelay: 5 },
    });
    const intent = await client.intent('checkout:1');
    // The in_flight write answers, the next (the attempt count before the retry) never does.
    // Control: +3 (the outcome write) settles with a StoreError in ~300 ms.
    store.stallFrom = store.updates + 2;
    expect(await race(intent.post('pay', { json: { a: 1 } }), 3000)).not.toBe('HUNG');
  });

  it('…and another tab waiting for the intent hangs with it (kept lock)', async () => {
    const { tab } = await setup((n) => (n === 1 ? { status: 503 } : { status: 201, body: { id: 'p' } }));
    const a = tab({ storeTimeout: 300 });
    const intent = await heldIntent(a);
    const store = a.store as unknown as { update: MemoryStore['update'] };
    const original = store.update.bind(store);
    let n = 0;
    store.update = ((...args: Parameters<MemoryStore['update']>) =>
      ++n >= 2 ? new Promise<never>(() => {}) : original(...args)) as MemoryStore['update'];
    const first = intent.post('pay', { json: { a: 1 } });
    void first.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    const other = tab({ storeTimeout: 300 });
    const otherIntent = await other.intent('checkout:1');
    expect(await race(otherIntent.sync(), 3000)).not.toBe('HUNG');
  });
});
