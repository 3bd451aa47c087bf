/**
 * Issue 18 §3b: a tab whose kept-lock send died after its in_flight write and before its
 * BroadcastChannel message left. The other tab takes the lock back, reads the intent in
 * flight under it, and must show and resume it (same key), never stay idle.
 */
import { afterEach, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { createClient, IdempotentMutationObserver, MemoryStore } from '../../src/index.js';
import { wireServer } from '../helpers/wire-server.js';
import { closeAll, closing } from './harness.js';

afterEach(closeAll);

it('the tab that takes the lock back from a dead sender shows the intent in flight and resumes it under its key', async () => {
  const server = await wireServer(() => ({ status: 201, body: { id: 'pay_1' } }));
  closing.push(() => server.close());
  const store = new MemoryStore();
  const lockPrefix = `oncely-takeover-${process.pid}:`;
  const coordinator = new WebLocksCoordinator({ channel: `${lockPrefix}b`, lockPrefix });
  closing.push(() => coordinator.close());
  const b = createClient({ baseUrl: server.url, store, coordinator, retry: { baseDelay: 1, maxDelay: 5 } });
  const observer = new IdempotentMutationObserver({
    client: b,
    intent: 'checkout:1',
    request: (_v: undefined, { intent, signal }) => intent.post('pay', { json: { cart: 1 }, signal }),
  });
  closing.push(observer.subscribe(() => {}));
  await expect.poll(() => observer.getState().key).toBeDefined();
  expect(observer.getState().status).toBe('idle');

  // Tab A (its own channel: its message never reaches B) takes the lock, writes in_flight, dies.
  const a = new WebLocksCoordinator({ channel: `${lockPrefix}a`, lockPrefix });
  closing.push(() => a.close());
  await a.exclusive('default', 'checkout:1', async () => {
    await store.update('default', 'checkout:1', (r) =>
      r ? { ...r, state: 'in_flight', attempts: 1, updatedAt: r.updatedAt + 1 } : r,
    );
  });

  await expect.poll(() => observer.getState().status, { timeout: 5_000 }).toBe('success');
  expect(server.requests).toHaveLength(1);
  expect(server.requests[0]?.headers['idempotency-key']).toBe(`"${observer.getState().key}"`);
});
