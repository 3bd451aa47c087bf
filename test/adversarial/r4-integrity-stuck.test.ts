/**
 * Round 4, the integrity check's thread as a boundary that may never return: a thread
 * inside SQLite's native code (a long check, a stuck disk, a busy wait on a lock) does not
 * stop when terminated until it gets back to JavaScript. Here its `terminate()` never
 * settles, as such a thread's would. close() must still be bounded, and the check fail.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { testHooks } from '../../node/sqlite-thread.js';
import { StoreError } from '../../src/errors.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';

const threads = vi.hoisted(() => ({
  stuck: [] as { terminate(): Promise<number> }[],
  realTerminate: [] as (() => Promise<number>)[],
}));

vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:worker_threads')>();
  class Worker extends real.Worker {
    readonly #stuck: boolean;
    constructor(script: string | URL, options?: import('node:worker_threads').WorkerOptions) {
      super(script, options);
      this.#stuck = typeof script === 'string' && script.includes('PRAGMA integrity_check');
      if (this.#stuck) {
        threads.stuck.push(this);
        threads.realTerminate.push(() => super.terminate());
      }
    }
    override terminate(): Promise<number> {
      return this.#stuck ? new Promise<number>(() => {}) : super.terminate();
    }
  }
  return { ...real, default: { ...real, Worker }, Worker };
});

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('r4: an integrity check whose thread does not stop', () => {
  it('close() does not wait for it; the check fails with StoreError', { timeout: 20_000 }, async () => {
    const { dir, remove } = await tempStoreDir();
    const hooks = new SharedArrayBuffer(12);
    const flags = new Int32Array(hooks);
    Atomics.store(flags, 2, 1); // the check holds before it reads
    cleanups.push(remove, async () => {
      Atomics.store(flags, 2, 0);
      Atomics.notify(flags, 2);
      await Promise.all(threads.realTerminate.splice(0).map((terminate) => terminate()));
    });
    const store = new SqliteStore({ dir, fsync: false, [testHooks]: hooks } as ConstructorParameters<
      typeof SqliteStore
    >[0]);
    await store.open();
    const check = store.integrityCheck().then(
      (rows) => ({ rows }),
      (error: unknown) => ({ error }),
    );
    await vi.waitFor(() => expect(threads.stuck).toHaveLength(1));
    await store.close();
    expect(await check).toEqual({ error: expect.any(StoreError) });
  });
});
