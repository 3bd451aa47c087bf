/**
 * From a second adversarial review of the kept lock (fixed: the hook's observer claims again after IntentGoneError, once, and sends under the key the store holds).
 *
 * Browser (two tabs, real Web Locks): the kept-lock design lets a sent key win over another
 * key's `ready` record (toInFlightOver: in beginWarm, applySentNote, and now every settle).
 * The Intent object of the losing key gets IntentGoneError "as designed" — but the hook's
 * observer caches its claim (`#claim`) and never re-claims: every later click in that tab
 * fails with IntentGoneError until the page reloads, although the intent is settled and the
 * store has a perfectly usable record under the name.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IdempotentMutationObserver } from '../../src/index.js';
import { closeAll, heldIntent, setup } from '../adversarial/harness.js';

afterEach(closeAll);
const body = { amount: 1999 };
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the hook of the key that lost to a sent one', () => {
  it("tab B clicks twice after tab A's sent key replaced its ready key: the hook adopts the sent key, both clicks get its replay", async () => {
    const { server, store, tab } = await setup();
    const a = await heldIntent(tab()); // tab A keeps the lock, record ready (key 1)
    await store.delete(a.scope, a.name); // a sweep / clear of the ready record elsewhere
    const b = new IdempotentMutationObserver({
      client: tab(),
      intent: 'checkout:1',
      request: (_v, { intent, signal }) => intent.post('pay', { json: body, signal }),
    });
    const off = b.subscribe(() => {});
    await expect.poll(() => b.getState().key).toBeTruthy(); // tab B claimed key 2
    const k2 = b.getState().key;
    expect(k2).not.toBe(a.key);
    await a.post('pay', { json: body }); // warm: key 1 goes back over key 2's ready record
    await delay(300);
    const clicks: string[] = [];
    for (let i = 0; i < 2; i++)
      clicks.push(
        await b.mutateAsync().then(
          () => 'ok',
          (e: Error) => e.name,
        ),
      );
    off();
    expect({
      clicks,
      shownKey: b.getState().key === a.key ? 'key 1' : 'key 2',
      requests: server.requests.length,
    }).toEqual({
      // Refused as gone before sending, the hook claims again at once and sends key 1 (its replay).
      clicks: ['ok', 'ok'],
      shownKey: 'key 1',
      requests: 3,
    });
  });
});
