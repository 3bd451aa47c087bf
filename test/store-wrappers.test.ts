/**
 * Issue 26, point 1: a store the library wraps around a store must not lose a parameter
 * (the default Node client's store dropped `keepPending`, so reset() and clear() deleted an
 * intent on the wire). Every `Store` method, with every argument, goes through every
 * wrapper the library builds, as it builds it, and each argument must arrive.
 */
import 'fake-indexeddb/auto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient as createBrowserClient } from '../browser/default.js';
import { IdbStore } from '../browser/idb-store.js';
import { createClient as createNodeClient } from '../node/default.js';
import { SqliteStore } from '../node/sqlite-store.js';
import { LocalCoordinator } from '../src/coordinator/coordinator.js';
import { ietf } from '../src/profiles/profiles.js';
import { checkedStore } from '../src/store/checked-store.js';
import { MemoryStore } from '../src/store/memory-store.js';
import type { IntentRecord, ObservableStore, Store } from '../src/store/store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

type Method = keyof Store;
/** Every argument of every method, optional ones included: a method or a parameter added to `Store` is a type error here. */
type EveryArgument = { [M in Method]-?: Required<Parameters<NonNullable<Store[M]>>> };

const record = intentRecord('u1', 'pay', { key: 'k-pay' });
const updater = (current: IntentRecord | undefined) => current && { ...current, state: 'unknown' as const };
const ARGS: EveryArgument = {
  claim: [record, { durability: 'relaxed', transaction: { app: 'tx' } }],
  get: ['u1', 'pay'],
  update: ['u1', 'pay', updater, { durability: 'relaxed' }],
  delete: ['u1', 'pay', 'k-pay', { keepPending: 1_000 }],
  list: ['u1', ['ready', 'unknown']],
  clear: ['u1', { keepPending: 1_000 }],
  sweep: ['u1', 1_000, { limit: 3 }],
  close: [],
};
// `close` last: the others need the store open.
const ORDER = Object.keys(ARGS).sort((a, b) => Number(a === 'close') - Number(b === 'close')) as Method[];

interface Wrapper {
  /** The wrapped store, as the library builds it. */
  store: Store & Partial<ObservableStore>;
  /** The class of the store underneath: its methods are spied on, so the real ones run. */
  inner: { prototype: object };
  cleanup?: () => Promise<void>;
}

const saved = process.env.ONCELY_STATE_DIR;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (saved === undefined) delete process.env.ONCELY_STATE_DIR;
  else process.env.ONCELY_STATE_DIR = saved;
});

class ClosingMemoryStore extends MemoryStore {
  async close() {}
}

/** Every wrapper of a store that src/, node/, browser/ and postgres/ build. */
const WRAPPERS: Record<string, () => Promise<Wrapper>> = {
  // node/default.ts defaultStore(): the process's shared SqliteStore, one view per client.
  'createClient() of oncely in Node (default store)': async () => {
    const { dir, remove } = await tempStoreDir();
    process.env.ONCELY_STATE_DIR = dir;
    const client = createNodeClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    return { store: client.store, inner: SqliteStore, cleanup: remove };
  },
  // browser/default.ts: lazyStore(openBrowserStore()), over an IdbStore.
  'createClient() of oncely in browsers (default store)': async () => {
    const client = createBrowserClient({
      baseUrl: 'https://api.test/',
      scope: 'u1',
      coordinator: new LocalCoordinator(),
    });
    return { store: client.store, inner: IdbStore };
  },
  // src/client.ts: what the engine calls, every answer checked (checkedStore).
  'the engine’s view of any store (checkedStore)': async () => ({
    store: checkedStore(new ClosingMemoryStore(), ietf.encodeKey),
    inner: ClosingMemoryStore,
  }),
};

/**
 * Checks one argument arrived: a value as it was sent; a function (the updater) maybe
 * wrapped (the engine's view checks what it is given), but doing what the one sent does.
 */
function expectArrived(method: string, received: unknown, sent: unknown) {
  if (typeof sent !== 'function') {
    expect(received, method).toStrictEqual(sent);
    return;
  }
  expect(typeof received, method).toBe('function');
  const given = () => ({ ...record, state: 'ready' as const });
  expect((received as typeof updater)(given()), method).toStrictEqual((sent as typeof updater)(given()));
}

describe('every Store method, with every argument, through every wrapper the library builds', () => {
  for (const [name, build] of Object.entries(WRAPPERS))
    it(name, async () => {
      const { store, inner, cleanup } = await build();
      if (cleanup) cleanups.push(cleanup);
      const proto = inner.prototype as Record<string, (...args: unknown[]) => unknown>;
      await store.claim(intentRecord('u1', 'pay', { key: 'k-pay' }));
      for (const method of ORDER) {
        const spy = vi.spyOn(proto, method);
        const args = ARGS[method] as unknown[];
        await (store[method] as (...args: unknown[]) => Promise<unknown>)(...args);
        expect(spy, `${method} reached the store underneath`).toHaveBeenCalled();
        const received = spy.mock.lastCall!;
        expect(received, `${method}: every argument arrives`).toHaveLength(args.length);
        for (const [i, arg] of args.entries()) expectArrived(`${method} argument ${i + 1}`, received[i], arg);
        spy.mockRestore();
      }
    });

  it('and a listener of the store’s events reaches the store underneath', async () => {
    for (const [name, build] of Object.entries(WRAPPERS)) {
      const { store, inner, cleanup } = await build();
      if (cleanup) cleanups.push(cleanup);
      const subscribe = (inner.prototype as Partial<ObservableStore>).subscribe;
      if (!store.subscribe || !subscribe) continue;
      const spy = vi.spyOn(inner.prototype as ObservableStore, 'subscribe');
      const listener = () => {};
      const unsubscribe = store.subscribe(listener);
      await store.get('u1', 'pay'); // the lazy store subscribes once open
      expect(spy.mock.lastCall?.[0], name).toBe(listener);
      unsubscribe();
      await store.close?.();
    }
  });

  it('every function of src/, node/, browser/ and postgres/ that returns a store is in the table above', async () => {
    // Not wrappers: they open a store of their own.
    // (openSqliteKeyStore opens oncely/server's key store, which is no client Store.)
    const OPENERS = ['openSqliteStore', 'openBrowserStore', 'openSqliteKeyStore'];
    const WRAPPING = ['defaultStore', 'lazyStore', 'checkedStore'];
    const found: string[] = [];
    for (const dir of ['src', 'node', 'browser', 'postgres'])
      for (const file of await readdir(dir, { recursive: true })) {
        if (!file.endsWith('.ts')) continue;
        const text = await readFile(path.join(dir, file), 'utf8');
        for (const m of text.matchAll(/^(?:export )?(?:async )?function (\w+).*\):\s*.*Store\b.*\{$/gm))
          found.push(m[1]!);
      }
    expect(found.sort(), 'a new store wrapper: add it to WRAPPERS').toEqual([...OPENERS, ...WRAPPING].sort());
  });
});
