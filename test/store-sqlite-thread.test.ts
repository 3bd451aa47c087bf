/**
 * SqliteStore's database thread as a boundary that may hang (a stuck disk), die after
 * committing, or never finish closing. A test hook (a SharedArrayBuffer the worker reads)
 * blocks the thread inside a write with `Atomics.wait`, as a hung disk would: the thread
 * stops, the main thread must not. Bounds here only guard against hangs; nothing is timed.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, SqliteStore } from '../node/sqlite-store.js';
import { stallTimeout, testHooks } from '../node/sqlite-thread.js';
import { StoreError } from '../src/errors.js';
import { createClient } from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { tempStoreDir } from './fixtures/store-dirs.js';
import { intentRecord } from './store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A store whose thread blocks inside its next commit while `block()` holds, and ends after its next commit once `exitAfterCommit()`. */
async function hookedStore(options: Record<PropertyKey, unknown> = {}) {
  const { dir, remove } = await tempStoreDir();
  const hooks = new SharedArrayBuffer(12);
  const flags = new Int32Array(hooks);
  const store = new SqliteStore({ dir, ...options, [testHooks]: hooks } as ConstructorParameters<
    typeof SqliteStore
  >[0]);
  const release = (slot: number) => () => {
    Atomics.store(flags, slot, 0);
    Atomics.notify(flags, slot);
  };
  const unblock = release(0);
  cleanups.push(remove, () => store.close(), unblock, release(2));
  await store.open();
  return {
    dir,
    store,
    block: () => Atomics.store(flags, 0, 1),
    unblock,
    exitAfterCommit: () => Atomics.store(flags, 1, 1),
    /** Holds the next integrity check before it reads, as a check of a large file would take long. */
    holdCheck: () => Atomics.store(flags, 2, 1),
    releaseCheck: release(2),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SqliteStore: a stuck disk blocks its database thread, never the event loop', () => {
  it('a call ends with StoreError within storeTimeout; timers and another store keep running; unblocked, it works again', {
    timeout: 60_000,
  }, async () => {
    const stuck = await hookedStore();
    const { dir: otherDir, remove } = await tempStoreDir();
    const other = await openSqliteStore({ dir: otherDir });
    cleanups.push(remove, () => other.close());
    const contract = createContractServer();
    const client = (store: SqliteStore) =>
      createClient({
        baseUrl: 'https://api.test/',
        scope: 'u1',
        store,
        storeTimeout: 1000,
        fetch: contract.fetch as typeof fetch,
      });
    const a = client(stuck.store);
    const b = client(other);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    cleanups.push(() => clearInterval(ticker));

    stuck.block();
    const formed = a.intent('checkout:1').then(
      () => 'resolved',
      (error: unknown) => error,
    );
    // While the disk is stuck: the loop ticks and another store's client sends a request end to end.
    while (ticks < 5) await sleep(10);
    const paid = await (await b.intent('checkout:2')).post('payments', { json: { amount: 1 } });
    expect(paid.status).toBe(201);
    const error = await formed;
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'STORE_FAILED', sent: false });
    expect((error as Error).message).toMatch(/did not answer within 1000 ms/);
    const during = ticks;
    await sleep(50);
    expect(ticks).toBeGreaterThan(during);

    // The disk comes back: the blocked claim commits, and the store answers again.
    stuck.unblock();
    const again = await a.intent('checkout:1');
    expect((await stuck.store.get('u1', 'checkout:1'))?.key).toBe(again.key);
    expect((await again.post('payments', { json: { amount: 2 } })).status).toBe(201);
  });

  it('a thread silent past its stall bound fails its pending calls (no promise waits forever); the next call starts a new thread', {
    timeout: 60_000,
  }, async () => {
    const stuck = await hookedStore({ [stallTimeout]: 4000, lockTimeout: 20_000 });
    stuck.block();
    const claim = stuck.store.claim(intentRecord('u1', 'a')).catch((error: unknown) => error);
    const error = await claim;
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/has not answered for 4 s/);
    stuck.unblock();
    // The old thread, given up, ends; a new one serves the store (the claim it held may have committed).
    const { record } = await stuck.store.claim(intentRecord('u1', 'b'));
    expect(record.name).toBe('b');
    expect((await stuck.store.get('u1', 'b'))?.key).toBe(record.key);
  });

  it('close() of a store whose thread is stuck resolves (the thread is terminated); later calls fail as closed', {
    timeout: 60_000,
  }, async () => {
    const stuck = await hookedStore({ lockTimeout: 200 });
    stuck.block();
    const pending = stuck.store.claim(intentRecord('u1', 'a')).catch((error: unknown) => error);
    await stuck.store.close();
    expect(await pending).toBeInstanceOf(StoreError);
    await expect(stuck.store.get('u1', 'a')).rejects.toThrow(/closed/);
  });
});

