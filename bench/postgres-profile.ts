/**
 * Where a POST via PostgresStore spends its time at a given concurrency, per request:
 * CPU of this process, of the HTTP peer and of the PostgreSQL backends (from /proc),
 * statements by text (pg_stat_statements), WAL writes and syncs (pg_stat_wal), and how
 * often a query waited for a pool connection. A diagnosis, never a test.
 *
 *   npm run build && node bench/postgres-profile.ts [--c=64] [--seconds=4] [--max=16] [--writers=4] [--only=bare,send,claim,raw-insert-only]
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import ky from 'ky';
import { createClient } from 'oncely';
import { PostgresStore } from 'oncely/postgres';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { rawInsert as rawInsertOn } from './postgres-baseline.ts';
import { freshRecord } from './records.ts';
import { startServer } from './server-process.ts';
import { loadLine } from './stats.ts';

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const C = arg('c', 64);
const SECONDS = arg('seconds', 4);
const MAX = arg('max', 16);
/** The store's writeConcurrency (its default: 4). */
const WRITERS = arg('writers', 4);
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.split('=')[1]
  ?.split(',');

const cluster = await startCluster({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
const config = { host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres' };
const pool = new pg.Pool({ ...config, max: MAX });
const admin = new pg.Pool({ ...config, max: 1 });
pool.on('error', () => undefined);
const store = new PostgresStore({ pool, writeConcurrency: WRITERS });
await store.migrate();
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const server = await startServer();
/** The HTTP peer: this process's child (the only one). */
const serverPid = Number(
  readdirSync('/proc').find(
    (e) =>
      /^\d+$/.test(e) && readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(process.pid),
  ),
);

const TICK = 100; // clock ticks per second on Linux
const cpuOf = (pid: number) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / TICK) * 1000; // utime + stime, ms
  } catch {
    return 0;
  }
};
/** Every process of the cluster (postmaster, backends, walwriter…): its data dir is on the command line of the postmaster only, so match by parent. */
const postmaster = Number(readFileSync(`${cluster.host}/data/postmaster.pid`, 'utf8').split('\n')[0]);
const postgresCpu = () => {
  // The postmaster's own time and that of its exited children (cutime, cstime), plus the live ones.
  let total = cpuOf(postmaster);
  try {
    const fields = readFileSync(`/proc/${postmaster}/stat`, 'utf8').split(') ')[1]!.split(' ');
    total += ((Number(fields[13]) + Number(fields[14])) / TICK) * 1000;
  } catch {}
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.split(') ')[1]!.split(' ')[1]) === postmaster) total += cpuOf(Number(entry));
    } catch {}
  }
  return total;
};

const rawInsert = rawInsertOn(pool);
const bare = ky.create({ retry: 0 });
const api = createClient({ baseUrl: server.baseUrl, scope: 'post', store });
const variants: Record<string, (name: string) => Promise<unknown>> = {
  bare: (name) => rawInsert(name).then(() => bare.post(`${server.baseUrl}ok`, { json: { amount: 1999 } }).json()),
  'bare-http-only': () => bare.post(`${server.baseUrl}ok`, { json: { amount: 1999 } }).json(),
  'raw-insert-only': rawInsert,
  claim: (name) => store.claim(freshRecord('claims', name)),
  intent_post: (name) => api.intent(name).then((intent) => intent.post('ok', { json: { amount: 1999 } })),
  send: (name) => api.send(name, 'POST', 'ok', { json: { amount: 1999 } }),
};

async function measure(label: string, op: (name: string) => Promise<unknown>) {
  // warm up (JIT, prepared statements on every connection)
  for (let i = 0; i < 5; i++)
    await Promise.all(Array.from({ length: C }, (_, j) => op(`warm-${label}-${i}-${j}-${randomUUID()}`)));
  await admin.query('SELECT pg_stat_statements_reset()');
  const wal0 = (await admin.query('SELECT wal_records, wal_write, wal_sync FROM pg_stat_wal')).rows[0];
  const cpu0 = { self: process.cpuUsage(), server: cpuOf(serverPid), pg: postgresCpu() };
  let done = 0;
  let waitedSamples = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    samples++;
    waitedSamples += pool.waitingCount;
  }, 5);
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (performance.now() < until) await op(`n-${randomUUID()}`).then(() => done++);
    }),
  );
  const wall = performance.now() - started;
  clearInterval(sampler);
  const self = process.cpuUsage(cpu0.self);
  const cpu = {
    client: (self.user + self.system) / 1000 / done,
    server: (cpuOf(serverPid) - cpu0.server) / done,
    pg: (postgresCpu() - cpu0.pg) / done,
  };
  const wal1 = (await admin.query('SELECT wal_records, wal_write, wal_sync FROM pg_stat_wal')).rows[0];
  const statements = await admin.query(
    `SELECT calls, round(total_exec_time::numeric, 1) AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS q
     FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY calls DESC LIMIT 6`,
  );
  const perReq = (n: number) => (n / done).toFixed(2);
  console.log(
    `\n## ${label} c=${C} pool=${MAX} writers=${WRITERS}: ${(done / (wall / 1000)).toFixed(0)}/s; per request: client ${cpu.client.toFixed(2)} ms CPU, http peer ${cpu.server.toFixed(2)}, postgres ${cpu.pg.toFixed(2)} (sum ${(cpu.client + cpu.server + cpu.pg).toFixed(2)} ms; 2 cores → ≤ ${(2000 / (cpu.client + cpu.server + cpu.pg)).toFixed(0)}/s); ` +
      `WAL syncs ${perReq(wal1.wal_sync - wal0.wal_sync)}, writes ${perReq(wal1.wal_write - wal0.wal_write)}, records ${perReq(wal1.wal_records - wal0.wal_records)}; pool waiters mean ${(waitedSamples / Math.max(1, samples)).toFixed(1)}`,
  );
  for (const s of statements.rows)
    console.log(`   ${perReq(Number(s.calls))}/req  ${(Number(s.ms) / Number(s.calls)).toFixed(3)} ms exec  ${s.q}`);
}

const order = only ?? ['bare', 'intent_post', 'send', 'bare', 'bare-http-only', 'raw-insert-only'];
for (const label of order) await measure(label, variants[label]!);
console.log(loadLine());
await api.close().catch(() => undefined);
await server.close();
await pool.end();
await admin.end();
await cluster.stop();
