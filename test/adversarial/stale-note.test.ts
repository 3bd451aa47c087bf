/**
 * Regression, from an adversarial review (F2; fixed: a note is also dropped when the call
 * sent nothing or its outcome write landed, and `reset()` drops its key's note). Was: The note of a warm send is dropped only when its in_flight write lands. When that write
 * fails and the call then proves unsent (connection refused), the undo finds nothing to undo
 * and the note stays: the next read under the lock (any tab's hook mount, `sync()`, forget())
 * stores a never-sent intent as `in_flight` (attempt 1, fingerprint bound). The hook then
 * auto-resumes it (a request the user was told never left), and forget() refuses it.
 * A stale note also beats a newer key's ready record (toInFlightOver over another key).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IdempotentMutationObserver } from '../../src/index.js';
import { closeAll, heldIntent, setup } from './harness.js';

afterEach(closeAll);
const body = { amount: 1999 };

describe('F2: a note left by an unsent warm call whose in_flight write failed', () => {
  it('a never-sent intent is stored as in_flight by the next read under the lock', async () => {
    const { server, store, notes, tab } = await setup();
    const intent = await heldIntent(tab());
    await server.close(); // connection refused: provably unsent
    store.failNext = 1; // ...and the warm in_flight write fails
    await expect(intent.post('pay', { json: body })).rejects.toBeDefined();
    expect(server.requests).toHaveLength(0);
    expect(await store.get(intent.scope, intent.name)).toMatchObject({ state: 'ready', attempts: 0 });
    expect(notes.map.size).toBe(0); // FAILS: the note of a send that never happened is still there
  });

  it("… which another tab's read under the lock turns into in_flight; forget() then refuses", async () => {
    const { server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    await server.close();
    store.failNext = 1;
    await expect(intent.post('pay', { json: body })).rejects.toBeDefined();
    const other = await tab().intent('checkout:1');
    const record = await other.sync();
    expect({ state: record.state, attempts: record.attempts, fingerprint: record.fingerprint }).toEqual({
      state: 'ready',
      attempts: 0,
      fingerprint: undefined,
    });
  });

  it('the observer in another tab refuses forget() for an intent that was never sent', async () => {
    const { server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    await server.close();
    store.failNext = 1;
    await expect(intent.post('pay', { json: body })).rejects.toBeDefined();
    const observer = new IdempotentMutationObserver({
      client: tab(),
      intent: 'checkout:1',
      resume: 'manual',
      request: (_v, { intent: i, signal }) => i.post('pay', { json: body, signal }),
    });
    const off = observer.subscribe(() => {});
    await expect.poll(() => observer.getState().key).toBe(intent.key);
    const forgot = await observer.forget().then(
      () => 'forgotten',
      (e: Error) => `${e.name}: ${e.message.slice(0, 60)}`,
    );
    off();
    expect(forgot).toBe('forgotten');
  });

  it('a note of a settled intent is gone: after reset() by hand the new key stays, unsent, and is sent', async () => {
    const { server, store, tab } = await setup();
    const client = tab();
    const intent = await heldIntent(client);
    store.failNext = 1; // in_flight write fails, outcome write lands: succeeded, note left
    await intent.post('pay', { json: body });
    expect(await store.get(intent.scope, intent.name)).toMatchObject({ state: 'succeeded' });
    await intent.reset(); // the app decides on a new operation (documented use of reset())
    const next = await tab().intent('checkout:1');
    expect(next.key).not.toBe(intent.key);
    await next.sync(); // any read under the lock: the stale note wins over the new key
    const stored = await store.get(intent.scope, intent.name);
    const reopened = await tab().intent('checkout:1');
    const sent = await next.post('pay', { json: { amount: 500 } }).then(
      (r) => `sent ${r.status}`,
      (e: Error) => e.name,
    );
    expect({
      storedKey: stored?.key === next.key ? 'new' : 'old (reset, succeeded)',
      storedState: stored?.state,
      reopenedKey: reopened.key === next.key ? 'new' : 'old',
      newOrder: sent,
    }).toEqual({ storedKey: 'new', storedState: 'ready', reopenedKey: 'new', newOrder: 'sent 201' });
    expect(server.requests).toHaveLength(2);
  });
});
