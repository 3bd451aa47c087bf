/**
 * A FileStore directory (oncely 0.1) found at open is imported: every key in it survives.
 * `test/fixtures/filestore-0.1/` was written by FileStore itself before it was removed: 20
 * claims committed together (one file linked under 20 names), updates, a unicode scope,
 * an intent FileStore had blocked, a damaged record with a readable key, a truncated file.
 */
import { cp, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../node/sqlite-store.js';
import { CorruptRecordError } from '../src/errors.js';
import type { StoreEvent } from '../src/store/store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

const fixture = fileURLToPath(new URL('./fixtures/filestore-0.1', import.meta.url));
const T0 = 1_700_000_000_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function withFixture() {
  const { dir, remove } = await tempStoreDir();
  cleanups.push(remove);
  await cp(fixture, dir, { recursive: true });
  const open = async (events?: StoreEvent[]) => {
    const store = new SqliteStore({ dir, now: () => T0 + 10 });
    // Listeners subscribed before the store opens hear what the import set aside.
    if (events) store.subscribe((event) => events.push(event));
    await store.open();
    cleanups.push(() => store.close());
    return store;
  };
  return { dir, open };
}

describe('SqliteStore imports a FileStore directory', () => {
  it('keeps every key, state and field; moves scopes/ aside untouched', async () => {
    const { dir, open } = await withFixture();
    const store = await open();
    const jobs = await store.list('acme');
    const byName = new Map(jobs.map((record) => [record.name, record]));
    for (let i = 0; i < 20; i++) expect(byName.get(`job:${i}`)?.key, `job:${i}`).toBe(`key-acme-job:${i}`);
    expect(byName.get('job:3')).toEqual(
      intentRecord('acme', 'job:3', { state: 'in_flight', fingerprint: 'sha256:f3', attempts: 1, updatedAt: T0 + 1 }),
    );
    expect(byName.get('job:4')).toMatchObject({ state: 'unknown', attempts: 2, status: 503 });
    expect(byName.get('job:5')).toMatchObject({ state: 'succeeded', status: 201 });
    expect((await store.get('other tenant/é', 'checkout:💳'))?.key).toBe('key-unicode');
    // A damaged record whose key could be read: kept, as unknown.
    expect(byName.get('damaged')).toMatchObject({ key: 'key-damaged', state: 'unknown', fingerprint: 'sha256:fd' });
    expect(await store.list('acme', ['unknown'])).toHaveLength(2);
    const entries = await readdir(dir);
    expect(entries).toContain('filestore-imported');
    expect(entries).not.toContain('scopes');
    expect(await readdir(path.join(dir, 'filestore-imported'))).toHaveLength(2);
  });

  it('never mints a key over one it lost: blocked and unreadable slots stay blocked until deleted', async () => {
    const { open } = await withFixture();
    const events: StoreEvent[] = [];
    const store = await open(events);
    expect(events.map((event) => event.type === 'quarantine' && event.reason)).toEqual([
      expect.stringMatching(/its key was kept/),
      expect.stringMatching(/no usable key/),
    ]);
    for (const name of ['blocked', 'lost']) {
      await expect(store.claim(intentRecord('acme', name, { key: 'k-new' })), name).rejects.toBeInstanceOf(
        CorruptRecordError,
      );
      await expect(store.get('acme', name), name).rejects.toBeInstanceOf(CorruptRecordError);
    }
    // Blocked across a restart too.
    const again = await open();
    await expect(again.claim(intentRecord('acme', 'lost'))).rejects.toBeInstanceOf(CorruptRecordError);
    await again.delete('acme', 'lost');
    expect((await again.claim(intentRecord('acme', 'lost', { key: 'k-after' }))).created).toBe(true);
    expect(await store.listQuarantined('acme')).toEqual([
      expect.objectContaining({ name: 'damaged', salvagedKey: 'key-damaged' }),
    ]);
  });

  it('imports once: stores opening at once agree, and a later open does not bring deleted intents back', async () => {
    const { dir, open } = await withFixture();
    const [a, b] = await Promise.all([open(), open()]);
    expect(await a.list('acme')).toHaveLength(21);
    await b.delete('acme', 'job:0');
    await cp(path.join(dir, 'filestore-imported'), path.join(dir, 'scopes'), { recursive: true });
    const c = await open();
    expect(await c.get('acme', 'job:0')).toBeUndefined();
    expect(await c.list('acme')).toHaveLength(20);
  });
});
