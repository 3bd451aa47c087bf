/**
 * Round 4, starting a thread is a boundary too: `new Worker()` throws when the runtime
 * refuses one (the permission model without --allow-worker: ERR_ACCESS_DENIED; out of
 * memory or threads: ERR_WORKER_INIT_FAILED). What the caller gets is a StoreError, an
 * OncelyError like every error oncely throws, not the runtime's error.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { OncelyError, StoreError } from '../../src/errors.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';

const refuse = vi.hoisted(() => ({ when: (_script: string | URL): boolean => false }));

vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:worker_threads')>();
  class Worker extends real.Worker {
    constructor(script: string | URL, options?: import('node:worker_threads').WorkerOptions) {
      if (refuse.when(script)) {
        throw Object.assign(new Error('Access to this API has been restricted'), { code: 'ERR_ACCESS_DENIED' });
      }
      super(script, options);
    }
  }
  return { ...real, default: { ...real, Worker }, Worker };
});

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  refuse.when = () => false;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function store() {
  const { dir, remove } = await tempStoreDir();
  const made = new SqliteStore({ dir, fsync: false });
  cleanups.push(remove, () => made.close());
  return made;
}

describe('r4: a thread the runtime refuses to start', () => {
  // First: no thread is kept from an earlier store yet, so the call needs a new one. Refused
  // before the store is made: a store starts a thread ahead when it is constructed.
  it('the database thread: the call fails with StoreError; the next call starts one', async () => {
    refuse.when = () => true;
    const s = await store();
    const error = await s.open().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OncelyError);
    expect(error).toBeInstanceOf(StoreError);
    refuse.when = () => false;
    await s.open();
    expect(await s.get('s', 'n')).toBeUndefined();
  });
  it("the integrity check's thread: integrityCheck() fails with StoreError, the store keeps working", async () => {
    const s = await store();
    await s.open();
    refuse.when = (script) => typeof script === 'string' && script.includes('PRAGMA integrity_check');
    const error = await s.integrityCheck().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreError);
    refuse.when = () => false;
    expect(await s.integrityCheck()).toEqual(['ok']);
  });
});
