/**
 * Named vs unnamed prepared statements for PostgresStore, interleaved in one process: the
 * same store code over a pool wrapper that names every statement (`pg` parses it once per
 * connection) or names none (parsed and planned at every call; what a transaction-mode
 * pooler such as PgBouncer needs). Per round and variant: claims one after another (every
 * write a single statement), then `send()`-shaped update pairs at concurrency 16 (group
 * statements); wall time per operation and PostgreSQL CPU per operation (from /proc).
 * A report, never a test.
 *
 *   npm run build && node bench/postgres-prepared.ts [--rounds=6] [--n=400]
 */
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { PostgresStore } from 'oncely/postgres';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { freshRecord } from './records.ts';
import { loadLine } from './stats.ts';

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROUNDS = arg('rounds', 6);
const N = arg('n', 400);

const cluster = await startCluster();
const config = { host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres' };
const pool = new pg.Pool({ ...config, max: 8 });
pool.on('error', () => undefined);
await new PostgresStore({ pool }).migrate();

type Config = { text: string; values?: unknown[]; name?: string };
const named = {
  query: (c: Config) => pool.query({ ...c, name: `b_${createHash('sha1').update(c.text).digest('hex').slice(0, 16)}` }),
};
const unnamed = { query: ({ name: _name, ...c }: Config) => pool.query(c) };

const TICK = 100;
const postmaster = Number(readFileSync(`${cluster.host}/data/postmaster.pid`, 'utf8').split('\n')[0]);
const times = (pid: number | string, from: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[from]) + Number(f[from + 1])) / TICK) * 1000;
};
const postgresCpu = () => {
  let total = times(postmaster, 11) + times(postmaster, 13);
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (Number(readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === postmaster)
        total += times(e, 11);
    } catch {}
  }
  return total;
};

const workloads = {
  /** One claim after another: each a single INSERT. */
  claims: async (store: PostgresStore) => {
    for (let i = 0; i < N; i++) await store.claim(freshRecord('p', randomUUID()));
    return N;
  },
  /** 16 at once, claim then two updates each (in_flight, succeeded): singles and groups. */
  send16: async (store: PostgresStore) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < N) {
          const name = randomUUID();
          await store.claim(freshRecord('p', name));
          await store.update('p', name, (r) => r && { ...r, state: 'in_flight', attempts: 1, fingerprint: 'f' });
          await store.update('p', name, (r) => r && { ...r, state: 'succeeded', status: 201 });
        }
      }),
    );
    return N;
  },
};

const results: Record<string, { wall: number[]; cpu: number[] }> = {};
for (let round = 0; round < ROUNDS; round++) {
  const variants =
    round % 2 === 0
      ? ([
          ['named', named],
          ['unnamed', unnamed],
        ] as const)
      : ([
          ['unnamed', unnamed],
          ['named', named],
        ] as const);
  for (const [workload, run] of Object.entries(workloads))
    for (const [label, db] of variants) {
      const store = new PostgresStore({ pool: db });
      await run(store); // warm-up: statements parsed on every connection, caches filled
      const cpu0 = postgresCpu();
      const t0 = performance.now();
      const n = await run(store);
      const wall = (performance.now() - t0) / n;
      const cpu = (postgresCpu() - cpu0) / n;
      results[`${workload} ${label}`] ??= { wall: [], cpu: [] };
      const r = results[`${workload} ${label}`]!;
      r.wall.push(wall);
      r.cpu.push(cpu);
    }
  await pool.query('TRUNCATE oncely_intents');
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const workload of Object.keys(workloads)) {
  const a = results[`${workload} named`]!;
  const b = results[`${workload} unnamed`]!;
  const ratios = a.wall.map((w, i) => b.wall[i]! / w);
  console.log(
    `${workload}: named ${median(a.wall).toFixed(3)} ms/op (pg CPU ${median(a.cpu).toFixed(3)}), unnamed ${median(b.wall).toFixed(3)} ms/op (pg CPU ${median(b.cpu).toFixed(3)}); unnamed/named wall per round ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
  );
}
console.log(loadLine());
await pool.end();
await cluster.stop();
