/**
 * Where `oncely/server`'s cost on PostgreSQL goes, next to seed 001's hand-written key table
 * (the `server` section of `npm run bench` gives the ratios). One throwaway cluster with
 * pg_stat_statements, one process, c=1, the variants interleaved request by request:
 * - client side: the latency of each statement as the app sees it (round trip included),
 *   and this process's CPU per request (the route's HTTP layer, hashing, the driver);
 * - server side: each statement's planning and execution time (pg_stat_statements).
 * `--hot=<variant>` then runs that variant alone at c=64 for 10× the requests, so that a
 * `--cpu-prof` of the run is mostly that variant's JS. A report, not a section:
 *
 *   npm run build && node [--cpu-prof] bench/server-profile.ts [requests = 300] [--hot=route|store|hand]
 */
import { createHash } from 'node:crypto';
import { PostgresKeyStore } from 'oncely/postgres';
import { createIdempotency } from 'oncely/server';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { median } from './stats.ts';

const requests = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 300);
const hot = process.argv.find((a) => a.startsWith('--hot='))?.slice('--hot='.length) as Variant | undefined;
const cluster = await startCluster({
  settings: {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track_planning': 'on',
    'pg_stat_statements.track': 'all',
  },
});
const realPool = new pg.Pool({
  host: cluster.host,
  port: cluster.port,
  user: 'postgres',
  database: 'postgres',
  max: hot ? 70 : 4,
});

type Variant = 'hand' | 'store' | 'route';
let current: Variant | undefined;
const statements = new Map<string, number[]>();
const label = (config: unknown): string => {
  const text = typeof config === 'string' ? config : ((config as { text?: string })?.text ?? '?');
  return `${current} ${text.replace(/\s+/g, ' ').trim().slice(0, 60)}`;
};
const timedConn = (conn: pg.PoolClient): pg.PoolClient =>
  new Proxy(conn, {
    get(target, name) {
      if (name === 'query')
        return async (...args: unknown[]) => {
          const key = label(args[0]);
          const started = performance.now();
          try {
            return await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          } finally {
            statements.set(key, [...(statements.get(key) ?? []), performance.now() - started]);
          }
        };
      const value = Reflect.get(target, name);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
const pool = {
  connect: async () => timedConn(await realPool.connect()),
  query: realPool.query.bind(realPool),
} as unknown as pg.Pool;

try {
  await realPool.query('CREATE EXTENSION pg_stat_statements');
  const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  await store.migrate();
  await realPool.query(`CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, amount integer NOT NULL);
    CREATE TABLE hand_keys (merchant text NOT NULL, key text NOT NULL, request_hash text NOT NULL, status text NOT NULL,
      response_status integer, response_body bytea, created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (merchant, key))`);
  let seq = 0;
  const text = '{"amount":100,"currency":"EUR"}';
  const answer = { id: 'pay_1', amount: 100, currency: 'EUR' };
  const bytes = new TextEncoder().encode(JSON.stringify(answer));
  const route = createIdempotency<pg.PoolClient>({ store }).route('POST /payments', async ({ tx, key }) => {
    await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
    return { status: 201, body: answer };
  });
  const post = (key: string) =>
    new Request('http://shop.test/payments', {
      method: 'POST',
      headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
      body: text,
    });
  const variants: Record<Variant, () => Promise<unknown>> = {
    // hand and store read a Request as the route does, so that the CPU figures compare.
    hand: async () => {
      const key = `k${++seq}`;
      const body = await post(key).text();
      const hash = createHash('sha256').update(body).digest('hex');
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        await conn.query(
          `INSERT INTO hand_keys (merchant, key, request_hash, status) VALUES ($1, $2, $3, 'in_progress')
           ON CONFLICT (merchant, key) DO NOTHING RETURNING 1`,
          ['a', key, hash],
        );
        await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
        await conn.query(
          `UPDATE hand_keys SET status = 'completed', response_status = 201, response_body = $3 WHERE merchant = $1 AND key = $2`,
          ['a', key, bytes],
        );
        await conn.query('COMMIT');
      } finally {
        conn.release();
      }
    },
    store: async () => {
      const key = `k${++seq}`;
      const body = await post(key).text();
      const fingerprint = createHash('sha256').update(body).digest('hex');
      await store.execute({ scope: 'a', key, operation: 'POST /payments', fingerprint }, async (tx) => {
        await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
        return { status: 201, headers: [['content-type', 'application/json']], body: bytes };
      });
    },
    route: async () => {
      const response = await route(post(`k${++seq}`));
      await response.arrayBuffer();
    },
  };
  for (const run of Object.values(variants)) for (let i = 0; i < 30; i++) await run();
  statements.clear();
  await realPool.query('SELECT pg_stat_statements_reset()');
  const wall: Record<Variant, number[]> = { hand: [], store: [], route: [] };
  const cpu: Record<Variant, number[]> = { hand: [], store: [], route: [] };
  const names = Object.keys(variants) as Variant[];
  for (let i = 0; i < requests; i++)
    for (const name of names.map((_, j) => names[(i + j) % names.length]!)) {
      current = name;
      const c = process.cpuUsage();
      const t = performance.now();
      await variants[name]();
      wall[name].push(performance.now() - t);
      const used = process.cpuUsage(c);
      cpu[name].push((used.user + used.system) / 1000);
    }
  current = undefined;
  console.log(`${requests} requests each, c=1, interleaved. Per request, median: wall ms / this process's CPU ms`);
  for (const name of names)
    console.log(
      `  ${name.padEnd(6)} ${median(wall[name]).toFixed(2)} ms wall   ${median(cpu[name]).toFixed(3)} ms CPU`,
    );
  console.log('Client-side latency per statement (median ms, round trip included):');
  for (const [key, xs] of [...statements].sort(([a], [b]) => a.localeCompare(b)))
    console.log(`  ${median(xs).toFixed(3).padStart(7)}  ×${String(xs.length).padEnd(5)} ${key}`);
  const stats = await realPool.query(
    `SELECT calls, round(mean_plan_time::numeric, 3) AS plan_ms, round(mean_exec_time::numeric, 3) AS exec_ms,
            left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query
       FROM pg_stat_statements WHERE calls >= $1 ORDER BY query`,
    [requests / 2],
  );
  console.log('Server side (pg_stat_statements: mean plan / exec ms):');
  for (const r of stats.rows)
    console.log(
      `  plan ${String(r.plan_ms).padStart(6)}  exec ${String(r.exec_ms).padStart(6)}  ×${r.calls}  ${r.query}`,
    );
  if (hot) {
    const run = variants[hot];
    let left = requests * 10;
    const c = process.cpuUsage();
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (left-- > 0) await run();
      }),
    );
    const used = process.cpuUsage(c);
    console.log(
      `${hot} alone at c=64: ${((requests * 10) / ((performance.now() - t) / 1000)).toFixed(0)} req/s, ` +
        `${((used.user + used.system) / 1000 / (requests * 10)).toFixed(3)} ms of this process's CPU per request`,
    );
  }
} finally {
  await realPool.end();
  await cluster.stop();
}