describe('SqliteStore: an integrity check reads on a thread of its own', () => {
  it('a check longer than the stall bound neither fails nor holds up the store; it answers once done', {
    timeout: 60_000,
  }, async () => {
    const { store, holdCheck, releaseCheck } = await hookedStore({ [stallTimeout]: 1500 });
    holdCheck();
    let settled = false;
    const check = store.integrityCheck().finally(() => {
      settled = true;
    });
    // Past twice the stall bound, the store's own thread keeps answering.
    for (let i = 0; i < 6; i++) {
      const { record } = await store.claim(intentRecord('u1', `during:${i}`));
      expect((await store.get('u1', `during:${i}`))?.key).toBe(record.key);
      await sleep(500);
    }
    expect(settled).toBe(false);
    releaseCheck();
    expect(await check).toEqual(['ok']);
  });

  it('a check past its timeout fails with StoreError; closing the store stops a check under way', {
    timeout: 60_000,
  }, async () => {
    const { store, holdCheck } = await hookedStore();
    holdCheck();
    await expect(store.integrityCheck({ timeout: 300 })).rejects.toThrow(
      expect.objectContaining({ name: 'StoreError', message: expect.stringMatching(/did not finish within 300 ms/) }),
    );
    expect((await store.claim(intentRecord('u1', 'after'))).created).toBe(true);
    const running = store.integrityCheck().catch((error: unknown) => error);
    await sleep(100);
    await store.close();
    const error = await running;
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/stopped before it answered/);
  });
});

