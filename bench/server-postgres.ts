/**
 * What `oncely/server` costs on PostgreSQL (issue 27 §5), on a throwaway cluster, one
 * process, the variants interleaved per round:
 * - bare: the handler alone — BEGIN, INSERT into a ledger, COMMIT;
 * - hand-written: seed 001's key table — INSERT … ON CONFLICT DO NOTHING RETURNING, the
 *   ledger INSERT, UPDATE the key row with the response, COMMIT;
 * - oncely store: `PostgresKeyStore.execute()` around the same ledger INSERT;
 * - oncely route: the Fetch middleware over it (`Request` in, `Response` out);
 * - replay: the route answering a committed key.
 * Requests per second at c=1 and c=64, median of the rounds (range), and the ratio to the
 * hand-written version. A report, not a test.
 *
 *   npm run build && node bench/server-postgres.ts [rounds = 3] [requests per round at c=64 = 1500]
 */
import { loadavg } from 'node:os';
import { PostgresKeyStore } from 'oncely/postgres';
import { createIdempotency } from 'oncely/server';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';

const rounds = Number(process.argv[2] ?? 3);
const perRound64 = Number(process.argv[3] ?? 1500);
const cluster = await startCluster({ settings: { max_connections: 120 } });
const pool = new pg.Pool({ host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres', max: 70 });
let seq = 0;
const nextKey = () => `k-${process.pid}-${++seq}`;

try {
  const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  await store.migrate();
  await pool.query(`CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, amount integer NOT NULL);
    CREATE TABLE hand_keys (scope text NOT NULL, key text NOT NULL, request_hash text NOT NULL, state text NOT NULL,
      status integer, body bytea, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (scope, key))`);
  const body = new TextEncoder().encode('{"id":1,"amount":100}');
  const route = createIdempotency({ store }).route('POST /payments', async ({ tx, key }) => {
    await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
    return { status: 201, body: { id: 1, amount: 100 } };
  });
  const request = (key: string) =>
    new Request('https://shop.test/payments', {
      method: 'POST',
      headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json' },
      body: '{"amount":100}',
    });
  const replayKey = nextKey();
  await route(request(replayKey));

  const variants: Record<string, () => Promise<unknown>> = {
    bare: async () => {
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [nextKey(), 100]);
        await conn.query('COMMIT');
      } finally {
        conn.release();
      }
    },
    'hand-written': async () => {
      const key = nextKey();
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        const claimed = await conn.query(
          `INSERT INTO hand_keys (scope, key, request_hash, state) VALUES ('', $1, 'h', 'in_progress')
           ON CONFLICT DO NOTHING RETURNING 1`,
          [key],
        );
        if (claimed.rowCount !== 1) throw new Error('conflict');
        await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
        await conn.query(
          `UPDATE hand_keys SET state = 'completed', status = 201, body = $2 WHERE scope = '' AND key = $1`,
          [key, body],
        );
        await conn.query('COMMIT');
      } finally {
        conn.release();
      }
    },
    'oncely store': async () => {
      const key = nextKey();
      await store.execute({ scope: '', key, operation: 'POST /payments', fingerprint: 'f' }, async (tx) => {
        await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, 100]);
        return { status: 201, headers: [['content-type', 'application/json']], body };
      });
    },
    'oncely route': async () => (await route(request(nextKey()))).arrayBuffer(),
    replay: async () => (await route(request(replayKey))).arrayBuffer(),
  };

  async function measure(run: () => Promise<unknown>, concurrency: number, total: number): Promise<number> {
    let left = total;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await run();
      }),
    );
    return total / ((performance.now() - started) / 1000);
  }

  // c=1, interleaved request by request (robust to a machine whose load drifts): median latency.
  {
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
    for (let i = 0; i < perRound64 / 3; i++)
      for (const [name, run] of Object.entries(variants)) {
        const started = performance.now();
        await run();
        times[name]!.push(performance.now() - started);
      }
    const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)]!;
    const hand = q(times['hand-written']!, 0.5);
    console.log(
      `c=1 interleaved per request, ${times.bare!.length} each, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    for (const [name, xs] of Object.entries(times))
      console.log(
        `  ${name.padEnd(14)} p50 ${q(xs, 0.5).toFixed(2)} ms  p90 ${q(xs, 0.9).toFixed(2)} ms   this / hand-written: ${(q(xs, 0.5) / hand).toFixed(2)}×`,
      );
  }

  for (const concurrency of [1, 64]) {
    const total = concurrency === 1 ? Math.max(100, Math.round(perRound64 / 5)) : perRound64;
    const results: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
    for (const run of Object.values(variants)) await measure(run, concurrency, 20); // warm
    for (let round = 0; round < rounds; round++)
      for (const [name, run] of Object.entries(variants)) results[name]!.push(await measure(run, concurrency, total));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const hand = median(results['hand-written']!);
    console.log(
      `c=${concurrency}, ${total} requests per round, ${rounds} rounds, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    for (const [name, xs] of Object.entries(results)) {
      const m = median(xs);
      const range = `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;
      console.log(
        `  ${name.padEnd(14)} ${m.toFixed(0).padStart(6)} req/s (${range})   hand-written / this: ${(hand / m).toFixed(2)}×`,
      );
    }
  }
} finally {
  await pool.end();
  await cluster.stop();
}
