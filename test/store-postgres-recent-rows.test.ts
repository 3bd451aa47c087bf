/** `PostgresStore`'s cache of the rows it saw last (postgres/recent-rows.ts): no database. */
import { describe, expect, it } from 'vitest';
import { RecentRows } from '../postgres/recent-rows.js';
import type { StoredRecord } from '../postgres/rows.js';

const row = (name: string, version = '1'): StoredRecord => ({
  record: {
    v: 1,
    scope: name.startsWith('b') ? 'b' : 'a',
    name,
    key: `k-${name}`,
    state: 'ready',
    attempts: 0,
    createdAt: 1,
    updatedAt: 1,
  },
  version,
});

describe('RecentRows', () => {
  it('keeps about `size` rows, the most recently set; an older one set again is kept', () => {
    const rows = new RecentRows(4);
    for (const name of ['a1', 'a2', 'a3', 'a4']) rows.set(name, row(name));
    rows.set('a1', row('a1', '2')); // used again: young again
    rows.set('a5', row('a5'));
    rows.set('a6', row('a6'));
    expect(rows.get('a1')?.version).toBe('2');
    expect(['a5', 'a6'].map((n) => rows.get(n)?.version)).toEqual(['1', '1']);
    expect(['a2', 'a3', 'a4'].filter((n) => rows.get(n))).toEqual([]);
  });

  it('a delete forgets every copy: an older one never comes back', () => {
    const rows = new RecentRows(4);
    rows.set('a1', row('a1', '1'));
    rows.set('a2', row('a2'));
    rows.set('a3', row('a3')); // a1, a2 now the older half
    rows.set('a1', row('a1', '2'));
    rows.delete('a1');
    expect(rows.get('a1')).toBeUndefined();
    rows.deleteWhere((stored) => stored.record.scope === 'a');
    expect(['a2', 'a3'].map((n) => rows.get(n))).toEqual([undefined, undefined]);
  });

  it('deleteWhere forgets only what it says; size 0 remembers nothing', () => {
    const rows = new RecentRows(10);
    for (const name of ['a1', 'b1', 'a2', 'b2']) rows.set(name, row(name));
    rows.deleteWhere((stored) => stored.record.scope === 'b');
    expect(['a1', 'b1', 'a2', 'b2'].map((n) => Boolean(rows.get(n)))).toEqual([true, false, true, false]);
    const none = new RecentRows(0);
    none.set('a1', row('a1'));
    expect(none.get('a1')).toBeUndefined();
  });
});
