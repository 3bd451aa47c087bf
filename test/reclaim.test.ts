/**
 * The one re-claim policy of the hook's observer and `oncely/tanstack` (src/observer/reclaim.ts):
 * refused as gone before sending, claim again once and send under the key stored now. The
 * two copies it replaces differed in two details, each pinned here.
 */
import { MutationObserver, QueryClient } from '@tanstack/query-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdempotentMutationObserver, type Intent } from '../src/index.js';
import { sendReclaiming } from '../src/observer/reclaim.js';
import { idempotentMutationOptions } from '../src/tanstack/index.js';
import { closeAll, keysSent, setup } from './adversarial/harness.js';

afterEach(closeAll);

const body = { amount: 42 };
const gone = Object.assign(new Error('gone'), { code: 'INTENT_GONE' });

describe('sendReclaiming', () => {
  const intent = (key: string) => ({ key }) as Intent;
  const first = async () => intent('k1');

  it('refused as gone: claims again once and sends under the new intent', async () => {
    const sent: string[] = [];
    const send = vi.fn(async (i: Intent) => {
      sent.push(i.key);
      if (sent.length === 1) throw gone;
      return 'ok';
    });
    const again = vi.fn(async () => intent('k2'));
    expect(await sendReclaiming(first, send, again)).toBe('ok');
    expect({ sent, again: again.mock.calls.length }).toEqual({ sent: ['k1', 'k2'], again: 1 });
  });

  it('gone twice: the second refusal is thrown; any other error at once', async () => {
    const again = vi.fn(async () => intent('k2'));
    const failing = (e: Error) => sendReclaiming(first, () => Promise.reject(e), again);
    await expect(failing(gone)).rejects.toBe(gone);
    expect(again).toHaveBeenCalledTimes(1);
    const other = Object.assign(new Error('no'), { code: 'NOT_SENT' });
    await expect(failing(other)).rejects.toBe(other);
    expect(again).toHaveBeenCalledTimes(1);
  });
});

describe('the details the two copies differed in', () => {
  // The observer checked `instanceof IntentGoneError`, oncely/tanstack the code. The code is
  // how oncely's errors are narrowed, and it holds when the error comes from another copy of
  // oncely (two versions installed, a bundler that duplicated the core): the class does not.
  it('the observer knows a gone error from another copy of oncely by its code', async () => {
    vi.resetModules();
    const copy = await import('../src/errors.js');
    const { server, tab } = await setup();
    const keys: string[] = [];
    const observer = new IdempotentMutationObserver({
      client: tab(),
      intent: 'checkout:1',
      request: async (_v, { intent }) => {
        keys.push(intent.key);
        if (keys.length === 1) throw new copy.IntentGoneError({ intent: intent.name });
        return { data: (await intent.post('pay', { json: body })).status };
      },
    });
    expect(await observer.mutateAsync()).toBe(201);
    expect(keys).toHaveLength(2);
    expect(keysSent(server)).toEqual([`"${keys[1]}"`]);
  });

  // oncely/tanstack claimed again only for an intent held with hold(); the observer, held or
  // not. Holding only makes the request leave sooner: without it, an intent claimed at the
  // call's start can be gone by its first write (another tab reset it and formed it anew, or
  // its sent key was put back), nothing was sent, and the click should still go through.
  it('oncely/tanstack without hold(): an intent gone before its first write is claimed again and sent once', async () => {
    const { server, store, tab } = await setup();
    const payment = idempotentMutationOptions({
      client: tab(),
      mutationKey: ['checkout'],
      intent: (v: { cartId: string }) => `checkout:${v.cartId}`,
      mutationFn: (_v, { intent }) => intent.post('pay', { json: body }),
    });
    const stale = await payment.claim({ cartId: '1' });
    const other = tab();
    let fresh: string | undefined;
    store.beforeUpdate = async () => {
      store.beforeUpdate = undefined;
      await (await other.intent('checkout:1')).reset();
      fresh = (await other.intent('checkout:1')).key;
    };
    const result = await new MutationObserver(new QueryClient(), payment).mutate({ cartId: '1' });
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(stale.key);
    expect(result).toMatchObject({ status: 201, key: fresh });
    expect(keysSent(server)).toEqual([`"${fresh}"`]);
  });
});
