/**
 * From a second adversarial review of the kept lock (fixed: a note not of its intent is dropped; client.clear() drops the scope's notes).
 *
 * Sent notes (browser/sent-notes.ts) as read by `applySentNote` (hook mount, sync(), and now
 * the strict `begin`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IdempotentMutationObserver } from '../../src/index.js';
import { closeAll, heldIntent, setup } from '../adversarial/harness.js';

afterEach(closeAll);
const body = { amount: 1999 };

describe('notes', () => {
  // MemoryStore does not validate: the garbage record (another key, another name) is stored under
  // checkout:1 and the intent's own key is refused as gone. IndexedDB variant: notes-idb.test.ts.
  it("a well-formed note filed under another intent's name (garbage under the prefix) takes the intent's place", async () => {
    const { server, notes, channel, tab } = await setup();
    const client = tab();
    const intent = await client.intent('checkout:1');
    // Shape-valid record, but of intent "checkout:2": the store refuses it; the note is never dropped.
    notes.setItem(
      `${channel}:sent:${JSON.stringify(['default', 'checkout:1'])}`,
      JSON.stringify({ ...intent.record, key: 'another-key', name: 'checkout:2', state: 'in_flight', attempts: 1 }),
    );
    const results: string[] = [];
    for (let i = 0; i < 2; i++)
      results.push(
        await intent.post('pay', { json: body }).then(
          (r) => `sent ${r.status}`,
          (e: Error) => e.name,
        ),
      );
    results.push(
      await intent.sync().then(
        () => 'synced',
        (e: Error) => e.name,
      ),
    );
    expect({ results, requests: server.requests.length, noteLeft: notes.map.size }).toEqual({
      results: ['sent 201', 'sent 201', 'synced'],
      requests: 2,
      noteLeft: 0,
    });
  });

  it('client.clear() (logout) leaves the note: after logging in again the old key comes back over the new one and the hook cannot send', async () => {
    const { server, store, tab } = await setup();
    const page = tab();
    const first = await heldIntent(page);
    store.failNext = 2; // the page's writes never land (it dies in that frame): only the note is left
    await first.post('pay', { json: body }).catch(() => undefined);
    await page.clear({ force: true }); // logout: "Removes every intent of this client's scope"
    await page.close();
    const next = tab(); // logged in again, same user, new checkout
    const o = new IdempotentMutationObserver({
      client: next,
      intent: 'checkout:1',
      resume: 'manual',
      request: (_v, { intent, signal }) => intent.post('pay', { json: { amount: 500 }, signal }),
    });
    const off = o.subscribe(() => {});
    await expect.poll(() => o.getState().key).toBeTruthy();
    await new Promise((r) => setTimeout(r, 300));
    const click = await o.mutateAsync().then(
      () => 'ok',
      (e: Error) => e.name,
    );
    off();
    const stored = await store.get('default', 'checkout:1');
    expect({
      storedKey: stored?.key === first.key ? 'old key (cleared)' : 'new key',
      click,
      keys: [...new Set(server.requests.map((r) => r.headers['idempotency-key']))].length,
    }).toEqual({ storedKey: 'new key', click: 'ok', keys: 2 });
  });
});
