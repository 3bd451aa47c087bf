/**
 * The contract every `Store` keeps, as a reusable vitest suite. Run it against a store
 * with `runStoreConformance('MyStore', async () => ({ store, reopen, cleanup }))`:
 * `makeStore` gives a fresh, empty store per test; `reopen` (optional) opens a second
 * store over the same data, as after a restart; `cleanup` (optional) removes the data.
 * Store-agnostic: no file, IndexedDB or Node specifics.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../src/errors.js';
import type { IntentRecord, IntentState, Store } from '../src/store/store.js';

export interface ConformanceStore {
  store: Store;
  /** Opens another store over the same data (a restart, another process or tab). */
  reopen?: () => Promise<Store>;
  /** Removes what the store left behind. */
  cleanup?: () => Promise<void>;
  /**
   * For stores that join the app's transactions: claims `record` through `store` inside
   * a transaction that then rolls back, and resolves after the rollback.
   */
  claimRolledBack?: (store: Store, record: IntentRecord) => Promise<void>;
}

const T0 = 1_700_000_000_000;

/** A valid record; `name` doubles as a readable key unless `extra.key` says otherwise. */
export function intentRecord(scope: string, name: string, extra: Partial<IntentRecord> = {}): IntentRecord {
  return {
    v: 1,
    scope,
    name,
    key: `key-${scope}-${name}`,
    state: 'ready',
    attempts: 0,
    createdAt: T0,
    updatedAt: T0,
    ...extra,
  };
}

/**
 * For stores that keep names as UTF-8 (SQLite, PostgreSQL), where two names with different
 * lone surrogates would be one row: every method refuses them; a well-formed pair is kept.
 */
export async function expectLoneSurrogatesRefused(store: Store): Promise<void> {
  for (const bad of ['\ud800', 'a\udc00b', '\udbff']) {
    await expect(store.claim(intentRecord('u1', bad))).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.claim(intentRecord(bad, 'n'))).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.get('u1', bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.update('u1', bad, () => intentRecord('u1', bad))).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.delete('u1', bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.list(bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.clear(bad)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.sweep(bad, Date.now())).rejects.toBeInstanceOf(InvalidArgumentError);
  }
  // A well-formed pair is one character: stored and found as itself.
  await store.claim(intentRecord('u1', 'card \ud83d\udcb3'));
  expect((await store.list('u1')).map((record) => record.name)).toContain('card \ud83d\udcb3');
}

const byName = (records: IntentRecord[]) => records.map((record) => record.name).sort();

