/**
 * A SqliteStore's reads before its first write run on the main thread, read-only
 * (`node/sqlite-reader.ts`): a boundary of its own. What it cannot answer without a write
 * (a damaged row to quarantine) goes to the database thread; a file it must not touch is
 * refused as the thread would refuse it, untouched; a blocked intent stays blocked.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, SqliteStore } from '../node/sqlite-store.js';
import { CorruptRecordError, StoreError } from '../src/errors.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// Whether a thread starts is checked in its own process (store-sqlite-thread.test.ts): here a
// thread kept from a closed store may serve the next one, unseen.

/** A store over a file seeded with one claimed record ('u1'/'paid'), reopened fresh. */
async function seeded() {
  const { dir, remove } = await tempStoreDir();
  cleanups.push(remove);
  const first = await openSqliteStore({ dir });
  const { record } = await first.claim(intentRecord('u1', 'paid'));
  await first.close();
  const file = path.join(dir, 'intents.db');
  const store = new SqliteStore({ dir });
  cleanups.push(() => store.close());
  return { dir, file, store, record };
}

function setRow(file: string, name: string, text: string) {
  const db = new DatabaseSync(file);
  db.prepare(
    `INSERT INTO intents (scope, name, state, sweep_at, record) VALUES ('u1', ?, 'ready', 0, ?)
     ON CONFLICT DO UPDATE SET record = excluded.record`,
  ).run(name, text);
  db.close();
}

describe('SqliteStore reads before its first write', () => {
  it('concurrent first reads share one read-only connection, and close() closes it', async () => {
    const { file, store } = await seeded();
    const openOnFile = async () => {
      const { readdir, readlink } = await import('node:fs/promises');
      const fds = await readdir('/proc/self/fd');
      const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((t) => t === file).length;
    };
    const read = await Promise.all([store.get('u1', 'paid'), store.get('u1', 'paid'), store.get('u1', 'paid')]);
    expect(read.map((r) => r?.name)).toEqual(['paid', 'paid', 'paid']);
    expect(await openOnFile()).toBe(1);
    await store.close();
    expect(await openOnFile()).toBe(0);
  });

  it('a clean record is read', async () => {
    const { store, record } = await seeded();
    await store.open();
    expect((await store.get('u1', 'paid'))?.key).toBe(record.key);
    expect((await store.list('u1', ['ready'])).map((r) => r.name)).toEqual(['paid']);
  });

  it('a damaged row is handed to the thread, which quarantines it and keeps its key', async () => {
    const { file, store, record } = await seeded();
    setRow(file, 'paid', JSON.stringify({ ...record, state: 'exploded' }));
    expect(await store.get('u1', 'paid')).toMatchObject({ key: record.key, state: 'unknown' });
    expect(await store.listQuarantined('u1')).toHaveLength(1);
  });

  it('a damaged row met by list() is handed to the thread too', async () => {
    const { file, store } = await seeded();
    setRow(file, 'bad', 'not json');
    expect((await store.list('u1')).map((r) => r.name)).toEqual(['paid']);
    expect((await store.listQuarantined('u1')).map((q) => q.value)).toEqual(['not json']);
  });

  it('a blocked intent stays blocked (CorruptRecordError), on the main thread too', async () => {
    const { file, store } = await seeded();
    setRow(file, 'lost', JSON.stringify({ oncely: 'quarantined', reason: 'test', location: 'x#1', at: 1 }));
    await expect(store.get('u1', 'lost')).rejects.toBeInstanceOf(CorruptRecordError);
  });

  it("another program's database is refused with StoreFileError, its bytes untouched", async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const file = path.join(dir, 'intents.db');
    const db = new DatabaseSync(file);
    db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY); INSERT INTO orders VALUES (1)');
    db.close();
    const bytes = await readFile(file);
    const store = new SqliteStore({ dir });
    cleanups.push(() => store.close());
    await expect(store.get('u1', 'a')).rejects.toMatchObject({ problem: 'foreign' });
    await expect(store.open()).rejects.toMatchObject({ problem: 'foreign' });
    expect(await readFile(file)).toEqual(bytes);
  });

  it('a file that is not SQLite fails with a StoreError, untouched', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const file = path.join(dir, 'intents.db');
    await writeFile(file, 'this is not a database, and it is long enough to have a header of sorts.'.repeat(20));
    const bytes = await readFile(file);
    const store = new SqliteStore({ dir });
    cleanups.push(() => store.close());
    await expect(store.list('u1')).rejects.toBeInstanceOf(StoreError);
    expect(await readFile(file)).toEqual(bytes);
  });

  it('after the first write every read goes to the thread, behind it: a write is seen by the next read', async () => {
    const { store, record } = await seeded();
    expect((await store.get('u1', 'paid'))?.key).toBe(record.key);
    const written = store.update('u1', 'paid', (r) => r && { ...r, attempts: 7 });
    const read = store.get('u1', 'paid');
    await written;
    expect((await read)?.attempts).toBe(7);
  });
});
