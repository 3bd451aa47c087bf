// @vitest-environment happy-dom
import { act, renderHook, waitFor } from '@testing-library/react';
import { StrictMode } from 'react';
import { describe, expect, it } from 'vitest';
import {
  type Client,
  type IntentCoordinator,
  type IntentRecord,
  LocalCoordinator,
  MemoryStore,
  type Store,
} from '../src/index.js';
import { type UseIdempotentMutationOptions, useIdempotentMutation } from '../src/react/index.js';
import { buffered, cart, gatedFetch, makeClient, NAME, pay, reloaded, setupHookContract } from './helpers/react.js';

const { contract } = setupHookContract();

/** The page dies mid-request: the server commits, the answer never comes back. */
const dying: typeof fetch = async (input, init) => {
  await buffered(input, init);
  return new Promise<never>(() => {});
};

const mount = (
  client: Client,
  extra: Partial<UseIdempotentMutationOptions<unknown>> = {},
  wrapper?: typeof StrictMode,
) => {
  const statuses: string[] = [];
  const hook = renderHook(
    () => {
      const m = useIdempotentMutation({
        client,
        intent: NAME,
        request: pay,
        ...extra,
      } as UseIdempotentMutationOptions<unknown>);
      if (statuses.at(-1) !== m.status) statuses.push(m.status);
      return m;
    },
    { wrapper },
  );
  return { ...hook, statuses };
};

/** Sends through a first page that dies mid-flight; resolves with the key once the server has committed. */
async function dieInFlight(store: Store): Promise<string> {
  const page = mount(makeClient(store, { fetch: dying, retry: { maxAttempts: 1, timeout: 0 } }));
  await waitFor(() => expect(page.result.current.key).toBeDefined());
  const key = page.result.current.key!;
  act(() => page.result.current.mutate());
  await waitFor(() => expect(contract.effects(key)).toBe(1));
  expect(await store.get('default', NAME)).toMatchObject({ key, state: 'in_flight' });
  page.unmount();
  return key;
}

/** Tabs over one store: one lock per intent across them (like Web Locks), records broadcast to the others. */
function fakeTabs() {
  const lock = new LocalCoordinator();
  const listeners = new Map<IntentCoordinator, Set<(record: IntentRecord) => void>>();
  return (): IntentCoordinator => {
    const own = new Set<(record: IntentRecord) => void>();
    const tab: IntentCoordinator = {
      coversStore: true,
      exclusive: (scope, name, fn) => lock.exclusive(scope, name, fn),
      publish(record) {
        for (const [other, set] of listeners)
          if (other !== tab) for (const listener of set) setTimeout(() => listener(structuredClone(record)), 0);
      },
      subscribe(listener) {
        own.add(listener);
        return () => own.delete(listener);
      },
    };
    listeners.set(tab, own);
    return tab;
  };
}

describe('reload and remount', () => {
  it('resume auto: an intent left in flight is sent again with the same key and shows the replay', async () => {
    const store = new MemoryStore();
    const key = await dieInFlight(store);
    const page = mount(makeClient(store, { coordinator: reloaded() }));
    await waitFor(() => expect(page.result.current.status).toBe('success'));
    expect(page.result.current).toMatchObject({ key, replayed: true, data: { ...cart, id: 'id_1' } });
    expect(contract.attempts(key)).toBe(2);
    expect(contract.effects(key)).toBe(1);
  });

  it('resume auto under StrictMode: exactly one resend', async () => {
    const store = new MemoryStore();
    const key = await dieInFlight(store);
    const page = mount(makeClient(store, { coordinator: reloaded() }), {}, StrictMode);
    await waitFor(() => expect(page.result.current.status).toBe('success'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(contract.attempts(key)).toBe(2);
    expect(page.result.current.replayed).toBe(true);
  });

  it('resume manual: status unknown, nothing sent until mutate()', async () => {
    const store = new MemoryStore();
    const key = await dieInFlight(store);
    const page = mount(makeClient(store, { coordinator: reloaded() }), { resume: 'manual' });
    await waitFor(() => expect(page.result.current.status).toBe('unknown'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(contract.attempts(key)).toBe(1);
    expect(page.result.current).toMatchObject({ key, status: 'unknown', record: { state: 'in_flight' } });
    await act(() => page.result.current.mutateAsync());
    expect(page.result.current).toMatchObject({ status: 'success', key, replayed: true });
    expect(contract.effects(key)).toBe(1);
  });

  it('a succeeded intent stays succeeded after reload, with no request and no data', async () => {
    const store = new MemoryStore();
    const first = mount(makeClient(store));
    await act(() => first.result.current.mutateAsync());
    const key = first.result.current.key!;
    first.unmount();
    const page = mount(makeClient(store));
    await waitFor(() => expect(page.result.current.status).toBe('success'));
    expect(page.result.current).toMatchObject({ key, data: undefined, replayed: undefined, attempts: 1 });
    expect(contract.attempts(key)).toBe(1);
  });
});

describe('another tab', () => {
  it('shows the other tab’s send as pending, then success, without sending itself', async () => {
    const store = new MemoryStore();
    const tab = fakeTabs();
    const here = mount(makeClient(store, { coordinator: tab() }));
    await waitFor(() => expect(here.result.current.key).toBeDefined());
    const key = here.result.current.key!;
    const gated = gatedFetch();
    const there = await makeClient(store, { coordinator: tab(), fetch: gated.fetch }).intent(NAME);
    const sent = there.post('payments', { json: cart });
    await waitFor(() => expect(here.result.current.status).toBe('pending'));
    gated.release();
    await sent;
    await waitFor(() => expect(here.result.current.status).toBe('success'));
    expect(here.statuses).toEqual(['idle', 'pending', 'success']);
    expect(here.result.current).toMatchObject({ key, data: undefined });
    expect(contract.attempts(key)).toBe(1);
  });

  it('a click while the other tab sends waits for it, then gets the replay', async () => {
    const store = new MemoryStore();
    const tab = fakeTabs();
    const here = mount(makeClient(store, { coordinator: tab() }));
    await waitFor(() => expect(here.result.current.key).toBeDefined());
    const key = here.result.current.key!;
    const gated = gatedFetch();
    const there = await makeClient(store, { coordinator: tab(), fetch: gated.fetch }).intent(NAME);
    const sent = there.post('payments', { json: cart });
    await waitFor(() => expect(here.result.current.status).toBe('pending'));
    const clicked = here.result.current.mutateAsync();
    gated.release();
    const [theirs, mine] = await Promise.all([sent, clicked]);
    expect(mine).toEqual(theirs.data);
    await waitFor(() => expect(here.result.current).toMatchObject({ status: 'success', replayed: true }));
    expect(contract.attempts(key)).toBe(2);
    expect(contract.effects(key)).toBe(1);
  });

  it('mounting while another tab is mid-send waits for it instead of resending', async () => {
    const store = new MemoryStore();
    const tab = fakeTabs();
    const gated = gatedFetch();
    const there = await makeClient(store, { coordinator: tab(), fetch: gated.fetch }).intent(NAME);
    const sent = there.post('payments', { json: cart });
    await waitFor(async () => expect((await store.get('default', NAME))?.state).toBe('in_flight'));
    const here = mount(makeClient(store, { coordinator: tab() }));
    await waitFor(() => expect(here.result.current.status).toBe('pending'));
    gated.release();
    await sent;
    await waitFor(() => expect(here.result.current.status).toBe('success'));
    expect(contract.attempts(there.key)).toBe(1);
  });
});
