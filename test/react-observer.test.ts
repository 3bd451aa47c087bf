/**
 * The framework-free observer from the core entry, with no DOM and no React: what a Vue,
 * Svelte or Solid binding builds on (docs/bindings.md).
 */
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../browser/cross-tab.js';
import {
  IdempotentMutationObserver,
  initialMutationState,
  MemoryStore,
  type MutationAction,
  type MutationState,
  type MutationStatus,
  type RecordUpdater,
  reduceMutation,
} from '../src/index.js';
import { NoteMap } from './adversarial/harness.js';
import { buffered, cart, makeClient, NAME, pay, setupHookContract } from './helpers/react.js';

const { contract } = setupHookContract();

/** The smallest binding: a "ref" that follows getState(), as a Vue shallowRef or a Svelte store would. */
function bind<T>(observer: IdempotentMutationObserver<T>) {
  const ref = { value: observer.getState(), seen: [] as MutationStatus[] };
  const unsubscribe = observer.subscribe(() => {
    ref.value = observer.getState();
    if (ref.seen.at(-1) !== ref.value.status) ref.seen.push(ref.value.status);
  });
  return { ref, unsubscribe };
}

const until = async (check: () => boolean) => {
  await expect.poll(check).toBe(true);
};

describe('IdempotentMutationObserver from `oncely` (no framework)', () => {
  it('claims on subscribe, sends once for two mutate() calls, shows success with the booleans', async () => {
    const store = new MemoryStore();
    const observer = new IdempotentMutationObserver({ client: makeClient(store), intent: NAME, request: pay });
    const { ref, unsubscribe } = bind(observer);
    await until(() => ref.value.key !== undefined);
    expect(ref.value).toMatchObject({ status: 'idle', isIdle: true, isPending: false });
    observer.mutate();
    observer.mutate();
    // The state moves at once; subscribers hear of it in the next frame, after the request left.
    expect(observer.getState()).toMatchObject({ status: 'pending', isPending: true });
    await until(() => ref.value.isSuccess);
    expect(ref.value).toMatchObject({ data: { ...cart, id: 'id_1' }, isError: false, isIdle: false });
    expect(contract.effects(ref.value.key!)).toBe(1);
    expect(contract.attempts(ref.value.key!)).toBe(1);
    unsubscribe();
  });

  it('under a kept lock mutate() hands the request to fetch before any subscriber hears of pending (a render would hold it back)', async () => {
    const coordinator = new WebLocksCoordinator({ channel: `oncely-observer-${process.pid}`, notes: new NoteMap() });
    const log: string[] = [];
    const client = makeClient(new MemoryStore(), {
      coordinator,
      fetch: (input, init) => {
        log.push('fetch');
        return buffered(input, init);
      },
    });
    const observer = new IdempotentMutationObserver({ client, intent: NAME, request: pay });
    const { ref, unsubscribe } = bind(observer);
    try {
      await until(() => ref.value.key !== undefined);
      await new Promise((resolve) => setTimeout(resolve, 20)); // the lock is kept, its record read
      observer.subscribe(() => log.push(observer.getState().status));
      observer.mutate();
      expect(log).toEqual(['fetch']);
      await until(() => ref.value.isSuccess);
      expect(log.slice(0, 2)).toEqual(['fetch', 'pending']);
    } finally {
      unsubscribe();
      coordinator.close();
    }
  });

  it('a success whose outcome write fails (a full disk): success with the data and the StoreError as warning (issue 32 §3)', async () => {
    const store = new MemoryStore();
    const observer = new IdempotentMutationObserver({ client: makeClient(store), intent: NAME, request: pay });
    const { ref, unsubscribe } = bind(observer);
    await until(() => ref.value.key !== undefined);
    const update = store.update.bind(store);
    store.update = (scope: string, name: string, updater: RecordUpdater) =>
      update(scope, name, updater).then((stored) => {
        if (stored?.state === 'succeeded') throw new DOMException('', 'QuotaExceededError');
        return stored;
      });
    observer.mutate();
    await until(() => ref.value.isSuccess);
    expect(ref.value).toMatchObject({ data: { ...cart, id: 'id_1' }, isError: false });
    expect(ref.value.warning).toMatchObject({ code: 'STORE_FAILED', sent: true });
    expect(String(ref.value.warning)).toContain('QuotaExceededError');
    expect(contract.effects(ref.value.key!)).toBe(1);
    unsubscribe();
  });

  it('an outcome write that fails after the call ended (it was queued): the success shows at once, the warning when the write fails (issue 30 §2)', async () => {
    const store = new MemoryStore();
    const observer = new IdempotentMutationObserver({ client: makeClient(store), intent: NAME, request: pay });
    const { ref, unsubscribe } = bind(observer);
    await until(() => ref.value.key !== undefined);
    let fail = () => {};
    const failing = new Promise<void>((resolve) => {
      fail = resolve;
    });
    const update = store.update.bind(store);
    store.update = async (scope: string, name: string, updater: RecordUpdater) => {
      const current = await store.get(scope, name);
      if (current?.state !== 'in_flight' || updater(current)?.state !== 'succeeded')
        return update(scope, name, updater);
      await failing;
      throw new DOMException('', 'QuotaExceededError');
    };
    observer.mutate();
    await until(() => ref.value.isSuccess);
    expect(ref.value).toMatchObject({ data: { ...cart, id: 'id_1' }, warning: undefined });
    fail();
    await until(() => ref.value.warning !== undefined);
    expect(ref.value).toMatchObject({
      status: 'success',
      data: { ...cart, id: 'id_1' },
      record: { state: 'in_flight' },
    });
    expect(ref.value.warning).toMatchObject({ code: 'STORE_FAILED', sent: true });
    expect(contract.effects(ref.value.key!)).toBe(1);
    unsubscribe();
  });

  it('the core entry pulls in no React', async () => {
    const result = await build({
      stdin: { contents: "export { IdempotentMutationObserver } from './src/index.ts';", resolveDir: process.cwd() },
      bundle: true,
      write: false,
      metafile: true,
      platform: 'neutral',
      format: 'esm',
      mainFields: ['module', 'main'],
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((file) => file.includes('src/observer/mutation-observer.ts'))).toBe(true);
    expect(inputs.filter((file) => /node_modules\/(react|react-dom)\//.test(file))).toEqual([]);
  });
});

describe('reduceMutation: the booleans follow the status', () => {
  const record = { key: 'k', state: 'succeeded' } as unknown as NonNullable<MutationState<unknown>['record']>;
  const actions: MutationAction<unknown>[] = [
    { type: 'pending' },
    { type: 'attempt', attempt: 2, retry: true },
    { type: 'success', data: 1, replayed: false, attempts: 1, record },
    { type: 'error', error: new Error('x'), status: 'error', attempts: 1, record },
    { type: 'error', error: new Error('x'), status: 'unknown', attempts: 1, record },
    { type: 'stored', record, status: 'success' },
    { type: 'reset' },
    { type: 'forgotten' },
  ];
  const flags = (s: MutationState<unknown>) => ({
    isIdle: s.status === 'idle',
    isPending: s.status === 'pending' || s.status === 'retrying',
    isSuccess: s.status === 'success',
    isError: s.status === 'error' || s.status === 'unknown',
  });

  it('for every action from every state reached', () => {
    const states: MutationState<unknown>[] = [initialMutationState];
    for (let i = 0; i < states.length && i < 40; i++)
      for (const action of actions) {
        const from = states[i]!;
        const next = reduceMutation(from, action);
        expect(next).toMatchObject(flags(next));
        if (!states.some((s) => s.status === next.status && s.data === next.data)) states.push(next);
      }
    expect(new Set(states.map((s) => s.status))).toEqual(
      new Set(['idle', 'pending', 'retrying', 'success', 'error', 'unknown']),
    );
  });

  it('reset keeps the key and record, clears the rest; it leaves a call in flight showing', () => {
    const success = reduceMutation(initialMutationState, {
      type: 'success',
      data: 1,
      replayed: true,
      attempts: 2,
      record,
    });
    expect(reduceMutation(success, { type: 'reset' })).toMatchObject({
      status: 'idle',
      key: 'k',
      record,
      data: undefined,
      replayed: undefined,
      attempts: 0,
    });
    const pending = reduceMutation(success, { type: 'pending' });
    expect(reduceMutation(pending, { type: 'reset' })).toBe(pending);
    expect(reduceMutation(success, { type: 'forgotten' })).toMatchObject({ status: 'idle', key: undefined });
  });
});
