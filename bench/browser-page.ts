/**
 * The page of the browser section (browser.ts), bundled with esbuild. Exposes on
 * `globalThis`:
 * - `benchIdb(n)`: claims n new intents one after another in a fresh `IdbStore` and
 *   returns each claim's latency (ms);
 * - `benchMount(variant)`: renders a new checkout button for a new intent through
 *   `useIdempotentMutation` and resolves once its key is claimed (idle, key known).
 *   `weblocks` is the default browser client (IndexedDB + Web Locks across tabs);
 *   `local` the same with a `LocalCoordinator` (locks within the page only), to show
 *   what the cross-tab lock costs; `tanstack` is TanStack's `useMutation` with a plain
 *   fetch (the floor); `tanstack-oncely` the same over `oncely/tanstack` options (the key
 *   claimed on mount), and `tanstack-oncely-held` with `payment.hold(vars)` on mount too;
 * - `benchLastClick()`: resolves, once the response of the click is shown, with the
 *   click's timings: event time, handler start, `in_flight` stored, `fetch` called;
 * - `benchBareClaims()`: the latencies of the clicks on `#bare` so far, each of which
 *   starts one bare `IdbStore` claim in its handler: the floor of any durable write
 *   made in response to a click, since Chromium defers IndexedDB (and Web Locks) replies
 *   after a click until the next frame is drawn (`DeferRendererTasksAfterInput`).
 */

import { QueryClient, QueryClientProvider, useMutation } from '@tanstack/react-query';
import { createClient, LocalCoordinator } from 'oncely';
import { IdbStore } from 'oncely/browser';
import { useIdempotentMutation } from 'oncely/react';
import { idempotentMutationOptions } from 'oncely/tanstack';
import { createElement, useEffect, useMemo } from 'react';
import { createRoot } from 'react-dom/client';
import { freshRecord } from './records.ts';

export interface Click {
  event: number;
  handler: number;
  stored: number;
  fetch: number;
  done: number;
}

/** The click being measured, until its answer is shown. */
let pending: Click | undefined;
const realFetch = globalThis.fetch.bind(globalThis);
globalThis.fetch = (input, init) => {
  if (pending && Number.isNaN(pending.fetch)) pending.fetch = performance.now();
  return realFetch(input, init);
};

const record = (name: string) => freshRecord('bench', name);

async function benchIdb(n: number): Promise<number[]> {
  const store = new IdbStore({ dbName: `bench-${crypto.randomUUID()}` });
  for (let i = 0; i < 20; i++) await store.claim(record(`warm-${i}`));
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const fresh = record(`claim-${i}`);
    const start = performance.now();
    await store.claim(fresh);
    samples.push(performance.now() - start);
  }
  await store.close?.();
  return samples;
}

