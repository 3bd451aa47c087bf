/** Attacks that held (passing): kept for the record. */
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';
import { closeAll, closing, heldIntent, keysSent, setup } from './harness.js';

afterEach(closeAll);
let n = 0;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('held', () => {
  it('close() of the holder mid-section: the waiting tab runs once the section ends', async () => {
    const channel = `oncely-attack-held-${process.pid}-${n++}`;
    const a = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    const b = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
    closing.push(() => b.close());
    let gained!: () => void;
    const first = new Promise<void>((r) => (gained = r));
    closing.push(a.hold('u', 'pay', async () => gained()));
    await first;
    const long = a.exclusive('u', 'pay', () => delay(100));
    const waiting = b.exclusive('u', 'pay', async () => 'b');
    await delay(20);
    a.close();
    await long;
    expect(await Promise.race([waiting, delay(2000).then(() => 'HANG')])).toBe('b');
  });

  it("abort while waiting for another tab's kept lock, then a new call runs and sends one key", async () => {
    const { server, tab } = await setup();
    const a = await heldIntent(tab());
    const b = await heldIntent(tab());
    void a;
    const controller = new AbortController();
    const aborted = b.post('pay', { json: { x: 1 }, signal: controller.signal }).catch((e: Error) => e.name);
    controller.abort();
    expect(await aborted).toBe('CancelledError');
    await b.post('pay', { json: { x: 1 } });
    expect(keysSent(server)).toEqual([`"${b.key}"`]);
  });

  it("two held Intent objects of one name in one client: the second one's call takes the strict path after the first one sent", async () => {
    const { log, tab } = await setup();
    const client = tab();
    const x = await heldIntent(client);
    const y = await heldIntent(client);
    await y.post('pay', { json: { x: 1 } });
    log.length = 0;
    await x.post('pay', { json: { x: 1 } }); // x read `ready` earlier; must not trust it
    expect(log[0]).toMatch(/^stored succeeded/); // strict: the write lands before the request (a succeeded intent stays so)
  });
});

describe('held: auto-resume from a note', () => {
  it('a hook mounting after a page left a note resumes the intent exactly once, with its key', async () => {
    const { IdempotentMutationObserver } = await import('../../src/index.js');
    const { server, store, tab } = await setup();
    const page = tab();
    const first = await heldIntent(page);
    store.failNext = 2; // as if the page died before its writes landed: the note is all that is left
    await first.post('pay', { json: { a: 1 } }).catch(() => undefined);
    await page.close(); // the page is gone: its lock is free
    const o = new IdempotentMutationObserver({
      client: tab(),
      intent: 'checkout:1',
      request: (_v, { intent, signal }) => intent.post('pay', { json: { a: 1 }, signal }),
    });
    const off = o.subscribe(() => {});
    const off2 = o.subscribe(() => {});
    await expect.poll(() => o.getState().status).toBe('success');
    await delay(400);
    off();
    off2();
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${first.key}"`, `"${first.key}"`]);
  });
});
