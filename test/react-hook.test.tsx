// @vitest-environment happy-dom
import { act, render, renderHook, waitFor } from '@testing-library/react';
import { Activity, StrictMode } from 'react';
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import * as z from 'zod/mini';
import { type Client, KeyReusedError, MemoryStore, OutcomeUnknownError, run } from '../src/index.js';
import { IdempotentMutationObserver } from '../src/observer/mutation-observer.js';
import { type UseIdempotentMutationResult, useIdempotentMutation } from '../src/react/index.js';
import { cart, gatedFetch, makeClient, NAME, pay, setupHookContract } from './helpers/react.js';

const { contract } = setupHookContract();

function Checkout(props: { client: Client; onRender: (m: UseIdempotentMutationResult<unknown>) => void }) {
  props.onRender(useIdempotentMutation({ client: props.client, intent: NAME, request: pay }));
  return null;
}

describe('useIdempotentMutation', () => {
  it('claims the key on mount, durable before any click', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    expect(result.current.status).toBe('idle');
    await waitFor(() => expect(result.current.key).toBeDefined());
    expect(await store.get('default', NAME)).toMatchObject({ key: result.current.key, state: 'ready' });
    expect(result.current.status).toBe('idle');
    expect(contract.requests).toHaveLength(0);
  });

  it('double click: one request, the same promise and result for every click', async () => {
    const client = makeClient(new MemoryStore());
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    // Clicks before the claim has even resolved still make one call.
    let first!: Promise<unknown>;
    let second!: Promise<unknown>;
    act(() => {
      first = result.current.mutateAsync();
      second = result.current.mutateAsync();
      result.current.mutate();
    });
    expect(second).toBe(first);
    const [a, b] = await Promise.all([first, second]);
    expect(b).toBe(a);
    await waitFor(() => expect(result.current.status).toBe('success'));
    const key = result.current.key!;
    expect(contract.attempts(key)).toBe(1);
    expect(contract.effects(key)).toBe(1);
    expect(result.current).toMatchObject({
      data: { ...cart, id: 'id_1' },
      replayed: false,
      attempts: 1,
      error: undefined,
    });
  });

  it('StrictMode double mount: one claim, and the mutation does not freeze', async () => {
    const store = new MemoryStore();
    const claim = vi.spyOn(store, 'claim');
    const client = makeClient(store);
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }), {
      wrapper: StrictMode,
    });
    await waitFor(() => expect(result.current.key).toBeDefined());
    expect(claim).toHaveBeenCalledTimes(1);
    expect(await store.list('default')).toHaveLength(1);
    await act(() => result.current.mutateAsync());
    expect(result.current.status).toBe('success');
    expect(contract.attempts(result.current.key!)).toBe(1);
  });

  it('hidden and shown again (<Activity>) while pending: ends in success, not stuck', async () => {
    const gated = gatedFetch();
    const client = makeClient(new MemoryStore(), { fetch: gated.fetch });
    let latest!: UseIdempotentMutationResult<unknown>;
    const ui = (mode: 'visible' | 'hidden') => (
      <Activity mode={mode}>
        <Checkout client={client} onRender={(m) => (latest = m)} />
      </Activity>
    );
    const { rerender } = render(ui('visible'));
    await waitFor(() => expect(latest.key).toBeDefined());
    let call!: Promise<unknown>;
    act(() => {
      call = latest.mutateAsync();
    });
    await waitFor(() => expect(contract.effects(latest.key!)).toBe(1));
    expect(latest.status).toBe('pending');
    rerender(ui('hidden'));
    gated.release();
    await call;
    rerender(ui('visible'));
    await waitFor(() => expect(latest.status).toBe('success'));
    expect(latest.data).toEqual({ ...cart, id: 'id_1' });
  });

  it('reset() clears the UI state only: the key stays, and the next mutate() replays', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    await act(() => result.current.mutateAsync());
    const key = result.current.key!;
    act(() => result.current.reset());
    expect(result.current).toMatchObject({ status: 'idle', isIdle: true, data: undefined, key });
    expect(await store.get('default', NAME)).toMatchObject({ key, state: 'succeeded' });
    await act(() => result.current.mutateAsync());
    expect(result.current).toMatchObject({ status: 'success', key, replayed: true });
    expect(contract.effects(key)).toBe(1);
  });

  it('after an unknown outcome, "on error: reset(), mutate()" resumes with the same key: one effect', async () => {
    contract.inject({ fault: 'drop-after-commit', times: 2, match: { method: 'POST' } });
    const client = makeClient(new MemoryStore(), { retry: { maxAttempts: 2, baseDelay: 1 } });
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    await act(() => result.current.mutateAsync().catch(() => undefined));
    expect(result.current).toMatchObject({ status: 'unknown', isError: true });
    const key = result.current.key!;
    act(() => result.current.reset());
    await act(() => result.current.mutateAsync());
    expect(result.current).toMatchObject({ status: 'success', key, replayed: true });
    expect(contract.effects(key)).toBe(1);
  });

  it('forget() starts a new operation with a new key once the outcome is known', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    await act(() => result.current.mutateAsync());
    const old = result.current.key!;
    await act(() => result.current.forget());
    expect(result.current).toMatchObject({ status: 'idle', data: undefined, replayed: undefined });
    expect(result.current.key).toBeDefined();
    expect(result.current.key).not.toBe(old);
    expect(await store.get('default', NAME)).toMatchObject({ key: result.current.key, state: 'ready' });
    await act(() => result.current.mutateAsync());
    expect(result.current).toMatchObject({ status: 'success', replayed: false });
    expect(contract.effects(result.current.key!)).toBe(1);
  });

  it('forget() refuses while the outcome is unknown, and forgets with force', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 2, match: { method: 'POST' } });
    const store = new MemoryStore();
    const client = makeClient(store, { retry: { maxAttempts: 2, baseDelay: 1 } });
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    await act(() => result.current.mutateAsync().catch(() => undefined));
    const key = result.current.key!;
    const refused = await result.current.forget().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OutcomeUnknownError);
    expect(refused).toMatchObject({ code: 'OUTCOME_UNKNOWN', key });
    expect(String(refused)).not.toContain(key);
    expect(await store.get('default', NAME)).toMatchObject({ key, state: 'unknown' });
    await act(() => result.current.forget({ force: true }));
    expect(result.current.key).not.toBe(key);
    expect(result.current.status).toBe('idle');
  });

  it('forget() refuses while a call is in flight; force aborts it first', async () => {
    const store = new MemoryStore();
    const hang: typeof fetch = (input) =>
      new Promise((_, reject) => {
        const { signal } = input as Request;
        signal.addEventListener('abort', () => reject(signal.reason));
      });
    const client = makeClient(store, { fetch: hang });
    const { result } = renderHook(() =>
      useIdempotentMutation({
        client,
        intent: NAME,
        request: (_vars, { intent, signal }) => intent.post('payments', { json: cart, signal }),
      }),
    );
    await waitFor(() => expect(result.current.key).toBeDefined());
    const key = result.current.key!;
    let call!: Promise<unknown>;
    act(() => {
      call = result.current.mutateAsync();
    });
    await waitFor(async () => expect((await store.get('default', NAME))?.state).toBe('in_flight'));
    await expect(result.current.forget()).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(result.current.isPending).toBe(true);
    await act(() => result.current.forget({ force: true }));
    await expect(call).rejects.toBeDefined();
    expect(result.current.key).not.toBe(key);
    expect(await store.get('default', NAME)).toMatchObject({ key: result.current.key, state: 'ready' });
  });

  it('a new intent name is a new observer: its own key, the old state left behind', async () => {
    const store = new MemoryStore();
    const client = makeClient(store);
    const { result, rerender } = renderHook(({ intent }) => useIdempotentMutation({ client, intent, request: pay }), {
      initialProps: { intent: NAME },
    });
    await act(() => result.current.mutateAsync());
    const first = result.current.key!;
    rerender({ intent: 'checkout:cart_2' });
    expect(result.current).toMatchObject({ status: 'idle', data: undefined });
    await waitFor(() => expect(result.current.key).toBeDefined());
    expect(result.current.key).not.toBe(first);
    expect(await store.get('default', 'checkout:cart_2')).toMatchObject({ key: result.current.key, state: 'ready' });
  });

  it('422 (key reused with another body) → status error with KeyReusedError', async () => {
    const key = 'key-reused-1';
    // Another device already used this key for a different payment.
    const other = await makeClient(new MemoryStore()).intent('elsewhere', { key });
    await other.post('payments', { json: { amount: 1 } });
    const store = new MemoryStore();
    const client = makeClient(store);
    await client.intent(NAME, { key });
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay }));
    await act(() => result.current.mutateAsync().catch(() => undefined));
    expect(result.current.status).toBe('error');
    expect(result.current.error).toBeInstanceOf(KeyReusedError);
    expect((result.current.error as KeyReusedError).status).toBe(422);
    expect(result.current).toMatchObject({ key, record: { state: 'failed' } });
  });

  it('shows retrying while the core retries, then success', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, match: { method: 'POST' } });
    const client = makeClient(new MemoryStore(), { retry: { baseDelay: 300 }, random: () => 0.99 });
    const onSuccess = vi.fn();
    const statuses: string[] = [];
    const pendingWhile: Record<string, boolean> = {};
    const { result } = renderHook(() => {
      const m = useIdempotentMutation({ client, intent: NAME, request: pay, onSuccess });
      if (statuses.at(-1) !== m.status) statuses.push(m.status);
      if (m.status === 'pending' || m.status === 'retrying') pendingWhile[m.status] = m.isPending;
      return m;
    });
    act(() => result.current.mutate());
    await waitFor(() => expect(result.current.status).toBe('success'));
    expect(statuses).toEqual(['idle', 'pending', 'retrying', 'success']);
    // isPending covers the retries: a `disabled={isPending}` button stays disabled throughout.
    expect(pendingWhile).toEqual({ pending: true, retrying: true });
    expect(result.current.attempts).toBe(2);
    expect(onSuccess).toHaveBeenCalledWith({ ...cart, id: 'id_1' }, undefined);
  });

  it('budget exhausted → status unknown with OutcomeUnknownError; mutate() resumes with the same key', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 2, match: { method: 'POST' } });
    const onError = vi.fn();
    const client = makeClient(new MemoryStore(), { retry: { maxAttempts: 2, baseDelay: 1 } });
    const { result } = renderHook(() => useIdempotentMutation({ client, intent: NAME, request: pay, onError }));
    await act(() => result.current.mutateAsync().catch(() => undefined));
    expect(result.current.status).toBe('unknown');
    expect(result.current.error).toBeInstanceOf(OutcomeUnknownError);
    expect(onError).toHaveBeenCalledTimes(1);
    const key = result.current.key!;
    await act(() => result.current.mutateAsync());
    expect(result.current).toMatchObject({ status: 'success', key, error: undefined });
    expect(contract.attempts(key)).toBe(3);
    expect(contract.effects(key)).toBe(1);
  });

  it('request through run() sends any transport under the intent key', async () => {
    const client = makeClient(new MemoryStore());
    const { result } = renderHook(() =>
      useIdempotentMutation({
        client,
        intent: NAME,
        request: async (amount: number | undefined, { intent, signal }) => ({
          data: await run(intent, async ({ key, attempt }) => ({ key, attempt, amount }), { signal }),
        }),
      }),
    );
    await waitFor(() => expect(result.current.key).toBeDefined());
    await act(() => result.current.mutateAsync(7));
    expect(result.current).toMatchObject({
      status: 'success',
      data: { key: result.current.key, attempt: 1, amount: 7 },
    });
  });

  it('abortOnUnmount: unmounting aborts the call; the intent stays unknown with its key', async () => {
    const store = new MemoryStore();
    const hang: typeof fetch = (input) =>
      new Promise((_, reject) => {
        const { signal } = input as Request;
        signal.addEventListener('abort', () => reject(signal.reason));
      });
    const client = makeClient(store, { fetch: hang });
    const { result, unmount } = renderHook(() =>
      useIdempotentMutation({
        client,
        intent: NAME,
        // The signal must reach the request for abortOnUnmount to cancel it.
        request: (_vars, { intent, signal }) => intent.post('payments', { json: cart, signal }),
        abortOnUnmount: true,
      }),
    );
    await waitFor(() => expect(result.current.key).toBeDefined());
    act(() => result.current.mutate());
    await waitFor(async () => expect((await store.get('default', NAME))?.state).toBe('in_flight'));
    unmount();
    await waitFor(async () => expect((await store.get('default', NAME))?.state).toBe('unknown'));
  });
});

