/**
 * Round 4, SqliteStore's database thread drains every queued message in one go
 * (`receiveMessageOnPort`): a 'close' queued behind calls is taken in the same loop as
 * they are. A call made before close() must still get its answer, not a closed database.
 *
 * The file is made on this thread (no database thread yet, so none is kept as a spare):
 * the store's thread then starts with the call and the close already queued for it.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../node/sqlite-open.js';
import { rowValue } from '../../node/sqlite-rows.js';
import { SqliteStore } from '../../node/sqlite-store.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('r4: close queued behind calls', () => {
  it('list() called before close() answers (its quarantine write is not run on a closed database)', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const file = path.join(dir, 'intents.db');
    const { db, rows } = await openDatabase({ dir, file, lockTimeout: 1000, now: Date.now });
    rows.insert('s', 'a', rowValue(intentRecord('s', 'a')));
    rows.insert('s', 'bad', { text: 'not json', state: 'ready', sweepAt: 0 });
    db.close();

    const store = new SqliteStore({ dir, fsync: false });
    const listed = store.list('s').then(
      (records) => ({ names: records.map((record) => record.name) }),
      (error: unknown) => ({ error: String(error) }),
    );
    await store.close();
    expect(await listed).toEqual({ names: ['a'] });

    const after = new SqliteStore({ dir, fsync: false });
    cleanups.push(() => after.close());
    expect((await after.listQuarantined('s')).map((entry) => entry.value)).toEqual(['not json']);
  });
});
