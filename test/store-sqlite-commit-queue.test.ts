/**
 * The SQLite group commit (`node/commit-queue.ts`) over a real file, on this thread as on
 * the database thread: the writes of one turn share one transaction, and a write that
 * fails undoes its own changes only, whether it fails alone, first, in the middle or last
 * of its batch (the batch runs without savepoints first, and again with them after a failure).
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitQueue, type WriteContext } from '../node/commit-queue.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function queue() {
  const { dir, remove } = await tempStoreDir();
  const file = path.join(dir, 'q.db');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT PRIMARY KEY)');
  let commits = 0;
  const q = new CommitQueue(db, { file, fsync: true, lockTimeout: 1000, wrap: (e) => e, committed: () => commits++ });
  cleanups.push(
    remove,
    () => db.close(),
    () => q.close(),
  );
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  const rows = () => (db.prepare('SELECT x FROM t ORDER BY x').all() as { x: string }[]).map((r) => r.x);
  return { q, insert, rows, commits: () => commits };
}

const boom = new Error('the write failed');

describe('CommitQueue: one transaction per turn, each write undone alone', () => {
  for (const failing of [0, 1, 3]) {
    it(`a write that throws after its insert, at ${failing} of 4 in one batch: its row is undone, the others commit`, async () => {
      const { q, insert, rows, commits } = await queue();
      const jobs = [0, 1, 2, 3].map((i) =>
        q.submit(true, () => {
          insert.run(`row${i}`);
          if (i === failing) throw boom;
          return i;
        }),
      );
      const settled = await Promise.allSettled(jobs);
      expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(
        [0, 1, 2, 3].map((i) => (i === failing ? 'the write failed' : i)),
      );
      expect(rows()).toEqual([0, 1, 2, 3].filter((i) => i !== failing).map((i) => `row${i}`));
      expect(commits()).toBe(1);
    });
  }

  it('a write alone that throws leaves nothing; a constraint failure fails its write only', async () => {
    const { q, insert, rows } = await queue();
    const alone = q.submit(true, () => {
      insert.run('a');
      throw boom;
    });
    await expect(alone).rejects.toThrow('the write failed');
    expect(rows()).toEqual([]);
    const settled = await Promise.allSettled([
      q.submit(true, () => insert.run('b')),
      q.submit(true, () => insert.run('b')),
      q.submit(true, () => insert.run('c')),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(rows()).toEqual(['b', 'c']);
  });

  it("failAfterCommit keeps the write and rejects it once committed; its afterCommit runs, a failed write's does not", async () => {
    const { q, insert, rows } = await queue();
    const ran: string[] = [];
    const job = (name: string, outcome: 'ok' | 'throw' | 'keep') => (context: WriteContext) => {
      insert.run(name);
      context.afterCommit(() => ran.push(name));
      if (outcome === 'throw') throw boom;
      if (outcome === 'keep') context.failAfterCommit(new Error(`kept ${name}`));
      return name;
    };
    const settled = await Promise.allSettled([
      q.submit(true, job('x', 'ok')),
      q.submit(true, job('y', 'keep')),
      q.submit(true, job('z', 'throw')),
    ]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([
      'x',
      'kept y',
      'the write failed',
    ]);
    expect(rows()).toEqual(['x', 'y']);
    expect(ran).toEqual(['x', 'y']);
  });
});