export function runStoreConformance(name: string, makeStore: () => Promise<ConformanceStore>): void {
  describe(`${name}: store conformance`, () => {
    const opened: ConformanceStore[] = [];
    const extraStores: Store[] = [];
    const closed = new WeakSet<Store>();

    async function close(store: Store): Promise<void> {
      if (closed.has(store)) return;
      closed.add(store);
      await store.close?.();
    }

    async function fresh(): Promise<ConformanceStore> {
      const made = await makeStore();
      opened.push(made);
      return made;
    }

    async function reopened(made: ConformanceStore): Promise<Store> {
      const store = await made.reopen!();
      extraStores.push(store);
      return store;
    }

    afterEach(async () => {
      for (const store of extraStores.splice(0)) await close(store);
      for (const made of opened.splice(0)) {
        await close(made.store);
        await made.cleanup?.();
      }
    });

    describe('claim', () => {
      it('creates a record that is not there and returns a copy of it', async () => {
        const { store } = await fresh();
        const record = intentRecord('u1', 'pay');
        const result = await store.claim(record);
        expect(result).toEqual({ record, created: true });
        expect(result.record).not.toBe(record);
        expect(await store.get('u1', 'pay')).toEqual(record);
      });

      it('returns the first record untouched on a second claim (created false)', async () => {
        const { store } = await fresh();
        const first = intentRecord('u1', 'pay', { key: 'k-first' });
        await store.claim(first);
        const second = await store.claim(intentRecord('u1', 'pay', { key: 'k-second', createdAt: T0 + 5 }));
        expect(second).toEqual({ record: first, created: false });
        expect((await store.get('u1', 'pay'))?.key).toBe('k-first');
      });

      it('concurrent claims of one intent end with one record, seen by every claimer', async () => {
        const { store } = await fresh();
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => store.claim(intentRecord('u1', 'pay', { key: `k-${i}` }))),
        );
        const keys = new Set(results.map((result) => result.record.key));
        expect(keys.size).toBe(1);
        expect(results.filter((result) => result.created)).toHaveLength(1);
        expect((await store.get('u1', 'pay'))?.key).toBe([...keys][0]);
        expect(await store.list('u1')).toHaveLength(1);
      });

      it('concurrent claims of many intents all land', async () => {
        const { store } = await fresh();
        const names = Array.from({ length: 100 }, (_, i) => `job:${i}`);
        const results = await Promise.all(names.map((n) => store.claim(intentRecord('u1', n))));
        expect(results.every((result) => result.created)).toBe(true);
        expect(byName(await store.list('u1'))).toEqual([...names].sort());
        for (const n of names.slice(0, 10)) expect((await store.get('u1', n))?.key).toBe(`key-u1-${n}`);
      });

      it('keeps optional fields', async () => {
        const { store } = await fresh();
        const record = intentRecord('u1', 'pay', { fingerprint: 'sha256:abc', status: 503, attempts: 2 });
        await store.claim(record);
        expect(await store.get('u1', 'pay')).toEqual(record);
      });
    });

    describe('get', () => {
      it('resolves undefined for an unknown intent', async () => {
        const { store } = await fresh();
        expect(await store.get('u1', 'nothing')).toBeUndefined();
      });

      it('returns a copy: mutating it does not change the store', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay'));
        const got = (await store.get('u1', 'pay'))!;
        got.state = 'failed';
        expect((await store.get('u1', 'pay'))?.state).toBe('ready');
      });
    });

    describe('update', () => {
      it('passes the current record and stores what the updater returns', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay'));
        const seen: (IntentRecord | undefined)[] = [];
        const next = await store.update('u1', 'pay', (current) => {
          seen.push(current);
          return current && { ...current, state: 'in_flight', attempts: 1, fingerprint: 'fp', updatedAt: T0 + 1 };
        });
        expect(seen[0]).toEqual(intentRecord('u1', 'pay'));
        expect(next).toMatchObject({ state: 'in_flight', attempts: 1, fingerprint: 'fp', key: 'key-u1-pay' });
        expect(await store.get('u1', 'pay')).toEqual(next);
      });

      it('leaves the store alone when the updater returns undefined', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay'));
        expect(await store.update('u1', 'pay', () => undefined)).toEqual(intentRecord('u1', 'pay'));
        expect(await store.get('u1', 'pay')).toEqual(intentRecord('u1', 'pay'));
      });

      it('of a missing intent passes undefined and resolves undefined if nothing is returned', async () => {
        const { store } = await fresh();
        let called = false;
        const result = await store.update('u1', 'ghost', (current) => {
          called = true;
          expect(current).toBeUndefined();
          return undefined;
        });
        expect(called).toBe(true);
        expect(result).toBeUndefined();
        expect(await store.get('u1', 'ghost')).toBeUndefined();
      });

      it('of a missing intent stores the record the updater returns', async () => {
        const { store } = await fresh();
        const record = intentRecord('u1', 'made');
        expect(await store.update('u1', 'made', (current) => current ?? record)).toEqual(record);
        expect(await store.get('u1', 'made')).toEqual(record);
      });

      it('concurrent updates of one record apply one after another (none lost)', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay'));
        await Promise.all(
          Array.from({ length: 20 }, () =>
            store.update('u1', 'pay', (current) => current && { ...current, attempts: current.attempts + 1 }),
          ),
        );
        expect((await store.get('u1', 'pay'))?.attempts).toBe(20);
      });
    });

    describe('identity (a record is known by its key, not its version)', () => {
      /** Writes as the engine does: only over the record that has the key it holds. */
      const sendAs = (key: string, seen: (string | undefined)[]) => (current: IntentRecord | undefined) => {
        seen.push(current?.key);
        return current?.key === key
          ? { ...current, state: 'in_flight' as const, attempts: 1, fingerprint: 'fp', updatedAt: T0 + 10 }
          : undefined;
      };

      it('an update sees the record formed again by another client, not the deleted one it remembers', async () => {
        const made = await fresh();
        const other = made.reopen ? await reopened(made) : made.store;
        await made.store.claim(intentRecord('u1', 'pay', { key: 'k-first' }));
        await other.delete('u1', 'pay');
        const second = intentRecord('u1', 'pay', { key: 'k-second' });
        await other.claim(second);
        const seen: (string | undefined)[] = [];
        expect(await made.store.update('u1', 'pay', sendAs('k-first', seen))).toEqual(second);
        expect(seen.at(-1)).toBe('k-second');
        expect(await other.get('u1', 'pay')).toEqual(second);
        expect(await made.store.get('u1', 'pay')).toEqual(second);
      });

      it('a handle formed in a transaction that rolled back never writes over the record another client committed', async (context) => {
        const made = await fresh();
        if (!made.reopen || !made.claimRolledBack) return context.skip();
        const other = await reopened(made);
        await made.claimRolledBack(made.store, intentRecord('u1', 'pay', { key: 'k-rolled-back' }));
        const committed = intentRecord('u1', 'pay', { key: 'k-committed' });
        expect(await other.claim(committed)).toEqual({ record: committed, created: true });
        const seen: (string | undefined)[] = [];
        expect(await made.store.update('u1', 'pay', sendAs('k-rolled-back', seen))).toEqual(committed);
        expect(seen.at(-1)).toBe('k-committed');
        expect(await other.get('u1', 'pay')).toEqual(committed);
      });
    });

    describe('delete', () => {
      it('removes an intent; a later claim creates it afresh', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay', { key: 'k-old' }));
        await store.delete('u1', 'pay');
        expect(await store.get('u1', 'pay')).toBeUndefined();
        const again = await store.claim(intentRecord('u1', 'pay', { key: 'k-new' }));
        expect(again).toMatchObject({ created: true, record: { key: 'k-new' } });
      });

      it('with a key removes the intent only if it still has that key', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'pay', { key: 'k-current' }));
        await store.delete('u1', 'pay', 'k-stale');
        expect((await store.get('u1', 'pay'))?.key).toBe('k-current');
        await store.delete('u1', 'pay', 'k-current');
        expect(await store.get('u1', 'pay')).toBeUndefined();
      });

      it('of a missing intent does nothing', async () => {
        const { store } = await fresh();
        await store.delete('u1', 'nothing');
        await store.delete('u1', 'nothing', 'k');
        expect(await store.list('u1')).toEqual([]);
      });
    });

    describe('keepPending (reset and clear never forget what may have taken effect)', () => {
      const NOW = T0 + 1_000;
      async function seeded(store: Store) {
        const lease = (until: number) => ({ owner: 'other-process:call', until });
        const records = [
          intentRecord('u1', 'ready'),
          intentRecord('u1', 'succeeded', { state: 'succeeded' }),
          intentRecord('u1', 'failed', { state: 'failed' }),
          intentRecord('u1', 'in-flight', { state: 'in_flight', lease: lease(NOW + 5_000) }),
          intentRecord('u1', 'in-flight-dead', { state: 'in_flight', lease: lease(NOW - 5_000) }),
          intentRecord('u1', 'unknown', { state: 'unknown' }),
          // A succeeded intent sent again right now (for the server's replay) holds a live lease.
          intentRecord('u1', 'resending', { state: 'succeeded', lease: lease(NOW + 5_000) }),
          intentRecord('u1', 'resent-dead', { state: 'succeeded', lease: lease(NOW - 5_000) }),
        ];
        for (const record of records) await store.claim(record);
        return records;
      }
      const pending = ['in-flight', 'in-flight-dead', 'resending', 'unknown'];

      it('delete keeps a pending record (with or without its key) and removes a settled one', async () => {
        const { store } = await fresh();
        for (const record of await seeded(store)) {
          await store.delete('u1', record.name, record.key, { keepPending: NOW });
          await store.delete('u1', record.name, undefined, { keepPending: NOW });
        }
        expect(byName(await store.list('u1'))).toEqual(pending);
      });

      it('clear keeps the pending records of the scope, and removes all of them without it', async () => {
        const { store } = await fresh();
        await seeded(store);
        await store.claim(intentRecord('u2', 'in-flight', { state: 'in_flight' }));
        await store.clear('u1', { keepPending: NOW });
        expect(byName(await store.list('u1'))).toEqual(pending);
        await store.clear('u1');
        expect(await store.list('u1')).toEqual([]);
        expect(byName(await store.list('u2'))).toEqual(['in-flight']);
      });
    });

    describe('list', () => {
      it('lists the records of one scope, optionally by state', async () => {
        const { store } = await fresh();
        const states: IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];
        for (const state of states) await store.claim(intentRecord('u1', `i-${state}`, { state }));
        await store.claim(intentRecord('u2', 'other', { state: 'in_flight' }));
        expect(byName(await store.list('u1'))).toEqual(states.map((state) => `i-${state}`).sort());
        expect(byName(await store.list('u1', ['in_flight', 'unknown']))).toEqual(['i-in_flight', 'i-unknown']);
        expect(await store.list('u1', [])).toEqual([]);
        expect(await store.list('nobody')).toEqual([]);
        const [inFlight] = await store.list('u1', ['in_flight']);
        expect(inFlight).toEqual(intentRecord('u1', 'i-in_flight', { state: 'in_flight' }));
      });

      it('reflects updates and deletes', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'a'));
        await store.claim(intentRecord('u1', 'b'));
        await store.update('u1', 'a', (current) => current && { ...current, state: 'unknown' });
        await store.delete('u1', 'b');
        const listed = await store.list('u1');
        expect(listed).toHaveLength(1);
        expect(listed[0]).toMatchObject({ name: 'a', state: 'unknown' });
      });
    });

    describe('scopes', () => {
      it('isolate: one name under two scopes is two records', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('alice', 'checkout:1', { key: 'k-alice' }));
        const bob = await store.claim(intentRecord('bob', 'checkout:1', { key: 'k-bob' }));
        expect(bob.created).toBe(true);
        expect((await store.get('alice', 'checkout:1'))?.key).toBe('k-alice');
        expect((await store.get('bob', 'checkout:1'))?.key).toBe('k-bob');
        await store.update('alice', 'checkout:1', (current) => current && { ...current, state: 'succeeded' });
        expect((await store.get('bob', 'checkout:1'))?.state).toBe('ready');
        await store.delete('alice', 'checkout:1');
        expect((await store.get('bob', 'checkout:1'))?.key).toBe('k-bob');
      });

      it('clear(scope) removes only that scope', async () => {
        const { store } = await fresh();
        for (const n of ['a', 'b', 'c']) await store.claim(intentRecord('alice', n));
        await store.claim(intentRecord('bob', 'a'));
        await store.clear('alice');
        expect(await store.list('alice')).toEqual([]);
        expect(await store.get('alice', 'a')).toBeUndefined();
        expect(byName(await store.list('bob'))).toEqual(['a']);
        // The cleared scope can be used again.
        expect((await store.claim(intentRecord('alice', 'a', { key: 'k-after' }))).created).toBe(true);
        await store.clear('nobody');
      });

      it('tell apart scopes and names that would collide if concatenated', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('a:b', 'c', { key: 'k1' }));
        await store.claim(intentRecord('a', 'b:c', { key: 'k2' }));
        await store.claim(intentRecord('', 'a:b:c', { key: 'k3' }));
        expect((await store.get('a:b', 'c'))?.key).toBe('k1');
        expect((await store.get('a', 'b:c'))?.key).toBe('k2');
        expect((await store.get('', 'a:b:c'))?.key).toBe('k3');
        expect(await store.list('a')).toHaveLength(1);
      });
    });

    describe('sweep', () => {
      const DAY = 24 * 60 * 60 * 1000;

      it('removes only old succeeded, failed and ready records, and only of the scope it is given', async () => {
        const { store } = await fresh();
        const states: IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];
        for (const state of states) {
          await store.claim(intentRecord('u1', `old-${state}`, { state, updatedAt: T0 }));
          await store.claim(intentRecord('u1', `new-${state}`, { state, updatedAt: T0 + DAY }));
          await store.claim(intentRecord('u2', `old-${state}`, { state, updatedAt: T0 }));
        }
        const removed = await store.sweep('u1', T0 + DAY + 1);
        expect(removed).toBe(3);
        expect(byName(await store.list('u1'))).toEqual([
          'new-failed',
          'new-in_flight',
          'new-ready',
          'new-succeeded',
          'new-unknown',
          'old-in_flight',
          'old-unknown',
        ]);
        expect(await store.list('u2')).toHaveLength(5);
      });

      it('never removes in_flight or unknown, however old', async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'a', { state: 'in_flight', updatedAt: 0 }));
        await store.claim(intentRecord('u1', 'b', { state: 'unknown', updatedAt: 0 }));
        expect(await store.sweep('u1', Number.MAX_SAFE_INTEGER)).toBe(0);
        expect(await store.list('u1')).toHaveLength(2);
      });

      it("counts from updatedAt with each record's own ttl; a record exactly at its limit stays", async () => {
        const { store } = await fresh();
        await store.claim(intentRecord('u1', 'short', { state: 'succeeded', createdAt: 0, updatedAt: T0, ttl: 1_000 }));
        await store.claim(intentRecord('u1', 'long', { state: 'failed', updatedAt: T0, ttl: 60_000 }));
        await store.claim(intentRecord('u1', 'legacy', { state: 'ready', updatedAt: T0 }));
        expect(await store.sweep('u1', T0 + 1_000)).toBe(0);
        expect(await store.sweep('u1', T0 + 1_001)).toBe(1);
        expect(await store.sweep('u1', T0 + 60_001)).toBe(1);
        expect(byName(await store.list('u1'))).toEqual(['legacy']);
        expect(await store.sweep('u1', T0 + DAY + 1)).toBe(1);
      });
    });

    describe('reopen', () => {
      it('keeps records, states and scopes across a reopen', async (context) => {
        const made = await fresh();
        if (!made.reopen) return context.skip();
        const { store } = made;
        await store.claim(intentRecord('u1', 'pay', { key: 'k-pay' }));
        await store.claim(intentRecord('u1', 'gone', { key: 'k-gone' }));
        await store.claim(intentRecord('u2', 'pay', { key: 'k-u2' }));
        await store.update('u1', 'pay', (current) => current && { ...current, state: 'unknown', attempts: 3 });
        await store.delete('u1', 'gone');
        await close(store);

        const again = await reopened(made);
        expect(await again.get('u1', 'pay')).toMatchObject({ key: 'k-pay', state: 'unknown', attempts: 3 });
        expect(await again.get('u1', 'gone')).toBeUndefined();
        expect((await again.get('u2', 'pay'))?.key).toBe('k-u2');
        const claim = await again.claim(intentRecord('u1', 'pay', { key: 'k-other' }));
        expect(claim).toMatchObject({ created: false, record: { key: 'k-pay' } });
        expect(await again.list('u1', ['unknown'])).toHaveLength(1);
      });

      it('two stores over the same data agree on one key', async (context) => {
        const made = await fresh();
        if (!made.reopen) return context.skip();
        const other = await reopened(made);
        const [a, b] = await Promise.all([
          made.store.claim(intentRecord('u1', 'pay', { key: 'k-a' })),
          other.claim(intentRecord('u1', 'pay', { key: 'k-b' })),
        ]);
        expect(a.record.key).toBe(b.record.key);
        expect([a.created, b.created].filter(Boolean)).toHaveLength(1);
      });
    });
  });
}