const bareStore = new IdbStore({ dbName: 'bench-bare' });
const bareClaims: number[] = [];
const bare = document.createElement('button');
bare.id = 'bare';
bare.textContent = 'bare claim';
bare.addEventListener('click', () => {
  const start = performance.now();
  void bareStore.claim(record(`bare-${crypto.randomUUID()}`)).then(() => bareClaims.push(performance.now() - start));
});
document.body.append(bare);
const benchBareClaims = async (n: number): Promise<number[]> => {
  while (bareClaims.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
  return bareClaims.slice();
};

/**
 * The same durable write and a Web Lock, made by a dedicated Worker that the click handler
 * messages: workers get no input deferral, so this is the floor of a store that lives in a
 * Worker (the design that would keep the strict write before the first byte).
 */
const workerSource = `
  let db;
  const open = new Promise((resolve) => {
    const req = indexedDB.open('bench-worker', 1);
    req.onupgradeneeded = () => req.result.createObjectStore('intents');
    req.onsuccess = () => resolve((db = req.result));
  });
  const at = () => performance.timeOrigin + performance.now();
  onmessage = async ({ data }) => {
    const received = at();
    await open;
    await navigator.locks.request('bench:' + data.id, () => new Promise((resolve) => {
      const tx = db.transaction('intents', 'readwrite', { durability: 'strict' });
      tx.objectStore('intents').put(data.record, data.id);
      tx.oncomplete = resolve;
    }));
    postMessage({ id: data.id, received, written: at() });
  };`;
const worker = new Worker(URL.createObjectURL(new Blob([workerSource], { type: 'text/javascript' })));
const workerClaims: number[] = [];
/** Per click, in ms from the handler: message received by the worker, lock + write done there. */
const workerSteps: { received: number; written: number }[] = [];
const workerStarts = new Map<string, number>();
worker.onmessage = ({ data }: MessageEvent<{ id: string; received: number; written: number }>) => {
  const start = workerStarts.get(data.id)!;
  const origin = performance.timeOrigin;
  workerClaims.push(performance.now() - start);
  workerSteps.push({ received: data.received - origin - start, written: data.written - origin - start });
};
const viaWorker = document.createElement('button');
viaWorker.id = 'worker';
viaWorker.textContent = 'worker claim';
viaWorker.addEventListener('click', () => {
  const id = crypto.randomUUID();
  workerStarts.set(id, performance.now());
  worker.postMessage({ id, record: record(`worker-${id}`) });
});
document.body.append(viaWorker);
const benchWorkerClaims = async (n: number): Promise<number[]> => {
  while (workerClaims.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
  return workerClaims.slice();
};
const benchWorkerSteps = () => workerSteps.slice();

const baseUrl = `${location.origin}/`;
const clients = {
  weblocks: createClient({ baseUrl, scope: 'bench' }),
  local: createClient({ baseUrl, scope: 'bench', coordinator: new LocalCoordinator() }),
};
for (const client of Object.values(clients)) {
  client.on('state', ({ record }) => {
    if (pending && Number.isNaN(pending.stored) && record.state === 'in_flight') pending.stored = performance.now();
  });
}

const root = createRoot(document.getElementById('root')!);
let ready: (() => void) | undefined;
let clicked: ((click: Click) => void) | undefined;
let lastClick: Promise<Click> | undefined;

/** The measured button: notes the click's timings, and reports them once the response is shown. */
function PayButton({ status, disabled, onPay }: { status: string; disabled: boolean; onPay: () => void }) {
  useEffect(() => {
    if (status === 'success' && pending) {
      clicked?.({ ...pending, done: performance.now() });
      pending = undefined;
    }
  }, [status]);
  return createElement(
    'button',
    {
      id: 'pay',
      type: 'button',
      disabled,
      onClick: (event: { timeStamp: number }) => {
        pending = {
          event: event.timeStamp,
          handler: performance.now(),
          stored: Number.NaN,
          fetch: Number.NaN,
          done: 0,
        };
        onPay();
      },
    },
    status,
  );
}

function Checkout({ intent, variant }: { intent: string; variant: keyof typeof clients }) {
  const pay = useIdempotentMutation({
    client: clients[variant],
    intent,
    request: (_vars, { intent: i, signal }) => i.post('ok', { json: { amount: 1999, cart: intent }, signal }),
  });
  const idle = pay.status === 'idle' && pay.key !== undefined;
  useEffect(() => {
    if (idle) ready?.();
  }, [idle]);
  return createElement(PayButton, { status: pay.status, disabled: !idle, onPay: () => pay.mutate() });
}

const queryClient = new QueryClient();

/** The floor: TanStack's `useMutation` with a plain fetch, no key, no store, no lock. */
function TanstackCheckout({ intent }: { intent: string }) {
  const pay = useMutation({
    mutationFn: async () => {
      const res = await fetch(`${baseUrl}ok`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 1999, cart: intent }),
      });
      return res.json();
    },
  });
  useEffect(() => {
    ready?.();
  }, []);
  return createElement(PayButton, { status: pay.status, disabled: pay.status !== 'idle', onPay: () => pay.mutate() });
}

/** `oncely/tanstack` options over the default browser client, one object per variant (what `hold` keeps). */
const paymentOptions = (mutationKey: string) =>
  idempotentMutationOptions({
    client: clients.weblocks,
    mutationKey: [mutationKey],
    intent: (vars: { intent: string }) => vars.intent,
    mutationFn: (vars, { intent }) => intent.post('ok', { json: { amount: 1999, cart: vars.intent } }),
  });
const payments = { claimed: paymentOptions('bench'), held: paymentOptions('bench-held') };

/** TanStack's `useMutation` over `oncely/tanstack`: the key claimed on mount, the lock kept too when `held`. */
function TanstackOncelyCheckout({ intent, held }: { intent: string; held: boolean }) {
  const payment = payments[held ? 'held' : 'claimed'];
  const vars = useMemo(() => ({ intent }), [intent]);
  useEffect(() => (held ? payment.hold(vars) : undefined), [held, payment, vars]);
  useEffect(() => {
    void payment.claim(vars).then(() => ready?.());
  }, [payment, vars]);
  const pay = useMutation(payment);
  return createElement(PayButton, {
    status: pay.status,
    disabled: pay.status !== 'idle',
    onPay: () => pay.mutate(vars),
  });
}

export type Variant = keyof typeof clients | 'tanstack' | 'tanstack-oncely' | 'tanstack-oncely-held';

function benchMount(variant: Variant): Promise<void> {
  const intent = `checkout:${crypto.randomUUID()}`;
  lastClick = new Promise((resolve) => {
    clicked = resolve;
  });
  return new Promise((resolve) => {
    ready = resolve;
    const held = variant === 'tanstack-oncely-held';
    root.render(
      variant === 'tanstack' || variant === 'tanstack-oncely' || held
        ? createElement(
            QueryClientProvider,
            { client: queryClient },
            variant === 'tanstack'
              ? createElement(TanstackCheckout, { key: intent, intent })
              : createElement(TanstackOncelyCheckout, { key: intent, intent, held }),
          )
        : createElement(Checkout, { key: intent, intent, variant }),
    );
  });
}

const benchLastClick = (): Promise<Click> | undefined => lastClick;

Object.assign(globalThis, {
  benchIdb,
  benchMount,
  benchLastClick,
  benchBareClaims,
  benchWorkerClaims,
  benchWorkerSteps,
  benchReady: true,
});
