import { closeSync, fstatSync, openSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { extendWalAhead } from '../node/wal-zeros.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

const CHUNK = 1 << 20;
/** A frame: its 24-byte header and a 4 KB page (SQLite's default page size). */
const FRAME = 4096 + 24;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two connections to one WAL database, taking turns to write as the commit queue does: zeros first, inside the transaction. */
async function setup() {
  const { dir, remove } = await tempStoreDir();
  cleanups.push(remove);
  const file = path.join(dir, 'zeros.db');
  const connections = [new DatabaseSync(file), new DatabaseSync(file)];
  const [first] = connections;
  first!.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (v BLOB)');
  for (const db of connections) db.exec('PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = OFF');
  const wal = openSync(`${file}-wal`, 'r+');
  cleanups.push(() => {
    closeSync(wal);
    for (const db of connections) db.close();
  });
  let turn = 0;
  /** `zeros: false`: as SQLite alone writes, to lay out a WAL. */
  const commits = (n: number, zeros = true) => {
    for (let i = 0; i < n; i++) {
      const db = connections[turn++ % connections.length]!;
      db.exec('BEGIN IMMEDIATE');
      if (zeros) extendWalAhead(wal);
      // Three pages a commit (a leaf and two overflow pages).
      db.exec('INSERT INTO t VALUES (randomblob(6000))');
      db.exec('COMMIT');
    }
  };
  /** Copies every frame into the database file: the next writer starts the WAL over from its start. */
  const checkpoint = () => Number(first!.prepare('PRAGMA wal_checkpoint(PASSIVE)').get()?.log);
  return { commits, checkpoint, size: () => fstatSync(wal).size };
}

describe('WAL zeros', () => {
  it('connections taking turns keep one run of zeros ahead of the frames, never more than a chunk and a half', async () => {
    const { commits, checkpoint, size } = await setup();
    commits(300); // about 3.6 MB of frames, nothing checkpointed
    const framesEnd = 32 + checkpoint() * FRAME;
    expect(framesEnd).toBeGreaterThan(3 * CHUNK);
    // Ahead of the frames, so the next commits overwrite blocks the file has; not a chunk per commit.
    expect(size()).toBeGreaterThan(framesEnd);
    expect(size() - framesEnd).toBeLessThanOrEqual(CHUNK + CHUNK / 2);
  });

  it('a WAL started over from its start is not extended again: its frames are far from the end', async () => {
    const { commits, checkpoint, size } = await setup();
    commits(300);
    checkpoint();
    // The first commit may still add the chunk the last ones came near (it runs before SQLite starts the WAL over).
    commits(1);
    const before = size();
    for (let round = 0; round < 3; round++) {
      commits(60); // under 1.2 MB of frames from the WAL's start, over the old ones
      expect(checkpoint()).toBeLessThan(300); // started over: 900 frames before
    }
    expect(size()).toBe(before);
  });

  it('frames left from before the WAL started over do not count as near its end', async () => {
    const { commits, checkpoint, size } = await setup();
    commits(200, false); // frames up to the file's end, no zeros
    checkpoint();
    commits(1, false); // SQLite starts the WAL over: new salts, the old frames stay behind it
    const before = size();
    commits(60);
    expect(checkpoint()).toBeLessThan(300);
    expect(size()).toBe(before);
  });
});
