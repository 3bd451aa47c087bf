import 'fake-indexeddb/auto';
import { IDBDatabase, IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdbStore, type IdbStoreOptions } from '../browser/idb-store.js';
import { InvalidArgumentError } from '../src/errors.js';
import type { IntentRecord, IntentState } from '../src/store/store.js';

const open: IdbStore[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((store) => store.close()));
});

/** A store over `factory`: each call is another "tab" of the same origin. */
function tab(factory: IDBFactory, options: IdbStoreOptions = {}): IdbStore {
  const store = new IdbStore({ indexedDB: factory, ...options });
  open.push(store);
  return store;
}

function record(scope: string, name: string, key: string, extra: Partial<IntentRecord> = {}): IntentRecord {
  return { v: 1, scope, name, key, state: 'ready', attempts: 0, createdAt: 1_000, updatedAt: 1_000, ...extra };
}

describe('IdbStore across tabs', () => {
  it('two tabs claiming the same intent at once end with one key', async () => {
    const factory = new IDBFactory();
    const [a, b] = [tab(factory), tab(factory)];
    const names = Array.from({ length: 40 }, (_, i) => `checkout:${i}`);
    const results = await Promise.all(
      names.flatMap((name) => [a.claim(record('u1', name, `a-${name}`)), b.claim(record('u1', name, `b-${name}`))]),
    );
    for (let i = 0; i < names.length; i++) {
      const [fromA, fromB] = [results[2 * i]!, results[2 * i + 1]!];
      expect(fromA.record.key).toBe(fromB.record.key);
      expect([fromA.created, fromB.created].filter(Boolean)).toHaveLength(1);
      expect((await a.get('u1', names[i]!))?.key).toBe(fromA.record.key);
    }
  });

  it('a claim is durable: a new store over the same database finds the key', async () => {
    const factory = new IDBFactory();
    const first = tab(factory);
    const { record: claimed } = await first.claim(record('u1', 'pay', 'k-1'));
    await first.close();
    const again = await tab(factory).claim(record('u1', 'pay', 'k-2'));
    expect(again).toEqual({ record: claimed, created: false });
  });

  it('update is atomic across tabs: concurrent increments are all kept', async () => {
    const factory = new IDBFactory();
    const [a, b] = [tab(factory), tab(factory)];
    await a.claim(record('u1', 'pay', 'k'));
    const bump = (store: IdbStore) =>
      store.update('u1', 'pay', (current) => current && { ...current, attempts: current.attempts + 1 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => bump(i % 2 ? a : b)));
    expect((await a.get('u1', 'pay'))?.attempts).toBe(20);
  });

  it('uses its own database and object store, never idb-keyval defaults', async () => {
    const factory = new IDBFactory();
    await tab(factory).claim(record('u1', 'pay', 'k'));
    await tab(factory, { dbName: 'custom', storeName: 'mine' }).claim(record('u1', 'pay', 'k2'));
    const names = (await factory.databases()).map((db) => db.name).sort();
    expect(names).toEqual(['custom', 'oncely']);
  });

  it('adds its object store to an existing database that lacks it', async () => {
    const factory = new IDBFactory();
    await tab(factory, { storeName: 'a' }).claim(record('u1', 'pay', 'ka'));
    await tab(factory, { storeName: 'b' }).claim(record('u1', 'pay', 'kb'));
    expect((await tab(factory, { storeName: 'a' }).get('u1', 'pay'))?.key).toBe('ka');
  });

  it('yields to another tab upgrading the database, then reconnects', async () => {
    const factory = new IDBFactory();
    const store = tab(factory);
    await store.claim(record('u1', 'pay', 'k'));
    const upgraded = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = factory.open('oncely', 2);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
      request.onblocked = () => reject(new Error('blocked by the open store'));
    });
    upgraded.close();
    expect((await store.get('u1', 'pay'))?.key).toBe('k');
  });

  it('writes with strict durability by default (flushed to disk before a claim resolves)', async () => {
    const spy = vi.spyOn(IDBDatabase.prototype, 'transaction');
    let writes: unknown[];
    try {
      await tab(new IDBFactory()).claim(record('u1', 'pay', 'k'));
      await tab(new IDBFactory(), { durability: 'relaxed' }).claim(record('u1', 'pay', 'k'));
      writes = spy.mock.calls.filter((call) => call[1] === 'readwrite').map((call) => call[2]);
    } finally {
      spy.mockRestore();
    }
    expect(writes).toEqual([{ durability: 'strict' }, { durability: 'relaxed' }]);
  });

  it('rejects invalid records instead of storing them', async () => {
    const store = tab(new IDBFactory());
    await expect(store.claim({ ...record('u1', 'pay', 'k'), key: '' })).rejects.toBeInstanceOf(InvalidArgumentError);
    await store.claim(record('u1', 'pay', 'k'));
    await expect(store.update('u1', 'pay', (r) => r && { ...r, name: 'other' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect((await store.get('u1', 'pay'))?.name).toBe('pay');
  });

  it('delete with a key removes the record only while it still has that key', async () => {
    const store = tab(new IDBFactory());
    await store.claim(record('u1', 'pay', 'k1'));
    await store.delete('u1', 'pay', 'other');
    expect(await store.get('u1', 'pay')).toBeDefined();
    await store.delete('u1', 'pay', 'k1');
    expect(await store.get('u1', 'pay')).toBeUndefined();
  });
});

describe('IdbStore scopes', () => {
  it('list and clear touch one scope only, even with prefix-sharing scope names', async () => {
    const store = tab(new IDBFactory());
    const scopes = ['u1', 'u10', 'u', 'u1\u0000x', ''];
    for (const scope of scopes) {
      await store.claim(record(scope, 'a', `${scope}-a`));
      await store.claim(record(scope, 'b', `${scope}-b`, { state: 'unknown' }));
    }
    expect((await store.list('u1')).map((r) => r.key).sort()).toEqual(['u1-a', 'u1-b']);
    expect((await store.list('u1', ['unknown'])).map((r) => r.key)).toEqual(['u1-b']);
    await store.clear('u1');
    expect(await store.list('u1')).toEqual([]);
    for (const scope of scopes.filter((s) => s !== 'u1')) {
      expect((await store.list(scope)).map((r) => r.key).sort()).toEqual([`${scope}-a`, `${scope}-b`]);
    }
  });
});

describe('IdbStore sweep', () => {
  const DAY = 24 * 60 * 60 * 1000;
  const states: IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];

  it('removes only old sweepable records, at most sweepBatch examined per call, resuming where it stopped', async () => {
    const store = tab(new IDBFactory(), { sweepBatch: 4 });
    for (let i = 0; i < 10; i++) {
      const state = states[i % states.length]!;
      await store.claim(record('s', `n${String(i).padStart(2, '0')}`, `k${i}`, { state, updatedAt: i < 8 ? 10 : 99 }));
    }
    // Old and sweepable: n00 ready, n02 succeeded, n03 failed, n05 ready, n07 succeeded (n08/n09 are recent).
    const removed = [
      await store.sweep('s', 50 + DAY),
      await store.sweep('s', 50 + DAY),
      await store.sweep('s', 50 + DAY),
    ];
    expect(removed).toEqual([3, 2, 0]);
    const left = (await store.list('s')).map((r) => `${r.name}:${r.state}`).sort();
    expect(left).toEqual(['n01:in_flight', 'n04:unknown', 'n06:in_flight', 'n08:failed', 'n09:unknown']);
    expect(await store.sweep('s', 50 + DAY)).toBe(0);
  });
});
