import type { IntentRecord } from '../store/store.js';
import { equal, match, ok } from './assert.js';
import { type Harness, intentRecord, SKIPPED, T0 } from './harness.js';

/** One test of the suite: `run` throws on a breach, or answers `SKIPPED` when the factory lacks what it needs. */
export interface ConformanceCase {
  group: string;
  name: string;
  run: (h: Harness) => Promise<undefined | typeof SKIPPED>;
}

/** Writes as the engine does: only over the record that has the key it holds. */
const sendAs = (key: string, seen: (string | undefined)[]) => (current: IntentRecord | undefined) => {
  seen.push(current?.key);
  return current?.key === key
    ? { ...current, state: 'in_flight' as const, attempts: 1, fingerprint: 'fp', updatedAt: T0 + 10 }
    : undefined;
};

/** claim, get, update and identity: the rules that keep one key per intent. */
export const recordCases: ConformanceCase[] = [
  {
    group: 'claim',
    name: 'creates a record that is not there and returns a copy of it',
    async run(h) {
      const { store } = await h.fresh();
      const record = intentRecord('u1', 'pay');
      const result = await store.claim(record);
      equal(result, { record, created: true }, 'claim() of a new intent');
      ok(result.record !== record, 'claim() must answer a copy, not the object it was given');
      equal(await store.get('u1', 'pay'), record, 'get() after the claim');
    },
  },
  {
    group: 'claim',
    name: 'returns the first record untouched on a second claim (created false)',
    async run(h) {
      const { store } = await h.fresh();
      const first = intentRecord('u1', 'pay', { key: 'k-first' });
      await store.claim(first);
      const second = await store.claim(intentRecord('u1', 'pay', { key: 'k-second', createdAt: T0 + 5 }));
      equal(second, { record: first, created: false }, 'a second claim');
      equal((await store.get('u1', 'pay'))?.key, 'k-first', 'the key after a second claim');
    },
  },
  {
    group: 'claim',
    name: 'concurrent claims of one intent end with one record, seen by every claimer',
    async run(h) {
      const { store } = await h.fresh();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.claim(intentRecord('u1', 'pay', { key: `k-${i}` }))),
      );
      const keys = [...new Set(results.map((result) => result.record.key))];
      equal(
        keys.length,
        1,
        'distinct keys answered to 12 concurrent claims (a claim is a constraint, not get-then-set)',
      );
      equal(results.filter((result) => result.created).length, 1, 'claims answered created: true');
      equal((await store.get('u1', 'pay'))?.key, keys[0], 'the stored key');
      equal((await store.list('u1')).length, 1, 'records listed');
    },
  },
  {
    group: 'claim',
    name: 'concurrent claims of many intents all land',
    async run(h) {
      const { store } = await h.fresh();
      const names = Array.from({ length: 100 }, (_, i) => `job:${i}`);
      const results = await Promise.all(names.map((n) => store.claim(intentRecord('u1', n))));
      ok(
        results.every((result) => result.created),
        'every claim of a distinct intent must answer created: true',
      );
      equal((await store.list('u1')).map((r) => r.name).sort(), [...names].sort(), 'the names listed');
      for (const n of names.slice(0, 10)) equal((await store.get('u1', n))?.key, `key-u1-${n}`, `the key of ${n}`);
    },
  },
  {
    group: 'claim',
    name: 'keeps optional fields',
    async run(h) {
      const { store } = await h.fresh();
      const record = intentRecord('u1', 'pay', { fingerprint: 'sha256:abc', status: 503, attempts: 2, ttl: 60_000 });
      await store.claim(record);
      equal(await store.get('u1', 'pay'), record, 'get() of a record with every optional field');
    },
  },
  {
    group: 'get',
    name: 'resolves undefined for an unknown intent',
    async run(h) {
      const { store } = await h.fresh();
      equal(await store.get('u1', 'nothing'), undefined, 'get() of an unknown intent');
    },
  },
  {
    group: 'get',
    name: 'returns a copy: mutating it does not change the store',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay'));
      const got = (await store.get('u1', 'pay'))!;
      got.state = 'failed';
      equal((await store.get('u1', 'pay'))?.state, 'ready', 'the state after mutating what get() answered');
    },
  },
  {
    group: 'update',
    name: 'passes the current record and stores what the updater returns',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay'));
      const seen: (IntentRecord | undefined)[] = [];
      const next = await store.update('u1', 'pay', (current) => {
        seen.push(current);
        return current && { ...current, state: 'in_flight', attempts: 1, fingerprint: 'fp', updatedAt: T0 + 1 };
      });
      equal(seen[0], intentRecord('u1', 'pay'), 'the record the updater was given');
      match(next, { state: 'in_flight', attempts: 1, fingerprint: 'fp', key: 'key-u1-pay' }, 'what update() answered');
      equal(await store.get('u1', 'pay'), next, 'get() after the update');
    },
  },
  {
    group: 'update',
    name: 'leaves the store alone when the updater returns undefined',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay'));
      equal(await store.update('u1', 'pay', () => undefined), intentRecord('u1', 'pay'), 'what update() answered');
      equal(await store.get('u1', 'pay'), intentRecord('u1', 'pay'), 'get() after an update that wrote nothing');
    },
  },
  {
    group: 'update',
    name: 'of a missing intent passes undefined and resolves undefined if nothing is returned',
    async run(h) {
      const { store } = await h.fresh();
      const given: unknown[] = [];
      const result = await store.update('u1', 'ghost', (current) => {
        given.push(current);
        return undefined;
      });
      ok(given.length > 0, 'the updater of a missing intent must run');
      equal(
        given,
        given.map(() => undefined),
        'what the updater of a missing intent was given',
      );
      equal(result, undefined, 'what update() answered');
      equal(await store.get('u1', 'ghost'), undefined, 'get() after');
    },
  },
  {
    group: 'update',
    name: 'of a missing intent stores the record the updater returns',
    async run(h) {
      const { store } = await h.fresh();
      const record = intentRecord('u1', 'made');
      equal(await store.update('u1', 'made', (current) => current ?? record), record, 'what update() answered');
      equal(await store.get('u1', 'made'), record, 'get() after');
    },
  },
  {
    group: 'update',
    name: 'concurrent updates of one record apply one after another (none lost)',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay'));
      await Promise.all(
        Array.from({ length: 20 }, () =>
          store.update('u1', 'pay', (current) => current && { ...current, attempts: current.attempts + 1 }),
        ),
      );
      equal((await store.get('u1', 'pay'))?.attempts, 20, 'attempts after 20 concurrent increments');
    },
  },
  {
    group: 'identity (a record is known by its key, not its version)',
    name: 'an update sees the record formed again by another client, not the deleted one it remembers',
    async run(h) {
      const made = await h.fresh();
      const other = made.reopen ? await h.reopened(made) : made.store;
      await made.store.claim(intentRecord('u1', 'pay', { key: 'k-first' }));
      await other.delete('u1', 'pay');
      const second = intentRecord('u1', 'pay', { key: 'k-second' });
      await other.claim(second);
      const seen: (string | undefined)[] = [];
      equal(await made.store.update('u1', 'pay', sendAs('k-first', seen)), second, 'what update() answered');
      equal(seen.at(-1), 'k-second', 'the key the updater last saw');
      equal(await other.get('u1', 'pay'), second, 'the record, read by the other client');
      equal(await made.store.get('u1', 'pay'), second, 'the record, read by the first');
    },
  },
  {
    group: 'identity (a record is known by its key, not its version)',
    name: 'a handle formed in a transaction that rolled back never writes over the record another client committed',
    async run(h) {
      const made = await h.fresh();
      if (!made.reopen || !made.claimRolledBack) return SKIPPED;
      const other = await h.reopened(made);
      await made.claimRolledBack(made.store, intentRecord('u1', 'pay', { key: 'k-rolled-back' }));
      const committed = intentRecord('u1', 'pay', { key: 'k-committed' });
      equal(await other.claim(committed), { record: committed, created: true }, 'a claim after the rollback');
      const seen: (string | undefined)[] = [];
      equal(await made.store.update('u1', 'pay', sendAs('k-rolled-back', seen)), committed, 'what update() answered');
      equal(seen.at(-1), 'k-committed', 'the key the updater last saw');
      equal(await other.get('u1', 'pay'), committed, 'the record after');
    },
  },
];
