// @vitest-environment happy-dom
import { createSyncStoragePersister } from '@tanstack/query-sync-storage-persister';
import {
  onlineManager,
  QueryClient,
  QueryClientProvider,
  useIsRestoring,
  useMutation,
  useMutationState,
} from '@tanstack/react-query';
import { PersistQueryClientProvider } from '@tanstack/react-query-persist-client';
import { act, renderHook, waitFor } from '@testing-library/react';
import { type ReactNode, useEffect } from 'react';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { type Client, type IntentResponse, MemoryStore, type RecordUpdater } from '../src/index.js';
import { idempotentMutationOptions, resumeMutations, shouldDehydrateMutation } from '../src/tanstack/index.js';
import { buffered, cart, makeClient, NAME, reloaded, setupHookContract } from './helpers/react.js';

const { contract } = setupHookContract();
afterEach(() => {
  localStorage.clear();
  onlineManager.setOnline(true);
});

interface Vars {
  cartId: string;
  body: typeof cart;
}
const vars: Vars = { cartId: 'cart_1', body: cart };

/** What every "page" registers: the intent name comes from the (persisted) variables. */
const paymentOptions = (client: Client) =>
  idempotentMutationOptions({
    client,
    mutationKey: ['checkout'],
    intent: (v: Vars) => `checkout:${v.cartId}`,
    mutationFn: (v, { intent }) => intent.post('payments', { json: v.body }),
  });

/** The page: claims the key on mount, sends on mutate, shows the newest checkout mutation (restored ones too). */
function useCheckoutPage(client: Client) {
  const payment = paymentOptions(client);
  useEffect(() => {
    void payment.claim(vars);
  }, [payment.claim]);
  const pay = useMutation(payment);
  const latest = useMutationState({ filters: { mutationKey: ['checkout'] }, select: (m) => m.state }).at(-1);
  return { pay, latest, restoring: useIsRestoring() };
}

const provider =
  (queryClient: QueryClient) =>
  ({ children }: { children: ReactNode }) => <QueryClientProvider client={queryClient}>{children}</QueryClientProvider>;

const persister = () => createSyncStoragePersister({ storage: localStorage, throttleTime: 0 });

/** A page whose client is persisted to localStorage, resuming restored mutations once restored. */
const persisted =
  (queryClient: QueryClient) =>
  ({ children }: { children: ReactNode }) => (
    <PersistQueryClientProvider
      client={queryClient}
      persistOptions={{ persister: persister(), dehydrateOptions: { shouldDehydrateMutation } }}
      onSuccess={() => resumeMutations(queryClient)}
    >
      {children}
    </PersistQueryClientProvider>
  );

/** The checkout mutations persisted in localStorage, as TanStack wrote them. */
const persistedMutations = (): { state: { status: string; isPaused: boolean; variables: Vars } }[] =>
  JSON.parse(localStorage.getItem('REACT_QUERY_OFFLINE_CACHE') ?? '{"clientState":{"mutations":[]}}').clientState
    .mutations;

/** The page dies mid-request: the server commits, the answer never comes back. */
const dying: typeof fetch = async (input, init) => {
  await buffered(input, init);
  return new Promise<never>(() => {});
};

