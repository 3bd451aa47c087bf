import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { IntentRecord, StoreEvent } from '../src/store/store.js';

type OpenStoreModule = typeof import('../browser/open-store.js');

/** A fresh copy of the module, so its warn-once state starts clean. */
async function freshModule(): Promise<OpenStoreModule> {
  vi.resetModules();
  return import('../browser/open-store.js');
}

/** A factory whose `open` fails the way private modes and `file:` pages make it fail. */
function failingFactory(mode: 'error' | 'throw' | 'hang'): IDBFactory {
  return {
    open() {
      if (mode === 'throw') throw new DOMException('Access to IndexedDB denied', 'SecurityError');
      const request = {} as { error?: DOMException; onerror?: () => void };
      if (mode === 'error') {
        setTimeout(() => {
          request.error = new DOMException('A mutation operation was attempted', 'InvalidStateError');
          request.onerror?.();
        });
      }
      return request;
    },
  } as unknown as IDBFactory;
}

const fresh: IntentRecord = {
  v: 1,
  scope: 'u1',
  name: 'pay',
  key: 'k1',
  state: 'ready',
  attempts: 0,
  createdAt: 1,
  updatedAt: 1,
};

let warn: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

function collect(store: { subscribe(listener: (event: StoreEvent) => void): () => void }): StoreEvent[] {
  const events: StoreEvent[] = [];
  store.subscribe((event) => events.push(event));
  return events;
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('openBrowserStore', () => {
  it('returns an IdbStore when IndexedDB works, with no event and no warning', async () => {
    const { openBrowserStore } = await freshModule();
    const { IdbStore } = await import('../browser/idb-store.js');
    const store = await openBrowserStore({ indexedDB: new IDBFactory() });
    expect(store).toBeInstanceOf(IdbStore);
    const events = collect(store);
    await store.claim(fresh);
    await tick();
    expect(events).toEqual([]);
    expect(warn).not.toHaveBeenCalled();
    await store.close?.();
  });

  it('falls back to memory when indexedDB is undefined: one event per subscriber, one warning', async () => {
    vi.stubGlobal('indexedDB', undefined);
    const { openBrowserStore, MemoryFallbackStore } = await freshModule();
    const store = await openBrowserStore();
    expect(store).toBeInstanceOf(MemoryFallbackStore);
    const early = collect(store);
    await tick();
    const late = collect(store);
    await tick();
    const expected = [{ type: 'fallback', reason: expect.stringContaining('IndexedDB is not available') }];
    expect(early).toEqual(expected);
    expect(late).toEqual(expected);
    expect((await store.claim(fresh)).created).toBe(true);
    expect((await store.claim({ ...fresh, key: 'k2' })).record.key).toBe('k1');
    await tick();
    expect(early).toHaveLength(1);

    await openBrowserStore(); // a second fallback in the same page does not warn again
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toMatch(/^oncely: IndexedDB is unavailable.*in memory only/);
  });

  for (const mode of ['error', 'throw'] as const) {
    it(`falls back when indexedDB.open ${mode === 'error' ? 'fails' : 'throws'}`, async () => {
      const { openBrowserStore, MemoryFallbackStore } = await freshModule();
      const store = await openBrowserStore({ indexedDB: failingFactory(mode) });
      expect(store).toBeInstanceOf(MemoryFallbackStore);
      expect((store as InstanceType<typeof MemoryFallbackStore>).reason).toMatch(
        mode === 'error' ? /InvalidStateError/ : /SecurityError/,
      );
      expect(warn).toHaveBeenCalledTimes(1);
    });
  }

  it('falls back when indexedDB.open never settles, after openTimeout', async () => {
    const { openBrowserStore, MemoryFallbackStore } = await freshModule();
    const store = await openBrowserStore({ indexedDB: failingFactory('hang'), openTimeout: 20 });
    expect(store).toBeInstanceOf(MemoryFallbackStore);
    const events = collect(store);
    await tick();
    expect(events).toEqual([{ type: 'fallback', reason: 'IndexedDB did not open within 20 ms' }]);
  });

  it('falls back when reading indexedDB itself throws, and importing never touches it', async () => {
    let reads = 0;
    Object.defineProperty(globalThis, 'indexedDB', {
      configurable: true,
      get() {
        reads++;
        throw new DOMException('The operation is insecure.', 'SecurityError');
      },
    });
    try {
      const { openBrowserStore } = await freshModule();
      const { IdbStore } = await import('../browser/idb-store.js');
      const { WebLocksCoordinator } = await import('../browser/cross-tab.js');
      new IdbStore();
      new WebLocksCoordinator();
      expect(reads).toBe(0);
      const store = await openBrowserStore();
      expect(reads).toBe(1);
      expect(await store.get('u1', 'pay')).toBeUndefined();
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      Object.defineProperty(globalThis, 'indexedDB', { configurable: true, writable: true, value: new IDBFactory() });
    }
  });
});
