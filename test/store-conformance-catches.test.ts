/**
 * The exported suite (`oncely/testing`) fails the stores it exists to catch: each store below
 * is MemoryStore with one rule of docs/stores.md broken, and `checkStore` must name the test
 * that breaks, while the MemoryStore itself passes every test.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../src/store/memory-store.js';
import type { IntentRecord, RecordUpdater, Store } from '../src/store/store.js';
import { checkStore, conformanceCases } from '../src/testing/index.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Each breach: how it changes a MemoryStore, and a test of the suite it must fail. */
const BREACHES: [string, (store: MemoryStore) => Partial<Store>, string][] = [
  [
    'a claim that is a lookup, then an insert',
    (store) => ({
      async claim(fresh: IntentRecord) {
        const existing = await store.get(fresh.scope, fresh.name);
        await tick();
        if (existing) return { record: existing, created: false };
        await store.update(fresh.scope, fresh.name, () => fresh);
        return { record: { ...fresh }, created: true };
      },
    }),
    'claim › concurrent claims of one intent end with one record, seen by every claimer',
  ],
  [
    'an update that reads, waits, then writes (lost updates)',
    (store) => ({
      async update(scope: string, name: string, updater: RecordUpdater) {
        const next = updater(await store.get(scope, name));
        await tick();
        return next ? store.update(scope, name, () => next) : store.get(scope, name);
      },
    }),
    'update › concurrent updates of one record apply one after another (none lost)',
  ],
  [
    'a delete that ignores the key it is given',
    (store) => ({ delete: (scope: string, name: string) => store.delete(scope, name) }),
    'delete › with a key removes the intent only if it still has that key',
  ],
  [
    'a delete that ignores keepPending',
    (store) => ({ delete: (scope: string, name: string, key?: string) => store.delete(scope, name, key) }),
    'keepPending (reset and clear never forget what may have taken effect) › delete keeps a pending record (with or without its key) and removes a settled one',
  ],
  [
    'a clear that ignores keepPending',
    (store) => ({ clear: (scope: string) => store.clear(scope) }),
    'keepPending (reset and clear never forget what may have taken effect) › clear keeps the pending records of the scope, and removes all of them without it',
  ],
  [
    'a sweep by age alone (it forgets in_flight and unknown)',
    (store) => ({
      async sweep(scope: string, now: number) {
        let removed = 0;
        for (const record of await store.list(scope))
          if (record.updatedAt + (record.ttl ?? 86_400_000) < now) {
            await store.delete(scope, record.name);
            removed++;
          }
        return removed;
      },
    }),
    'sweep › never removes in_flight or unknown, however old',
  ],
  [
    'a get that answers the stored object itself',
    (store) => {
      const kept = new Map<string, IntentRecord>();
      return {
        async get(scope: string, name: string) {
          const record = await store.get(scope, name);
          if (!record) return undefined;
          const id = `${scope}\n${name}`;
          if (!kept.has(id)) kept.set(id, record);
          return kept.get(id);
        },
      };
    },
    'get › returns a copy: mutating it does not change the store',
  ],
  [
    'a store keyed by scope + ":" + name',
    (store) => ({
      get: (scope: string, name: string) => store.get('', `${scope}:${name}`).then((r) => r && { ...r, scope, name }),
      async claim(fresh: IntentRecord) {
        const result = await store.claim({ ...fresh, scope: '', name: `${fresh.scope}:${fresh.name}` });
        return { ...result, record: { ...result.record, scope: fresh.scope, name: fresh.name } };
      },
    }),
    'scopes › tell apart scopes and names that would collide if concatenated',
  ],
  [
    'an update that answers before running its updater on a missing record',
    (store) => ({
      update: (scope: string, name: string, updater: RecordUpdater) =>
        store.get(scope, name).then((current) => (current ? store.update(scope, name, updater) : undefined)),
    }),
    'update › of a missing intent passes undefined and resolves undefined if nothing is returned',
  ],
];

function broken(breach: (store: MemoryStore) => Partial<Store>): Store {
  const store = new MemoryStore();
  const methods = ['claim', 'get', 'update', 'delete', 'list', 'clear', 'sweep'] as const;
  const base = Object.fromEntries(methods.map((m) => [m, store[m].bind(store)])) as unknown as Store;
  return { ...base, ...breach(store) };
}

describe('the exported conformance suite', () => {
  it('passes MemoryStore on every test, and lists every case once', async () => {
    const results = await checkStore(async () => ({ store: new MemoryStore() }));
    expect(results.filter((r) => r.outcome === 'failed')).toEqual([]);
    expect(results.map((r) => r.test)).toHaveLength(new Set(results.map((r) => r.test)).size);
    expect(results).toHaveLength(conformanceCases().length);
    // Without reopen or claimRolledBack, the tests that need them are skipped, not passed.
    expect(results.filter((r) => r.outcome === 'skipped').map((r) => r.test)).toEqual([
      'identity (a record is known by its key, not its version) › a handle formed in a transaction that rolled back never writes over the record another client committed',
      'reopen › keeps records, states and scopes across a reopen',
      'reopen › two stores over the same data agree on one key',
    ]);
  });

  it.each(BREACHES)('fails %s', async (_what, breach, test) => {
    const results = await checkStore(async () => ({ store: broken(breach) }));
    const failed = results.filter((r) => r.outcome === 'failed');
    expect(failed.map((r) => r.test)).toContain(test);
    expect(failed.find((r) => r.test === test)?.error).toMatch(/\S/);
  });

  it('fails a UTF-8 store that takes lone surrogates, only when asked to check them', async () => {
    const make = async () => ({ store: new MemoryStore() });
    const names = (await checkStore(make, { utf8Names: true })).filter((r) => r.outcome === 'failed');
    expect(names.map((r) => r.test)).toEqual([
      'names › a scope or name with a lone surrogate is refused by every method; a well-formed pair is kept',
    ]);
    expect(names[0]?.error).toContain('INVALID_ARGUMENT');
    expect((await checkStore(make)).every((r) => r.outcome !== 'failed')).toBe(true);
  });

  it('closes every store and runs cleanup after a failed test as after a passed one', async () => {
    let opened = 0;
    let cleaned = 0;
    let closed = 0;
    const results = await checkStore(async () => {
      opened++;
      const store = broken((s) => ({ delete: (scope: string, name: string) => s.delete(scope, name) }));
      return { store: { ...store, close: async () => void closed++ }, cleanup: async () => void cleaned++ };
    });
    expect(results.some((r) => r.outcome === 'failed')).toBe(true);
    expect(cleaned).toBe(opened);
    expect(closed).toBe(opened);
  });
});
