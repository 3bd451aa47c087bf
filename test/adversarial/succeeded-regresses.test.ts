/**
 * Regression, from an adversarial review (F6; fixed: a resend of a `succeeded` intent keeps
 * it `succeeded` in its in_flight write). Was: F6 (found by random-tabs.test.ts; strict path, pre-existing). Resending a `succeeded` intent
 * (a click after success replays it under the same key) first writes it `in_flight` over
 * `succeeded`. If that call's outcome write then fails (or the tab dies before it), `succeeded`
 * is lost: the next call starts from `in_flight` (counted as doubt), and a resend that gets no
 * answer makes the intent `unknown` — forget() now refuses and pending() reports a paid order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, MemoryStore } from '../../src/index.js';
import type { RecordUpdater } from '../../src/store/store.js';
import { closeAll, setup } from './harness.js';

afterEach(closeAll);

class CountingStore extends MemoryStore {
  n = 0;
  failAt = new Set<number>();
  override async update(scope: string, name: string, updater: RecordUpdater) {
    if (this.failAt.has(++this.n)) throw new Error('disk full');
    return super.update(scope, name, updater);
  }
}

describe('F6: succeeded → in_flight → unknown', () => {
  it('a succeeded intent ends unknown after a replay whose outcome write failed, then a resend with no answer', async () => {
    const { server } = await setup((n) => (n <= 2 ? { status: 201, body: { id: 'p' } } : 'drop'));
    const store = new CountingStore();
    const client = createClient({ baseUrl: server.url, store, retry: { baseDelay: 1, maxDelay: 5, maxAttempts: 2 } });
    const intent = await client.intent('checkout:1');
    await intent.post('pay', { json: { a: 1 } });
    expect((await store.get(intent.scope, intent.name))?.state).toBe('succeeded');
    store.failAt.add(store.n + 2); // the replay's outcome write (after its in_flight write)
    await intent.post('pay', { json: { a: 1 } }).catch(() => undefined); // server replays 201
    await intent.post('pay', { json: { a: 1 } }).catch(() => undefined); // no answer
    expect((await store.get(intent.scope, intent.name))?.state).toBe('succeeded');
  });
});
