/**
 * Why SqliteKeyStore queues its transactions on one connection: the queue against a
 * connection per in-flight request, same file system, same run, interleaved. Each request
 * claims a fresh key, inserts a ledger row, awaits `gap` ms (a handler's await: 0 = none),
 * stores its answer and commits (WAL, synchronous=FULL). Also: how soon a repeat of a
 * running key is answered while 64 other keys queue, how long a COMMIT blocks the event
 * loop, and what `busy_timeout` does to two connections of one process.
 * A report, not a test; not a section of `npm run bench` (run it alone):
 *
 *   node --import ./scripts/ts-resolve.ts bench/server-sqlite.ts [requests = 200] [rounds = 3]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openSqliteKeyStore, type SqliteKeyStore } from '../node/sqlite-key-store.ts';
import { retryWhileBusy } from '../node/sqlite-open.ts';
import type { KeyClaim, StoredAnswer } from '../src/server/store.ts';

const requests = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 3);
const dir = await mkdtemp(path.join(tmpdir(), 'oncely-bench-server-sqlite-'));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const answer: StoredAnswer = { status: 201, headers: [['content-type', 'application/json']], body: new Uint8Array(64) };
const LEDGER = 'CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, key TEXT NOT NULL, amount INTEGER NOT NULL)';
let files = 0;
let keys = 0;
const claim = (): KeyClaim => ({ scope: 's', key: `k${++keys}`, operation: 'POST /payments', fingerprint: 'f' });

interface Run {
  perSecond: number;
  p50: number;
  p99: number;
  failed: number;
}

async function drive(concurrency: number, one: () => Promise<void>): Promise<Run> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < requests) {
        const t = performance.now();
        try {
          await one();
          latencies.push(performance.now() - t);
        } catch {
          failed++;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { perSecond: latencies.length / seconds, p50: at(0.5), p99: at(0.99), failed };
}

/** SqliteKeyStore: one writer connection, transactions queued. */
async function queued(store: SqliteKeyStore, concurrency: number, gap: number): Promise<Run> {
  return drive(concurrency, async () => {
    await store.execute(claim(), async (tx) => {
      tx.run('INSERT INTO ledger (key, amount) VALUES (?, ?)', 'k', 1);
      if (gap) await sleep(gap);
      return answer;
    });
  });
}

