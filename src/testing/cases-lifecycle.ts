import type { IntentState, Store } from '../store/store.js';
import { byName, equal, match, ok } from './assert.js';
import type { ConformanceCase } from './cases-records.js';
import { intentRecord, SKIPPED, T0 } from './harness.js';

const NOW = T0 + 1_000;
const DAY = 24 * 60 * 60 * 1000;
const STATES: IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];

/** One record of every kind `keepPending` tells apart; the names of those it must keep. */
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
const PENDING = ['in-flight', 'in-flight-dead', 'resending', 'unknown'];

/** delete, keepPending, list, scopes, sweep and reopen: what may be forgotten, and by whom. */
export const lifecycleCases: ConformanceCase[] = [
  {
    group: 'delete',
    name: 'removes an intent; a later claim creates it afresh',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay', { key: 'k-old' }));
      await store.delete('u1', 'pay');
      equal(await store.get('u1', 'pay'), undefined, 'get() after delete()');
      match(
        await store.claim(intentRecord('u1', 'pay', { key: 'k-new' })),
        { created: true, record: { key: 'k-new' } },
        'a claim after delete()',
      );
    },
  },
  {
    group: 'delete',
    name: 'with a key removes the intent only if it still has that key',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'pay', { key: 'k-current' }));
      await store.delete('u1', 'pay', 'k-stale');
      equal((await store.get('u1', 'pay'))?.key, 'k-current', 'the key after delete() with another key');
      await store.delete('u1', 'pay', 'k-current');
      equal(await store.get('u1', 'pay'), undefined, 'get() after delete() with its key');
    },
  },
  {
    group: 'delete',
    name: 'of a missing intent does nothing',
    async run(h) {
      const { store } = await h.fresh();
      await store.delete('u1', 'nothing');
      await store.delete('u1', 'nothing', 'k');
      equal(await store.list('u1'), [], 'list() after');
    },
  },
  {
    group: 'keepPending (reset and clear never forget what may have taken effect)',
    name: 'delete keeps a pending record (with or without its key) and removes a settled one',
    async run(h) {
      const { store } = await h.fresh();
      for (const record of await seeded(store)) {
        await store.delete('u1', record.name, record.key, { keepPending: NOW });
        await store.delete('u1', record.name, undefined, { keepPending: NOW });
      }
      equal(byName(await store.list('u1')), PENDING, 'the records left by delete() with keepPending');
    },
  },
  {
    group: 'keepPending (reset and clear never forget what may have taken effect)',
    name: 'clear keeps the pending records of the scope, and removes all of them without it',
    async run(h) {
      const { store } = await h.fresh();
      await seeded(store);
      await store.claim(intentRecord('u2', 'in-flight', { state: 'in_flight' }));
      await store.clear('u1', { keepPending: NOW });
      equal(byName(await store.list('u1')), PENDING, 'the records left by clear() with keepPending');
      await store.clear('u1');
      equal(await store.list('u1'), [], 'the records left by clear() without it');
      equal(byName(await store.list('u2')), ['in-flight'], "another scope's records");
    },
  },
  {
    group: 'list',
    name: 'lists the records of one scope, optionally by state',
    async run(h) {
      const { store } = await h.fresh();
      for (const state of STATES) await store.claim(intentRecord('u1', `i-${state}`, { state }));
      await store.claim(intentRecord('u2', 'other', { state: 'in_flight' }));
      equal(byName(await store.list('u1')), STATES.map((state) => `i-${state}`).sort(), 'list(scope)');
      equal(byName(await store.list('u1', ['in_flight', 'unknown'])), ['i-in_flight', 'i-unknown'], 'list by state');
      equal(await store.list('u1', []), [], 'list with no state');
      equal(await store.list('nobody'), [], 'list of an empty scope');
      const [inFlight] = await store.list('u1', ['in_flight']);
      equal(inFlight, intentRecord('u1', 'i-in_flight', { state: 'in_flight' }), 'a listed record');
    },
  },
  {
    group: 'list',
    name: 'reflects updates and deletes',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'a'));
      await store.claim(intentRecord('u1', 'b'));
      await store.update('u1', 'a', (current) => current && { ...current, state: 'unknown' });
      await store.delete('u1', 'b');
      const listed = await store.list('u1');
      equal(listed.length, 1, 'records listed');
      match(listed[0], { name: 'a', state: 'unknown' }, 'the record listed');
    },
  },
  {
    group: 'scopes',
    name: 'isolate: one name under two scopes is two records',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('alice', 'checkout:1', { key: 'k-alice' }));
      const bob = await store.claim(intentRecord('bob', 'checkout:1', { key: 'k-bob' }));
      equal(bob.created, true, 'a claim of the same name under another scope: created');
      equal((await store.get('alice', 'checkout:1'))?.key, 'k-alice', "alice's key");
      equal((await store.get('bob', 'checkout:1'))?.key, 'k-bob', "bob's key");
      await store.update('alice', 'checkout:1', (current) => current && { ...current, state: 'succeeded' });
      equal((await store.get('bob', 'checkout:1'))?.state, 'ready', "bob's state after alice's update");
      await store.delete('alice', 'checkout:1');
      equal((await store.get('bob', 'checkout:1'))?.key, 'k-bob', "bob's key after alice's delete");
    },
  },
  {
    group: 'scopes',
    name: 'clear(scope) removes only that scope',
    async run(h) {
      const { store } = await h.fresh();
      for (const n of ['a', 'b', 'c']) await store.claim(intentRecord('alice', n));
      await store.claim(intentRecord('bob', 'a'));
      await store.clear('alice');
      equal(await store.list('alice'), [], 'the cleared scope');
      equal(await store.get('alice', 'a'), undefined, 'get() in the cleared scope');
      equal(byName(await store.list('bob')), ['a'], 'another scope');
      equal((await store.claim(intentRecord('alice', 'a', { key: 'k-after' }))).created, true, 'a claim after clear()');
      await store.clear('nobody');
    },
  },
  {
    group: 'scopes',
    name: 'tell apart scopes and names that would collide if concatenated',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('a:b', 'c', { key: 'k1' }));
      await store.claim(intentRecord('a', 'b:c', { key: 'k2' }));
      await store.claim(intentRecord('', 'a:b:c', { key: 'k3' }));
      equal((await store.get('a:b', 'c'))?.key, 'k1', "('a:b', 'c')");
      equal((await store.get('a', 'b:c'))?.key, 'k2', "('a', 'b:c')");
      equal((await store.get('', 'a:b:c'))?.key, 'k3', "('', 'a:b:c')");
      equal((await store.list('a')).length, 1, "records of scope 'a'");
    },
  },
  {
    group: 'sweep',
    name: 'removes only old succeeded, failed and ready records, and only of the scope it is given',
    async run(h) {
      const { store } = await h.fresh();
      for (const state of STATES) {
        await store.claim(intentRecord('u1', `old-${state}`, { state, updatedAt: T0 }));
        await store.claim(intentRecord('u1', `new-${state}`, { state, updatedAt: T0 + DAY }));
        await store.claim(intentRecord('u2', `old-${state}`, { state, updatedAt: T0 }));
      }
      equal(await store.sweep('u1', T0 + DAY + 1), 3, 'the count sweep() answered');
      const left = [
        'new-failed',
        'new-in_flight',
        'new-ready',
        'new-succeeded',
        'new-unknown',
        'old-in_flight',
        'old-unknown',
      ];
      equal(byName(await store.list('u1')), left, 'the records left');
      equal((await store.list('u2')).length, 5, "another scope's records");
    },
  },
  {
    group: 'sweep',
    name: 'never removes in_flight or unknown, however old',
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'a', { state: 'in_flight', updatedAt: 0 }));
      await store.claim(intentRecord('u1', 'b', { state: 'unknown', updatedAt: 0 }));
      equal(await store.sweep('u1', Number.MAX_SAFE_INTEGER), 0, 'the count sweep() answered');
      equal((await store.list('u1')).length, 2, 'records left');
    },
  },
  {
    group: 'sweep',
    name: "counts from updatedAt with each record's own ttl; a record exactly at its limit stays",
    async run(h) {
      const { store } = await h.fresh();
      await store.claim(intentRecord('u1', 'short', { state: 'succeeded', createdAt: 0, updatedAt: T0, ttl: 1_000 }));
      await store.claim(intentRecord('u1', 'long', { state: 'failed', updatedAt: T0, ttl: 60_000 }));
      await store.claim(intentRecord('u1', 'legacy', { state: 'ready', updatedAt: T0 }));
      equal(await store.sweep('u1', T0 + 1_000), 0, 'swept at the short limit');
      equal(await store.sweep('u1', T0 + 1_001), 1, 'swept past the short limit');
      equal(await store.sweep('u1', T0 + 60_001), 1, 'swept past the long limit');
      equal(byName(await store.list('u1')), ['legacy'], 'records left');
      equal(await store.sweep('u1', T0 + DAY + 1), 1, 'swept past 24 h (a record with no ttl)');
    },
  },
  {
    group: 'reopen',
    name: 'keeps records, states and scopes across a reopen',
    async run(h) {
      const made = await h.fresh();
      if (!made.reopen) return SKIPPED;
      const { store } = made;
      await store.claim(intentRecord('u1', 'pay', { key: 'k-pay' }));
      await store.claim(intentRecord('u1', 'gone', { key: 'k-gone' }));
      await store.claim(intentRecord('u2', 'pay', { key: 'k-u2' }));
      await store.update('u1', 'pay', (current) => current && { ...current, state: 'unknown', attempts: 3 });
      await store.delete('u1', 'gone');
      await h.close(store);

      const again = await h.reopened(made);
      match(await again.get('u1', 'pay'), { key: 'k-pay', state: 'unknown', attempts: 3 }, 'a record after reopen');
      equal(await again.get('u1', 'gone'), undefined, 'a deleted record after reopen');
      equal((await again.get('u2', 'pay'))?.key, 'k-u2', "another scope's key after reopen");
      const claim = await again.claim(intentRecord('u1', 'pay', { key: 'k-other' }));
      match(claim, { created: false, record: { key: 'k-pay' } }, 'a claim after reopen');
      equal((await again.list('u1', ['unknown'])).length, 1, 'unknown records after reopen');
    },
  },
  {
    group: 'reopen',
    name: 'two stores over the same data agree on one key',
    async run(h) {
      const made = await h.fresh();
      if (!made.reopen) return SKIPPED;
      const other = await h.reopened(made);
      const [a, b] = await Promise.all([
        made.store.claim(intentRecord('u1', 'pay', { key: 'k-a' })),
        other.claim(intentRecord('u1', 'pay', { key: 'k-b' })),
      ]);
      equal(a.record.key, b.record.key, 'the keys two stores answered');
      ok(
        [a.created, b.created].filter(Boolean).length === 1,
        'exactly one of two concurrent claims must answer created',
      );
    },
  },
];
