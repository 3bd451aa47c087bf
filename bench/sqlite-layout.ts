/**
 * What intent names cost SQLite when 64 claims share a commit: names in the order they
 * are formed (`order:000000042`) against names in no order (`order:<uuid>`, as most apps'
 * ids are). A B-tree keyed by name puts each name where it sorts: names in no order dirty
 * a leaf page (4 KB) each, in the WAL and again when it is checkpointed; names in order
 * share the last leaf. Measured two ways, each on a table already holding rows:
 *
 * - plain `node:sqlite` on this thread, 64 inserts per commit and one `fdatasync`, in
 *   the store's layout (`WITHOUT ROWID`, keyed by scope and name) and in a rowid layout
 *   with a unique index on the name (rows appended, only the small index entry scattered);
 * - the SqliteStore's `claim()`, 64 at a time.
 *
 *   npm run build && node bench/sqlite-layout.ts [commits = 600]
 *
 * Prints µs and KB per claim that reached the disk (the block device's sectors written,
 * after a `sync`, checkpoints included; Linux only, and counting whatever else wrote to that
 * device meanwhile: run it on a quiet machine). Not `/proc/self/io`'s `write_bytes`: it
 * counts a page each time one is dirtied, and says 6 KB per claim where 1.8 KB reach the disk.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openDiskStore } from './oncely.ts';
import { freshRecord } from './records.ts';
import { inParallel } from './stats.ts';

const commits = Number(process.argv[2] ?? 600);
const BATCH = 64;
/** Bytes the block device under the temporary directory has written so far (NaN where unknown). */
const device = (() => {
  const { dev } = statSync(tmpdir());
  return `/sys/dev/block/${(dev >> 8) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}/stat`;
})();
const written = () => {
  try {
    execFileSync('sync');
    return Number(readFileSync(device, 'utf8').trim().split(/\s+/)[6]) * 512;
  } catch {
    return Number.NaN;
  }
};
const orders = {
  'in order': (i: number) => `order:${String(i).padStart(9, '0')}`,
  'no order': () => `order:${crypto.randomUUID()}`,
};
const layouts = {
  'store layout': `CREATE TABLE intents (scope TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,
     sweep_at INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (scope, name)) WITHOUT ROWID;
     CREATE INDEX intents_by_state ON intents (scope, state, sweep_at);`,
  'rowid + name index': `CREATE TABLE intents (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, name TEXT NOT NULL,
     state TEXT NOT NULL, sweep_at INTEGER NOT NULL, record TEXT NOT NULL);
     CREATE UNIQUE INDEX intents_by_name ON intents (scope, name);
     CREATE INDEX intents_by_state ON intents (scope, state, sweep_at);`,
};
/** µs and KB written per claim over `count` claims after `warm` ones. */
async function measure(warm: number, count: number, run: (from: number, n: number) => Promise<void> | void) {
  await run(0, warm);
  const bytes = written();
  const started = performance.now();
  await run(warm, count);
  return { us: ((performance.now() - started) / count) * 1000, kb: (written() - bytes) / count / 1024 };
}
const show = (what: string, m: { us: number; kb: number }) =>
  console.log(`${what.padEnd(44)} ${m.us.toFixed(1).padStart(6)} µs ${m.kb.toFixed(1).padStart(6)} KB per claim`);

const load = [loadavg()[0]!];
const dirs: string[] = [];
for (const [layout, ddl] of Object.entries(layouts)) {
  for (const [order, name] of Object.entries(orders)) {
    const dir = mkdtempSync(path.join(tmpdir(), 'oncely-bench-layout-'));
    dirs.push(dir);
    const db = new DatabaseSync(path.join(dir, 'raw.sqlite'));
    db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; ${ddl}`);
    const insert = db.prepare(
      'INSERT INTO intents (scope, name, state, sweep_at, record) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    );
    let wal: number | undefined;
    const m = await measure((commits / 2) * BATCH, commits * BATCH, (from, n) => {
      for (let i = from; i < from + n; i += BATCH) {
        db.exec('BEGIN IMMEDIATE');
        for (let j = i; j < i + BATCH; j++) {
          const r = freshRecord('bench', name(j));
          insert.run('bench', r.name, 'ready', r.updatedAt + 86_400_000, JSON.stringify(r));
        }
        db.exec('COMMIT');
        wal ??= openSync(path.join(dir, 'raw.sqlite-wal'), 'r+');
        fdatasyncSync(wal);
      }
    });
    show(`node:sqlite, ${layout}, ${order}`, m);
    if (wal !== undefined) closeSync(wal);
    db.close();
  }
}
for (const [order, name] of Object.entries(orders)) {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncely-bench-layout-'));
  dirs.push(dir);
  const store = await openDiskStore(dir);
  const m = await measure((commits / 2) * BATCH, commits * BATCH, (from, n) =>
    inParallel(n, BATCH, (i) => store.claim(freshRecord('bench', name(from + i)))),
  );
  show(`SqliteStore claim(), 64 at once, ${order}`, m);
  await store.close();
}
load.push(loadavg()[0]!);
console.log(
  `${commits} commits of ${BATCH} after ${commits / 2} to fill the table; load ${load.map((l) => l.toFixed(1)).join(' → ')}`,
);
await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