/** The alternative: a connection per in-flight request, BEGIN IMMEDIATE retried from a timer (busy_timeout 0). */
async function perRequest(file: string, concurrency: number, gap: number): Promise<Run> {
  const pool = Array.from({ length: concurrency }, () => {
    const db = new DatabaseSync(file);
    db.exec('PRAGMA busy_timeout = 0; PRAGMA synchronous = FULL');
    return db;
  });
  try {
    return await drive(concurrency, async () => {
      const db = pool.pop()!;
      try {
        await retryWhileBusy(() => db.exec('BEGIN IMMEDIATE'), 30_000);
        const c = claim();
        db.prepare(
          'INSERT INTO oncely_server_keys (scope, key, created_at, operation, fingerprint) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
        ).run(c.scope, c.key, Date.now(), c.operation, c.fingerprint);
        db.prepare('INSERT INTO ledger (key, amount) VALUES (?, ?)').run('k', 1);
        if (gap) await sleep(gap);
        db.prepare('UPDATE oncely_server_keys SET status = ?, headers = ?, body = ? WHERE scope = ? AND key = ?').run(
          201,
          '[]',
          answer.body,
          c.scope,
          c.key,
        );
        db.exec('COMMIT');
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      } finally {
        pool.push(db);
      }
    });
  } finally {
    for (const db of pool) db.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (runs: Run[]) =>
  `${median(runs.map((r) => r.perSecond))
    .toFixed(0)
    .padStart(5)} req/s  p50 ${median(runs.map((r) => r.p50))
    .toFixed(1)
    .padStart(6)} ms  p99 ${median(runs.map((r) => r.p99))
    .toFixed(1)
    .padStart(6)} ms${runs.some((r) => r.failed) ? `  failed ${runs.map((r) => r.failed).join('/')}` : ''}`;

try {
  const results = new Map<string, Run[]>();
  const add = (name: string, run: Run) => results.set(name, [...(results.get(name) ?? []), run]);
  for (let round = 0; round < rounds; round++) {
    for (const concurrency of [1, 64]) {
      for (const gap of [0, 2]) {
        const file = path.join(dir, `q${++files}.db`);
        const store = await openSqliteKeyStore({ file, autoMaintain: false });
        await store.transaction((tx) => tx.exec(LEDGER));
        add(
          `queue            c=${String(concurrency).padEnd(2)} await ${gap} ms`,
          await queued(store, concurrency, gap),
        );
        await store.close();
        const other = path.join(dir, `p${++files}.db`);
        const setup = await openSqliteKeyStore({ file: other, autoMaintain: false });
        await setup.transaction((tx) => tx.exec(LEDGER));
        await setup.close();
        add(
          `conn per request c=${String(concurrency).padEnd(2)} await ${gap} ms`,
          await perRequest(other, concurrency, gap),
        );
      }
    }
  }
  console.log(`SqliteKeyStore, ${requests} requests per run, median of ${rounds} rounds (${tmpdir()}):`);
  for (const [name, runs] of [...results].sort(([a], [b]) => a.localeCompare(b)))
    console.log(`  ${name}  ${fmt(runs)}`);

  // A repeat of a running key while 64 other keys queue behind a 2 ms await each.
  const store = await openSqliteKeyStore({ file: path.join(dir, `r${++files}.db`), autoMaintain: false });
  await store.transaction((tx) => tx.exec(LEDGER));
  const repeats: number[] = [];
  const commits: number[] = [];
  for (let i = 0; i < 20; i++) {
    const held = claim();
    const work = async (tx: Parameters<Parameters<SqliteKeyStore['execute']>[1]>[0]) => {
      tx.run('INSERT INTO ledger (key, amount) VALUES (?, ?)', 'k', 1);
      await sleep(2);
      return answer;
    };
    const all = [store.execute(held, work), ...Array.from({ length: 64 }, () => store.execute(claim(), work))];
    const t = performance.now();
    const repeat = await store.execute(held, work);
    repeats.push(performance.now() - t);
    if (repeat.outcome !== 'in_progress') throw new Error(`expected in_progress, got ${repeat.outcome}`);
    const c = performance.now();
    await Promise.all(all);
    commits.push((performance.now() - c) / 65);
  }
  console.log(
    `  repeat of a running key, 64 other keys queued: in_progress after ${median(repeats).toFixed(2)} ms (median of 20; max ${Math.max(...repeats).toFixed(2)} ms)`,
  );
  // One synchronous COMMIT (fsync of the WAL) on the event loop, no await in the handler.
  const blocks: number[] = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    await store.execute(claim(), async (tx) => {
      tx.run('INSERT INTO ledger (key, amount) VALUES (?, ?)', 'k', 1);
      return answer;
    });
    blocks.push(performance.now() - t);
  }
  console.log(
    `  one request (claim, insert, answer, COMMIT + fsync), sequential: median ${median(blocks).toFixed(2)} ms`,
  );
  await store.close();

  // busy_timeout with two connections of one process: the waiter sleeps on the event loop,
  // so the holder (awaiting in its handler) cannot reach its COMMIT until the wait gives up.
  const file = path.join(dir, `b${++files}.db`);
  const a = new DatabaseSync(file);
  a.exec(`PRAGMA journal_mode = WAL; ${LEDGER}`);
  const b = new DatabaseSync(file);
  b.exec('PRAGMA busy_timeout = 500');
  a.exec('BEGIN IMMEDIATE');
  const holder = sleep(1).then(() => a.exec('COMMIT'));
  const t = performance.now();
  let outcome = 'got the lock';
  try {
    b.exec('BEGIN IMMEDIATE');
    b.exec('ROLLBACK');
  } catch (error) {
    outcome = (error as Error).message;
  }
  console.log(
    `  busy_timeout 500 ms, the holder in the same process: the event loop blocked ${(performance.now() - t).toFixed(0)} ms, then "${outcome}"`,
  );
  await holder;
  a.close();
  b.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
