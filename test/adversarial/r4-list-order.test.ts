/**
 * Round 4, SqliteStore's database thread takes a turn's calls together and commits on a
 * tick after them: a read behind a write of the same turn waits for it (`read` checks
 * the commit queue). `list()` must too, or a caller's own earlier write is missing from
 * its later list (pending() would not show an intent just written in_flight).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('r4: a read behind a write of the same caller', () => {
  it('list() called after update() sees what update() wrote, as get() does', async () => {
    const { dir, remove } = await tempStoreDir();
    const store = new SqliteStore({ dir, fsync: false });
    cleanups.push(remove, () => store.close());
    await store.open();
    const written = store.update('s', 'n', () => intentRecord('s', 'n', { state: 'in_flight' }));
    const got = store.get('s', 'n');
    const listed = store.list('s', ['in_flight']);
    await written;
    expect((await got)?.state).toBe('in_flight');
    expect((await listed).map((record) => record.name)).toEqual(['n']);
  });
});
