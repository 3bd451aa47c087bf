/**
 * Round 4, `SqliteStore.integrityCheck()` on a thread of its own: closing the store stops
 * every check, including one asked for just before close() whose thread starts after.
 * A hook holds the check before it reads; nothing is timed.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { testHooks } from '../../node/sqlite-thread.js';
import { StoreError } from '../../src/errors.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function heldStore() {
  const { dir, remove } = await tempStoreDir();
  const hooks = new SharedArrayBuffer(12);
  const flags = new Int32Array(hooks);
  const store = new SqliteStore({ dir, fsync: false, [testHooks]: hooks } as ConstructorParameters<
    typeof SqliteStore
  >[0]);
  const release = () => {
    Atomics.store(flags, 2, 0);
    Atomics.notify(flags, 2);
  };
  cleanups.push(remove, () => store.close(), release);
  Atomics.store(flags, 2, 1); // every check waits before it reads
  return { store, release };
}

describe('r4: integrityCheck and close', () => {
  it('a check asked for right before close() fails with StoreError; it never answers after the store closed', async () => {
    const { store, release } = await heldStore();
    await store.open();
    const check = store.integrityCheck().then(
      (rows) => ({ rows }),
      (error: unknown) => ({ error }),
    );
    await store.close();
    release();
    const outcome = await check;
    expect(outcome).toEqual({ error: expect.any(StoreError) });
  });

  it('a check of a store never opened, closed meanwhile, fails with StoreError', async () => {
    const { store, release } = await heldStore();
    const check = store.integrityCheck().then(
      (rows) => ({ rows }),
      (error: unknown) => ({ error }),
    );
    await store.close();
    release();
    expect(await check).toEqual({ error: expect.any(StoreError) });
  });

  it('two checks at once, frames not yet checkpointed and a write open in another connection: both read ok', async () => {
    const { dir, remove } = await tempStoreDir();
    const store = new SqliteStore({ dir, fsync: false });
    cleanups.push(remove, () => store.close());
    await Promise.all(Array.from({ length: 300 }, (_, i) => store.claim(intentRecord('s', `n${i}`))));
    const other = new DatabaseSync(path.join(dir, 'intents.db'));
    cleanups.push(() => other.close());
    other.exec('BEGIN IMMEDIATE');
    other.exec("INSERT INTO meta (key, value) VALUES ('r4', 'uncommitted')");
    expect(await Promise.all([store.integrityCheck(), store.integrityCheck()])).toEqual([['ok'], ['ok']]);
    other.exec('ROLLBACK');
  });
});
