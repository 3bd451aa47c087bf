/**
 * Found by an adversarial review (F1): a send under a kept lock whose `in_flight` write fails,
 * on a record deleted or replaced without the lock (sweep, clear, reset, a claim elsewhere).
 * The outcome write used to skip a record that was not this key's, so the sent key was
 * forgotten and a second key paid. It now goes over the sent record put back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IdempotentMutationObserver, OutcomeUnknownError } from '../../src/index.js';
import { closeAll, heldIntent, keysSent, setup } from './harness.js';

afterEach(closeAll);
const body = { amount: 1999 };

describe('a send under a kept lock whose in_flight write fails', () => {
  it('outcome unknown, record deleted before the click: the sent key is kept, unknown, and no second key is paid', async () => {
    // Every attempt of the first key is dropped (outcome unknown); the second key is paid.
    const { server, store, tab } = await setup((n) => (n <= 2 ? 'drop' : { status: 201, body: { id: 'pay' } }), {
      baseDelay: 1,
      maxDelay: 5,
      maxAttempts: 2,
    });
    const client = tab();
    const first = await heldIntent(client);
    // Without the lock, legitimately: a ready record swept / cleared / reset elsewhere.
    await store.delete(first.scope, first.name);
    store.failNext = 1; // the warm in_flight write fails (quota, transient IDB error)
    const error = await first.post('pay', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError); // the request went out, the effect may have happened
    expect(server.requests.length).toBe(2);

    // What must hold: the sent intent is still stored with its key, as unknown.
    const stored = await store.get(first.scope, first.name);
    const pending = await client.pending();
    // Then a new intent of the same name must get the SAME key (or be refused).
    const again = await tab().intent('checkout:1');
    await again.post('pay', { json: body }).catch(() => undefined);
    expect({
      stored: stored?.key === first.key ? stored.state : 'forgotten',
      pendingCount: pending.length,
      keysSent: keysSent(server).length,
    }).toEqual({ stored: 'unknown', pendingCount: 1, keysSent: 1 });
  });

  it('another key claimed in its place before the click: the sent key wins even with the in_flight write failing', async () => {
    // Same as held-lock.test.ts "another key claimed in its place meanwhile loses to the sent one", + failNext = 1.
    const { server, store, tab } = await setup();
    const intent = await heldIntent(tab());
    await store.delete(intent.scope, intent.name);
    const other = await tab().intent('checkout:1');
    expect(other.key).not.toBe(intent.key);
    store.failNext = 1;
    await intent.post('pay', { json: body });
    const after = await store.get(intent.scope, intent.name);
    const second = await other.post('pay', { json: body }).then(
      (r) => `sent: ${r.status}`,
      (e: Error) => e.name,
    );
    expect({
      storedKey: after?.key === intent.key ? 'sent key' : 'other key',
      second,
      keys: keysSent(server).length,
    }).toEqual({
      storedKey: 'sent key',
      second: 'IntentGoneError',
      keys: 1,
    });
  });

  it('without localStorage (a worker, a full quota) the click takes the strict path: a failing write sends nothing', async () => {
    const { server, store, tab } = await setup();
    const first = await heldIntent(tab({ notes: undefined }));
    await store.delete(first.scope, first.name);
    store.failNext = 1;
    const error = (await first.post('pay', { json: body }).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/Nothing was sent/);
    expect(server.requests).toHaveLength(0);
    const second = await heldIntent(tab({ notes: undefined }));
    await second.post('pay', { json: body });
    expect(keysSent(server)).toEqual([`"${second.key}"`]);
  });

  it('both writes of a sent click fail: the note keeps it, and the next read under the lock stores it in flight', async () => {
    const { server, store, tab } = await setup();
    const client = tab();
    const unsaved: Error[] = [];
    client.on('unsaved', (event) => unsaved.push(event.error as Error));
    const intent = await heldIntent(client);
    store.failNext = 2;
    await intent.post('pay', { json: body }); // a success: the answer, its unsaved outcome an event
    await client.pending(); // the outcome write was queued: a read waits for it
    expect(unsaved[0]?.message).toMatch(/An attempt had gone out/);
    expect(server.requests.length).toBeGreaterThan(0);
    expect((await store.get(intent.scope, intent.name))?.state).toBe('ready'); // the store took nothing
    const other = await tab().intent('checkout:1');
    expect((await other.sync()).state).toBe('in_flight');
    expect(await client.pending()).toHaveLength(1);
  });

  for (const notes of ['localStorage', 'none'] as const) {
    it(`hook level (${notes}): tab B cannot forget() while tab A's click has an unknown outcome; one key is paid`, async () => {
      const { server, store, tab } = await setup((n) => (n <= 2 ? 'drop' : { status: 201, body: { id: 'pay' } }), {
        baseDelay: 1,
        maxDelay: 5,
        maxAttempts: 2,
      });
      const observer = (client: ReturnType<typeof tab>) => {
        const o = new IdempotentMutationObserver({
          client,
          intent: 'checkout:1',
          resume: 'manual',
          request: (_v, { intent, signal }) => intent.post('pay', { json: body, signal }),
        });
        const off = o.subscribe(() => {});
        return { o, off };
      };
      const options = notes === 'none' ? { notes: undefined } : undefined;
      const a = observer(tab(options));
      const b = observer(tab(options));
      await expect.poll(() => a.o.getState().key && b.o.getState().key).toBeTruthy();
      await new Promise((r) => setTimeout(r, 300)); // both mounted, A keeps the lock
      const k1 = a.o.getState().key!;
      await store.delete('default', 'checkout:1'); // a sweep of the (old) ready record elsewhere
      store.failNext = 1;
      await a.o.mutateAsync().catch(() => undefined);
      const shown = a.o.getState().status;
      const forgot = await b.o.forget().then(
        () => 'forgotten',
        (e: Error) => e.name,
      );
      if (forgot === 'forgotten') await b.o.mutateAsync().catch(() => undefined);
      a.off();
      b.off();
      if (notes === 'localStorage') {
        // Sent with its write failing: the outcome write puts the intent back, unknown.
        expect(shown).toBe('unknown');
        expect({ forgot, keys: keysSent(server) }).toEqual({ forgot: 'OutcomeUnknownError', keys: [`"${k1}"`] });
      } else {
        // Strict path: the write failed before anything was sent, so a new key is safe.
        expect(shown).toBe('error');
        expect(forgot).toBe('forgotten');
        expect(keysSent(server)).toHaveLength(1);
        expect(keysSent(server)[0]).not.toBe(`"${k1}"`);
      }
    });
  }

  it('without a kept lock the same sequence sends nothing', async () => {
    const { server, store, tab } = await setup();
    const client = tab();
    const first = await client.intent('checkout:1'); // no hold: strict path
    await store.delete(first.scope, first.name);
    store.failNext = 1;
    await expect(first.post('pay', { json: body })).rejects.toBeDefined();
    expect(server.requests).toHaveLength(0);
  });
});
