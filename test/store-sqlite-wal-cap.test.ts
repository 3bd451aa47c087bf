/**
 * The fault rows of the WAL cap's checkpoint (`node/commit-queue.ts`): once the WAL reaches
 * `WAL_CAP`, the group commit runs `PRAGMA wal_checkpoint(PASSIVE)` from its own connection
 * in a `setImmediate` after the batch is answered, and swallows what it throws. That call
 * hands control to SQLite at a moment the queue does not choose (the store may have closed,
 * a transaction may be open), and SQLite may throw before or after copying the frames, or
 * answer garbage. Whatever it does, no write fails, no promise is left pending, nothing
 * throws out of the `setImmediate` (on the database thread an uncaught exception ends the
 * thread), and a later try starts the WAL over.
 *
 * The queue runs here on this thread over a real file (as in store-sqlite-commit-queue),
 * with `fsync: true` (the cap is part of the WAL zeros, which only a durable store writes)
 * and SQLite's auto-checkpoint off, as the database thread sets it once its checkpointer
 * thread runs. Faults are injected into the checkpoint statement only, through the handle
 * the queue prepares it on. That the cap bounds the WAL under a real store's writes that
 * never pause is store-sqlite.test.ts's 'under writes that never pause the WAL stays bounded'.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitQueue } from '../node/commit-queue.js';
import { WAL_CAP } from '../node/wal-zeros.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

const CHUNK = 1 << 20;
/** One write's blob: with its pages' frame headers, about 33 KB of frames. */
const BLOB = 32 << 10;
const PER_BATCH = 8;
/** One batch's frames, at most (a leaf page and the b-tree's interior pages on top). */
const BATCH_FRAMES = PER_BATCH * (BLOB + 2 * 4096) * 1.1;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
/** Errors thrown out of a callback (the checkpoint's `setImmediate`): on the database thread, its end. */
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);
beforeEach(() => {
  uncaught.length = 0;
  process.on('uncaughtException', onUncaught);
});
afterEach(async () => {
  process.off('uncaughtException', onUncaught);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Rejects when `promise` is still pending after `ms`: a write the queue never answers. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * `throws-before`: SQLite fails before copying anything (SQLITE_BUSY); `throws-after`: it
 * copied the frames, then failed; `garbage`: it copied them and answered nonsense; `lies`:
 * it answers that it copied everything and did nothing.
 */
type Fault = 'throws-before' | 'throws-after' | 'garbage' | 'lies' | undefined;

/** The WAL's header: its checkpoint sequence number goes up each time SQLite starts the WAL over. */
function walGeneration(file: string): number {
  const fd = openSync(`${file}-wal`, 'r');
  try {
    const header = Buffer.alloc(32);
    readSync(fd, header, 0, 32, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

/**
 * A commit queue over a fresh WAL database, its checkpoint statement open to `fault`
 * (and counted). `write()` runs one batch of writes and waits a turn of the loop after it,
 * as the database thread does between messages: the cap's checkpoint runs there.
 */
async function capped() {
  const { dir, remove } = await tempStoreDir();
  const file = path.join(dir, 'cap.db');
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (n INTEGER PRIMARY KEY, v BLOB)');
  const state = { fault: undefined as Fault, tries: 0, threw: 0, copied: 0, slowest: 0 };
  const faulty = (statement: StatementSync) =>
    new Proxy(statement, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property !== 'get') return typeof value === 'function' ? value.bind(target) : value;
        return (...args: never[]) => {
          state.tries++;
          const fault = state.fault;
          if (fault === 'throws-before') {
            state.threw++;
            throw Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 });
          }
          if (fault === 'lies') return { busy: 0, log: 0, checkpointed: 0 };
          const started = performance.now();
          const row = target.get(...args) as { busy: number; log: number; checkpointed: number };
          state.slowest = Math.max(state.slowest, performance.now() - started);
          if (row.busy === 0 && row.log === row.checkpointed) state.copied++;
          if (fault === 'throws-after') {
            state.threw++;
            throw Object.assign(new Error('disk I/O error'), { code: 'ERR_SQLITE_ERROR', errcode: 10 });
          }
          return fault === 'garbage' ? { busy: 'yes', log: Number.NaN } : row;
        };
      },
    });
  const handle = new Proxy(db, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'prepare') {
        return (sql: string) => {
          const statement = target.prepare(sql);
          return sql.includes('wal_checkpoint') ? faulty(statement) : statement;
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  let syncs = 0;
  const q = new CommitQueue(handle, {
    file,
    fsync: true,
    lockTimeout: 1000,
    wrap: (e) => e,
    synced: () => syncs++,
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await within(q.close(), 15_000, 'close()');
    if (db.isOpen) db.close();
  };
  cleanups.push(remove, close);
  const insert = db.prepare('INSERT INTO t (v) VALUES (zeroblob(?))');
  let written = 0;
  /** One batch of strict writes: each must commit and be synced. */
  const write = async ({ turn: wait = true } = {}) => {
    const syncsBefore = syncs;
    const settled = await within(
      Promise.allSettled(
        Array.from({ length: PER_BATCH }, () => q.submit(true, () => insert.run(BLOB).lastInsertRowid)),
      ),
      15_000,
      'a batch of writes',
    );
    const failed = settled.filter((s) => s.status === 'rejected');
    expect(failed, 'no write fails').toEqual([]);
    expect(syncs, 'the batch was synced').toBeGreaterThan(syncsBefore);
    written += PER_BATCH;
    if (wait) await turn();
  };
  /** Batches until `done()` (at most `max` of them). */
  const writeUntil = async (done: () => boolean, max: number) => {
    for (let i = 0; i < max && !done(); i++) await write();
  };
  const walSize = () => statSync(`${file}-wal`).size;
  const rows = () => Number(db.prepare('SELECT count(*) AS n FROM t').get()?.n);
  return {
    file,
    db,
    q,
    state,
    write,
    writeUntil,
    walSize,
    generation: () => walGeneration(file),
    rows,
    written: () => written,
    close,
  };
}

/** Enough batches to take a WAL from empty past the cap, twice over. */
const PAST_CAP = Math.ceil((2 * WAL_CAP) / (PER_BATCH * BLOB));

describe('WAL cap checkpoint: fault rows', () => {
  it('without a fault: the WAL reaches the cap, the checkpoint copies it, and the next commit starts it over', async () => {
    const s = await capped();
    const first = s.generation();
    await s.writeUntil(() => s.state.tries > 0, PAST_CAP);
    expect(s.state.tries, 'the cap was reached and the checkpoint tried').toBeGreaterThan(0);
    expect(s.walSize()).toBeGreaterThanOrEqual(WAL_CAP);
    expect(s.state.copied).toBe(1);
    await s.write();
    expect(s.generation()).toBeGreaterThan(first);
    // From there on, writes that never pause (but for the loop's turn between batches, where
    // the database thread takes its next messages) keep it under the cap, a chunk and a batch.
    let largest = 0;
    for (let i = 0; i < 2 * PAST_CAP; i++) {
      await s.write();
      largest = Math.max(largest, s.walSize());
    }
    expect(largest).toBeGreaterThanOrEqual(WAL_CAP);
    expect(largest).toBeLessThanOrEqual(WAL_CAP + CHUNK + BATCH_FRAMES);
    expect(s.generation()).toBeGreaterThan(first + 2);
    expect(s.rows()).toBe(s.written());
    expect(uncaught).toEqual([]);
  });

  const FAULT_ROWS: Record<Exclude<Fault, undefined>, string> = {
    'throws-before': 'throws before its copy',
    'throws-after': 'throws after its copy',
    garbage: 'answers garbage after its copy',
    lies: 'answers that it copied everything and copied nothing',
  };
  for (const [fault, does] of Object.entries(FAULT_ROWS) as [Exclude<Fault, undefined>, string][]) {
    it(`the checkpoint ${does}: no write fails or hangs, later commits commit and sync, a later try starts the WAL over`, async () => {
      const s = await capped();
      const first = s.generation();
      s.state.fault = fault;
      // Past the cap, and three tries that all fail.
      await s.writeUntil(() => s.state.tries >= 3, PAST_CAP);
      expect(s.state.tries).toBeGreaterThanOrEqual(3);
      if (fault.startsWith('throws')) expect(s.state.threw).toBe(s.state.tries);
      if (fault === 'throws-before' || fault === 'lies') {
        // Nothing was copied: the WAL grew past the cap, by frames only (no zeros past it).
        expect(s.generation()).toBe(first);
        expect(s.walSize()).toBeGreaterThan(WAL_CAP);
      }
      s.state.fault = undefined;
      const tries = s.state.tries;
      await s.writeUntil(() => s.generation() > first, 20);
      expect(s.generation(), 'a later try started the WAL over').toBeGreaterThan(first);
      if (fault === 'throws-before' || fault === 'lies') expect(s.state.tries).toBeGreaterThan(tries);
      // And it stays bounded from there.
      const size = s.walSize();
      await s.writeUntil(() => false, PAST_CAP);
      expect(s.walSize()).toBeLessThanOrEqual(Math.max(size, WAL_CAP + CHUNK + BATCH_FRAMES));
      expect(s.rows()).toBe(s.written());
      expect(s.db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
      await s.close();
      expect(uncaught).toEqual([]);
    });
  }

  /**
   * A checkpoint due now: one try copied nothing (so the WAL's frames stay at its end, where
   * every batch finds them), then one more batch, answered, and the checkpoint's
   * `setImmediate` not yet run. The fault is lifted: the checkpoint that comes due is SQLite's own.
   */
  async function checkpointDue(s: Awaited<ReturnType<typeof capped>>) {
    s.state.fault = 'lies';
    await s.writeUntil(() => s.state.tries > 0, PAST_CAP);
    expect(s.state.tries).toBe(1);
    s.state.fault = undefined;
    await s.write({ turn: false });
  }

  it('a control: the checkpoint made due that way runs on the next turn, copies the WAL, and the next commit starts it over', async () => {
    const s = await capped();
    const first = s.generation();
    await checkpointDue(s);
    await turn();
    expect(s.state.tries).toBe(2);
    expect(s.state.copied).toBe(1);
    await s.write();
    expect(s.generation()).toBeGreaterThan(first);
  });

  it('the checkpoint comes due as the store closes (the queue closed, its WAL handle gone, then the connection): nothing throws, close() completes', async () => {
    const s = await capped();
    await checkpointDue(s);
    await s.close();
    await turn();
    await turn();
    expect(uncaught).toEqual([]);
  });

  it('the checkpoint comes due after the connection closed under the queue: nothing throws out of its setImmediate, the queue still closes', async () => {
    const s = await capped();
    await checkpointDue(s);
    s.db.close();
    await turn();
    await turn();
    expect(uncaught).toEqual([]);
    await s.close();
  });

  it('the checkpoint comes due while a transaction is open on the connection: nothing throws, the transaction commits whole, a later try starts the WAL over', async () => {
    const s = await capped();
    const first = s.generation();
    await checkpointDue(s);
    s.db.exec("BEGIN IMMEDIATE; INSERT INTO t (n, v) VALUES (-1, 'inside')");
    await turn();
    await turn();
    expect(s.db.isTransaction).toBe(true);
    s.db.exec("INSERT INTO t (n, v) VALUES (-2, 'inside'); COMMIT");
    expect(s.db.prepare('SELECT count(*) AS n FROM t WHERE n < 0').get()).toEqual({ n: 2 });
    expect(uncaught).toEqual([]);
    await s.writeUntil(() => s.generation() > first, 20);
    expect(s.generation(), 'a later try started the WAL over').toBeGreaterThan(first);
    await s.close();
    expect(uncaught).toEqual([]);
  });

  it('a reader holds an old snapshot through the cap: PASSIVE does not wait for it, every write commits; once it lets go the WAL starts over', async () => {
    const s = await capped();
    // Were the checkpoint one that waits for readers (FULL, RESTART, TRUNCATE), it would wait this long each try.
    s.db.exec('PRAGMA busy_timeout = 8000');
    const first = s.generation();
    const reader = new DatabaseSync(s.file);
    cleanups.push(() => reader.close());
    await s.write();
    reader.exec('BEGIN');
    const seen = Number(reader.prepare('SELECT count(*) AS n FROM t').get()?.n);
    await s.writeUntil(() => s.state.tries >= 3, PAST_CAP);
    expect(s.state.tries).toBeGreaterThanOrEqual(3);
    expect(s.state.slowest, 'a checkpoint waited for the reader').toBeLessThan(4_000);
    // The reader still sees its snapshot; the WAL could not start over under it.
    expect(Number(reader.prepare('SELECT count(*) AS n FROM t').get()?.n)).toBe(seen);
    expect(s.generation()).toBe(first);
    expect(s.walSize()).toBeGreaterThan(WAL_CAP);
    reader.exec('COMMIT');
    await s.writeUntil(() => s.generation() > first, 20);
    expect(s.generation(), 'the WAL started over once the reader let go').toBeGreaterThan(first);
    const size = s.walSize();
    await s.writeUntil(() => false, PAST_CAP);
    expect(s.walSize()).toBeLessThanOrEqual(size);
    expect(s.rows()).toBe(s.written());
    expect(Number(reader.prepare('SELECT count(*) AS n FROM t').get()?.n)).toBe(s.written());
    expect(uncaught).toEqual([]);
  });
});