describe('SqliteStore: a database thread that dies', () => {
  it('exiting after its commit: the call fails with a typed StoreError, the write stands, the next call starts a new thread', {
    timeout: 60_000,
  }, async () => {
    const { store, exitAfterCommit } = await hookedStore();
    exitAfterCommit();
    const error = await store.claim(intentRecord('u1', 'a', { key: 'k-first' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/stopped .* may or may not have been committed\. Retry/);
    // The claim had committed: the retry finds it, through a new thread.
    const retried = await store.claim(intentRecord('u1', 'a', { key: 'k-second' }));
    expect(retried).toMatchObject({ created: false, record: { key: 'k-first' } });
  });

  it('through a client: intent() fails with StoreError (sent: false), and the next intent() finds the committed key', {
    timeout: 60_000,
  }, async () => {
    const { store, exitAfterCommit } = await hookedStore();
    const client = createClient({ baseUrl: 'https://api.test/', scope: 'u1', store, storeTimeout: 5000 });
    exitAfterCommit();
    await expect(client.intent('checkout:1')).rejects.toMatchObject({ code: 'STORE_FAILED', sent: false });
    const stored = await store.get('u1', 'checkout:1');
    expect((await client.intent('checkout:1')).key).toBe(stored?.key);
  });
});

describe('SqliteStore: the database thread keeps no process alive', () => {
  /** Runs `body` (module code with `SqliteStore`, `openSqliteStore` and `dir` in scope) in a new process; its last line, parsed, with the threads it started. */
  async function inProcess(dir: string, body: string): Promise<Record<string, unknown>> {
    const resolveHook = new URL('../scripts/ts-resolve.ts', import.meta.url).href;
    const storeModule = new URL('../node/sqlite-store.ts', import.meta.url).href;
    const script = `
      await import(${JSON.stringify(resolveHook)});
      const { subscribe } = await import('node:diagnostics_channel');
      let threads = 0;
      subscribe('worker_threads', () => threads++);
      const { SqliteStore, openSqliteStore } = await import(${JSON.stringify(storeModule)});
      const dir = ${JSON.stringify(dir)};
      const out = {};
      ${body}
      console.log(JSON.stringify({ ...out, threads }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 50_000,
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!);
  }

  it('a store constructed and never used starts no thread, touches no file, and its process exits by itself', {
    timeout: 60_000,
  }, async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const result = await inProcess(
      path.join(dir, 'never-used'),
      `const { existsSync } = await import('node:fs');
      new SqliteStore({ dir });
      new SqliteStore({ dir });
      await new Promise((resolve) => setTimeout(resolve, 200));
      out.created = existsSync(dir);`,
    );
    expect(result).toEqual({ threads: 0, created: false });
  });

  it('a process that opens a store and only reads starts no thread; its first write starts one, and reads then see it', {
    timeout: 60_000,
  }, async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const seeded = await openSqliteStore({ dir });
    const { record } = await seeded.claim(intentRecord('u1', 'paid'));
    await seeded.close();
    const result = await inProcess(
      dir,
      `const store = await openSqliteStore({ dir });
      out.key = (await store.get('u1', 'paid'))?.key;
      out.missing = (await store.get('u1', 'nothing')) ?? null;
      out.listed = (await store.list('u1')).map((r) => r.name);
      out.quarantined = (await store.listQuarantined()).length;
      out.readThreads = threads;
      const now = Date.now();
      await store.claim({ v: 1, scope: 'u1', name: 'new', key: 'k-new-0123456789', state: 'ready', attempts: 0, createdAt: now, updatedAt: now });
      out.after = (await store.list('u1')).map((r) => r.name).sort();
      await store.close();`,
    );
    expect(result).toEqual({
      key: record.key,
      missing: null,
      listed: ['paid'],
      quarantined: 0,
      readThreads: 0,
      after: ['new', 'paid'],
      threads: 1,
    });
  });

  it('reads of a directory with no store yet answer empty, start no thread and create nothing', {
    timeout: 60_000,
  }, async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const result = await inProcess(
      path.join(dir, 'empty'),
      `const { existsSync } = await import('node:fs');
      const store = new SqliteStore({ dir });
      out.got = (await store.get('u1', 'a')) ?? null;
      out.listed = await store.list('u1');
      out.created = existsSync(dir);
      await store.open();
      out.opened = existsSync(dir);
      await store.close();`,
    );
    // open() creates the file: a write, on the thread.
    expect(result).toEqual({ got: null, listed: [], created: false, opened: true, threads: 1 });
  });

  it('a script that uses the store and never closes it exits by itself', { timeout: 60_000 }, async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    const resolveHook = new URL('../scripts/ts-resolve.ts', import.meta.url).href;
    const storeModule = new URL('../node/sqlite-store.ts', import.meta.url).href;
    const script = `
      await import(${JSON.stringify(resolveHook)});
      const { openSqliteStore } = await import(${JSON.stringify(storeModule)});
      const store = await openSqliteStore({ dir: ${JSON.stringify(dir)} });
      const now = Date.now();
      await store.claim({ v: 1, scope: 's', name: 'n', key: 'k-exit-0123456789', state: 'ready', attempts: 0, createdAt: now, updatedAt: now });
      await store.update('s', 'n', (c) => c && { ...c, attempts: 1 });
      console.log('used');
    `;
    // The bound only guards against a hang: a script kept alive by the thread would be killed by it.
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 50_000,
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    });
    expect(stdout.trim()).toBe('used');
    const store = await openSqliteStore({ dir });
    cleanups.push(() => store.close());
    expect((await store.get('s', 'n'))?.attempts).toBe(1);
  });
});