describe('idempotentMutationOptions', () => {
  it('sets retry: 0 and keeps the caller’s options', () => {
    const onSuccess = vi.fn();
    const options = idempotentMutationOptions({
      client: makeClient(new MemoryStore()),
      mutationKey: ['checkout'],
      intent: () => NAME,
      mutationFn: async () => 1,
      onSuccess,
      meta: { screen: 'cart' },
    });
    expect(options).toMatchObject({ retry: 0, mutationKey: ['checkout'], onSuccess, meta: { screen: 'cart' } });
  });

  it('types: data is what mutationFn returns, variables what intent() reads', () => {
    const { result } = renderHook(() => useMutation(paymentOptions(makeClient(new MemoryStore()))), {
      wrapper: provider(new QueryClient()),
    });
    expectTypeOf(result.current.data).toEqualTypeOf<IntentResponse<unknown> | undefined>();
    expectTypeOf(result.current.mutate).parameter(0).toEqualTypeOf<Vars>();
  });

  it('claims the key on mount, durable before any click; nothing sent', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    renderHook(() => useCheckoutPage(client), { wrapper: provider(new QueryClient()) });
    await waitFor(async () => expect(await store.get('default', NAME)).toMatchObject({ state: 'ready' }));
    expect(contract.requests).toHaveLength(0);
  });

  it('oncely retries, TanStack does not: one mutationFn call, two attempts, one effect', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, match: { method: 'POST' } });
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result } = renderHook(() => useCheckoutPage(client), { wrapper: provider(new QueryClient()) });
    await waitFor(async () => expect(await store.get('default', NAME)).toBeDefined());
    const { key } = (await store.get('default', NAME))!;
    let response!: IntentResponse<unknown>;
    await act(async () => {
      response = await result.current.pay.mutateAsync(vars);
    });
    await waitFor(() => expect(result.current.pay).toMatchObject({ status: 'success', failureCount: 0 }));
    expect(response).toMatchObject({ key, attempts: 2, replayed: false });
    expect(contract.attempts(key)).toBe(2);
    expect(contract.effects(key)).toBe(1);
  });

  it('mutate twice (TanStack runs the mutationFn twice): one key, one effect', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result } = renderHook(() => useCheckoutPage(client), { wrapper: provider(new QueryClient()) });
    await act(async () => {
      await Promise.all([result.current.pay.mutateAsync(vars), result.current.pay.mutateAsync(vars)]);
    });
    const { key } = (await store.get('default', NAME))!;
    expect(contract.effects(key)).toBe(1);
    const posts = contract.requests.filter((r) => r.method === 'POST');
    expect(new Set(posts.map((r) => r.key))).toEqual(new Set([key]));
  });

  it('an outcome write that fails after the server said yes (a full quota): the mutation is a success with the data, and warning(vars) the StoreError, heard through subscribe (issue 32 §3)', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    let fail = () => {};
    const failing = new Promise<void>((resolve) => {
      fail = resolve;
    });
    const update = store.update.bind(store);
    store.update = async (scope: string, name: string, updater: RecordUpdater) => {
      const current = await store.get(scope, name);
      if (current?.state !== 'in_flight' || updater(current)?.state !== 'succeeded')
        return update(scope, name, updater);
      await failing; // the write is queued: it fails after the mutation resolved
      throw new DOMException('', 'QuotaExceededError');
    };
    const payment = paymentOptions(client);
    const heard: unknown[] = [];
    const stop = payment.subscribe(() => heard.push(payment.warning(vars)));
    const { result } = renderHook(() => useMutation(payment), { wrapper: provider(new QueryClient()) });
    await act(async () => {
      await result.current.mutateAsync(vars);
    });
    await waitFor(() => expect(result.current).toMatchObject({ status: 'success', data: { status: 201 } }));
    expect(payment.warning(vars)).toBeUndefined();
    fail();
    await waitFor(() => expect(payment.warning(vars)).toMatchObject({ code: 'STORE_FAILED', sent: true }));
    expect(String(payment.warning(vars))).toContain('QuotaExceededError');
    expect(heard).toHaveLength(1);
    expect(result.current.status).toBe('success');
    const stored = (await store.get('default', NAME))!;
    expect(stored.state).toBe('in_flight'); // resumable under its key
    expect(contract.effects(stored.key)).toBe(1);
    // The next mutation of these variables clears it (and gets the replay).
    store.update = update;
    await act(async () => {
      await result.current.mutateAsync(vars);
    });
    expect(payment.warning(vars)).toBeUndefined();
    expect(contract.effects(stored.key)).toBe(1);
    stop();
  });
});

describe('persisted mutations (persistQueryClient)', () => {
  it('a reload mid-flight resumes the restored mutation with the same key: replayed, one effect', async () => {
    const store = new MemoryStore();
    // Page 1 sends, the server commits, the page dies before the answer.
    const first = renderHook(
      () => useCheckoutPage(makeClient(store, { fetch: dying, retry: { maxAttempts: 1, timeout: 0 } })),
      { wrapper: persisted(new QueryClient()) },
    );
    await waitFor(async () => expect(await store.get('default', NAME)).toBeDefined());
    await waitFor(() => expect(first.result.current.restoring).toBe(false));
    const { key } = (await store.get('default', NAME))!;
    act(() => first.result.current.pay.mutate(vars));
    await waitFor(() => expect(contract.effects(key)).toBe(1));
    await waitFor(() => expect(persistedMutations().map((m) => m.state.status)).toEqual(['pending']));
    first.unmount();

    // Page 2: a new QueryClient and oncely client over the same stores.
    const queryClient = new QueryClient();
    const client = makeClient(store, { coordinator: reloaded() });
    queryClient.setMutationDefaults(['checkout'], paymentOptions(client));
    const page = renderHook(() => useCheckoutPage(client), { wrapper: persisted(queryClient) });
    await waitFor(() => expect(page.result.current.latest?.status).toBe('success'));
    expect(page.result.current.latest?.data).toMatchObject({ key, replayed: true, data: { ...cart, id: 'id_1' } });
    expect(contract.attempts(key)).toBe(2);
    expect(contract.effects(key)).toBe(1);
  });

  it('a mutation paused offline, persisted and restored, is sent once online under the key claimed on mount', async () => {
    const store = new MemoryStore();
    const first = renderHook(() => useCheckoutPage(makeClient(store)), { wrapper: persisted(new QueryClient()) });
    await waitFor(async () => expect(await store.get('default', NAME)).toBeDefined());
    await waitFor(() => expect(first.result.current.restoring).toBe(false));
    const { key } = (await store.get('default', NAME))!;
    onlineManager.setOnline(false);
    act(() => first.result.current.pay.mutate(vars));
    await waitFor(() => expect(persistedMutations().map((m) => m.state.isPaused)).toEqual([true]));
    expect(persistedMutations()[0]!.state.variables).toEqual(vars);
    first.unmount();
    expect(contract.requests).toHaveLength(0);

    const queryClient = new QueryClient();
    const client = makeClient(store);
    queryClient.setMutationDefaults(['checkout'], paymentOptions(client));
    onlineManager.setOnline(true);
    const page = renderHook(() => useCheckoutPage(client), { wrapper: persisted(queryClient) });
    await waitFor(() => expect(page.result.current.latest?.status).toBe('success'));
    expect(page.result.current.latest?.data).toMatchObject({ key, replayed: false });
    expect(contract.attempts(key)).toBe(1);
    expect(contract.effects(key)).toBe(1);
  });
});