describe('IdempotentMutationObserver (no framework)', () => {
  it('keeps its state while nobody listens and re-reads it on subscribe', async () => {
    const gated = gatedFetch();
    const observer = new IdempotentMutationObserver({
      client: makeClient(new MemoryStore(), { fetch: gated.fetch }),
      intent: NAME,
      request: pay,
    });
    const unsubscribe = observer.subscribe(() => {});
    const call = observer.mutateAsync();
    expect(observer.getState().status).toBe('pending');
    unsubscribe();
    gated.release();
    await call;
    const listener = vi.fn();
    observer.subscribe(listener);
    expect(observer.getState()).toMatchObject({ status: 'success', data: { ...cart, id: 'id_1' } });
  });
});

describe('types', () => {
  it('infers data from the schema and variables from the function', () => {
    const Payment = z.object({ id: z.string(), amount: z.number() });
    const client = makeClient(new MemoryStore());
    const { result } = renderHook(() =>
      useIdempotentMutation({
        client,
        intent: NAME,
        request: (amount: number | undefined, { intent }) =>
          intent.post('payments', { json: { ...cart, amount: amount ?? cart.amount }, schema: Payment }),
      }),
    );
    expectTypeOf(result.current.data).toEqualTypeOf<{ id: string; amount: number } | undefined>();
    expectTypeOf(result.current.mutateAsync).parameter(0).toEqualTypeOf<number | undefined>();
    expectTypeOf(result.current.status).toEqualTypeOf<
      'idle' | 'pending' | 'retrying' | 'success' | 'error' | 'unknown'
    >();
    expectTypeOf(result.current.reset).toEqualTypeOf<() => void>();
    expectTypeOf(result.current.isPending).toEqualTypeOf<boolean>();
  });
});
