/**
 * Round 3, the SQLite database thread's lock waits (`commit-queue.ts`, `retryWhileBusy`):
 * "a clock may lie" (rule 11). The wait for another process's write lock is bounded by
 * `lockTimeout`, measured on the wall clock (`Date.now()`); a wall clock stepped back
 * (NTP, a VM resumed, a user fixing the time) stretches that bound by the step, and the
 * thread, alive and retrying, answers its heartbeats, so the stall watchdog never ends
 * the call either. The queue runs here on this thread over a real file, as it does on
 * the database thread; the step is a spy on `Date.now`.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CommitQueue } from '../../node/commit-queue.js';
import { retryWhileBusy } from '../../node/sqlite-open.js';
import { StoreError } from '../../src/errors.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function lockedFile() {
  const { dir, remove } = await tempStoreDir();
  const file = path.join(dir, 'x.db');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x)');
  const other = new DatabaseSync(file);
  other.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (0)'); // another process's write lock, held
  cleanups.push(
    remove,
    () => db.close(),
    () => other.close(),
  );
  return { db, file };
}

/** From now on the wall clock reads an hour earlier. */
function stepBack() {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => real() - 3_600_000);
}

const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise.then(
      () => 'resolved',
      (error: unknown) => (error instanceof StoreError ? 'StoreError' : String(error)),
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), ms)),
  ]);

describe('r3: SQLite lock waits and the wall clock', () => {
  it('a write waiting for the lock fails within lockTimeout even if the wall clock steps back', async () => {
    const { db, file } = await lockedFile();
    const queue = new CommitQueue(db, { file, fsync: false, lockTimeout: 300, wrap: (e) => e });
    const write = queue.submit(true, () => db.prepare('INSERT INTO t VALUES (1)').run());
    await new Promise((resolve) => setTimeout(resolve, 50)); // its first tries met the lock
    stepBack();
    expect(await within(write, 2_000)).toBe('StoreError'); // was 'still waiting' (for an hour)
  });

  it('a read retried while busy fails within lockTimeout even if the wall clock steps back', async () => {
    let calls = 0;
    const busy = Object.assign(new Error('database is locked'), { errcode: 5 });
    const read = retryWhileBusy(() => {
      if (++calls === 3) stepBack();
      throw busy;
    }, 300);
    expect(await within(read, 2_000)).toBe('Error: database is locked'); // was 'still waiting'
  });
});
