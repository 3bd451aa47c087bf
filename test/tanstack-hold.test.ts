/**
 * `oncely/tanstack`'s `hold(vars)`: the kept cross-tab lock of `useIdempotentMutation`, with a
 * lifecycle the app controls (`useEffect(() => payment.hold(vars), [vars])`). Real Web Locks
 * and BroadcastChannel (Node's), TanStack's query-core, a real server on 127.0.0.1.
 */
import { MutationObserver, QueryClient } from '@tanstack/query-core';
import { afterEach, describe, expect, it } from 'vitest';
import type { Client } from '../src/index.js';
import { idempotentMutationOptions } from '../src/tanstack/index.js';
import { closeAll, closing, heldIntent, keysSent, setup } from './adversarial/harness.js';

afterEach(closeAll);

interface Vars {
  cartId: string;
  amount: number;
}
const vars: Vars = { cartId: '1', amount: 42 };

const paymentOptions = (client: Client) =>
  idempotentMutationOptions({
    client,
    mutationKey: ['checkout'],
    intent: (v: Vars) => `checkout:${v.cartId}`,
    mutationFn: (v, { intent }) => intent.post('pay', { json: { amount: v.amount } }),
  });

const mutate = (options: ReturnType<typeof paymentOptions>, variables = vars) =>
  new MutationObserver(new QueryClient(), options).mutate(variables);

/** Each log line without the key's end: `request`, `stored in_flight`… */
const steps = (log: string[]) => log.map((line) => line.replace(/ [0-9a-f]{4}$/, ''));

/** The Web Locks held now under this test's channel. */
const heldLocks = async (channel: string) =>
  ((await navigator.locks.query()).held ?? []).filter((lock) => lock.name?.startsWith(channel)).length;

describe('idempotentMutationOptions().hold', () => {
  it('claims the key and keeps the lock: the request leaves before its in_flight write lands', async () => {
    const { log, server, store, tab } = await setup();
    const payment = paymentOptions(tab());
    closing.push(payment.hold(vars));
    const intent = await payment.claim(vars);
    expect(await store.get('default', 'checkout:1')).toMatchObject({ state: 'ready', key: intent.key });
    await intent.sync(); // the lock is held here now
    log.length = 0;
    store.holdWrites();
    const call = mutate(payment);
    await expect.poll(() => server.requests.length).toBe(1);
    expect((await store.get('default', 'checkout:1'))?.state).toBe('ready');
    store.releaseWrites();
    expect(await call).toMatchObject({ status: 201, key: intent.key });
    expect(steps(log)).toEqual(['request', 'stored in_flight', 'stored succeeded']);
  });

  it('without hold (claim only): the strict path, in_flight stored before the request', async () => {
    const { log, server, store, tab } = await setup();
    const payment = paymentOptions(tab());
    await payment.claim(vars);
    log.length = 0;
    store.holdWrites();
    const call = mutate(payment);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests).toHaveLength(0); // waits for its write
    store.releaseWrites();
    await call;
    expect(steps(log)).toEqual(['stored in_flight', 'request', 'stored succeeded']);
  });

  it('counts its holders (StrictMode holds twice): the lock goes with the last release', async () => {
    const { channel, tab } = await setup();
    const payment = paymentOptions(tab());
    const first = payment.hold(vars);
    const second = payment.hold(vars);
    await (await payment.claim(vars)).sync();
    expect(await heldLocks(channel)).toBe(1);
    first();
    first(); // twice is once
    expect(await heldLocks(channel)).toBe(1);
    second();
    await expect.poll(() => heldLocks(channel)).toBe(0);
  });

  it('released before its claim resolves: never takes the lock', async () => {
    const { channel, tab } = await setup();
    const payment = paymentOptions(tab());
    payment.hold(vars)();
    await payment.claim(vars);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await heldLocks(channel)).toBe(0);
  });

  it('another tab holding: this one asks, sends under the same key; then the first tab sends and gets it back', async () => {
    const { server, tab } = await setup();
    const a = paymentOptions(tab());
    const b = paymentOptions(tab());
    closing.push(a.hold(vars));
    await (await a.claim(vars)).sync(); // tab A has the lock
    closing.push(b.hold(vars));
    const key = (await b.claim(vars)).key;
    expect(await mutate(b)).toMatchObject({ status: 201, key });
    expect(await mutate(a)).toMatchObject({ status: 201, key });
    expect(keysSent(server)).toEqual([`"${key}"`]);
    expect(server.requests).toHaveLength(2);
  });

  it('a held intent forgotten elsewhere and formed again: the mutation sends once, under the key stored now', async () => {
    const { server, tab } = await setup();
    await heldIntent(tab()); // another tab keeps the lock: this one's call takes the strict path
    const payment = paymentOptions(tab());
    closing.push(payment.hold(vars));
    const stale = await payment.claim(vars);
    const other = tab();
    await (await other.intent('checkout:1')).reset();
    const fresh = await other.intent('checkout:1');
    expect(fresh.key).not.toBe(stale.key);
    expect(await mutate(payment)).toMatchObject({ status: 201, key: fresh.key });
    expect(keysSent(server)).toEqual([`"${fresh.key}"`]);
    expect((await payment.claim(vars)).key).toBe(fresh.key); // held from now on
  });
});
