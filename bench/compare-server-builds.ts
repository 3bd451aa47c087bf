/**
 * `oncely/server` on PostgreSQL, two or more builds against each other and against seed 001's
 * hand-written key table, interleaved in one process on one throwaway cluster: the way to
 * tell a change to `PostgresKeyStore` or the Fetch core from the noise of a shared machine.
 * The handler and the hand-written variant are the `server` section's (bench/server.ts).
 *
 *   npm run build && git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)
 *   node bench/compare-server-builds.ts /tmp/before/dist dist [rounds = 5] [sequential = 100] [concurrent = 600]
 *
 * Prints, per build: c=1 p50 route / hand-written, c=64 time per request route / hand-written,
 * c=1 replay / bare; and each build's route against the first build's (below 1: faster).
 */
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { fmtRatio, median, spread } from './stats.ts';

const args = process.argv.slice(2);
const builds = args.filter((arg) => Number.isNaN(Number(arg))).map((dist) => path.resolve(dist));
const [rounds = 5, sequential = 100, concurrent = 600] = args.filter((a) => !Number.isNaN(Number(a))).map(Number);
if (builds.length < 2) throw new Error('usage: node bench/compare-server-builds.ts <dist> <dist> [...] [rounds]');

const cluster = await startCluster({ settings: { max_connections: 120 } });
const pool = new pg.Pool({ host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres', max: 70 });
pool.on('error', () => undefined);
const load = [loadavg()[0]!];
let seq = 0;
const nextKey = () => `k-${++seq}`;
const text = '{"amount":100,"currency":"EUR"}';
const answer = { id: 'pay_1', amount: 100, currency: 'EUR' };
const answerBytes = new TextEncoder().encode(JSON.stringify(answer));
const request = (key: string) =>
  new Request('http://shop.test/payments', {
    method: 'POST',
    headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json', 'x-account': 'acct_1' },
    body: text,
  });
const json = (bytes: Uint8Array, status: number) =>
  new Response(bytes.slice(), { status, headers: { 'content-type': 'application/json' } });

const routes: ((request: Request) => Promise<Response>)[] = [];
for (const [i, dist] of builds.entries()) {
  const { PostgresKeyStore } = await import(path.join(dist, 'postgres/key-store.js'));
  const { createIdempotency } = await import(path.join(dist, 'src/server/idempotency.js'));
  const store = new PostgresKeyStore({ pool, autoMaintain: false });
  if (i === 0) {
    await store.migrate();
    await pool.query(`CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, amount integer NOT NULL);
      CREATE TABLE hand_keys (merchant text NOT NULL, key text NOT NULL, request_hash text NOT NULL, status text NOT NULL,
        response_status integer, response_body bytea, created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (merchant, key))`);
  }
  const idempotency = createIdempotency({ store, scope: (r: Request) => r.headers.get('x-account') ?? '' });
  routes.push(
    idempotency.route(
      'POST /payments',
      async ({ tx, key, json: body }: { tx: pg.PoolClient; key: string; json: unknown }) => {
        await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, (body as { amount: number }).amount]);
        return { status: 201, body: answer };
      },
    ),
  );
}

const bare = async (req: Request) => {
  const { amount } = (await req.json()) as { amount: number };
  const conn = await pool.connect();
  try {
    await conn.query('BEGIN');
    await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [nextKey(), amount]);
    await conn.query('COMMIT');
  } finally {
    conn.release();
  }
  return json(answerBytes, 201);
};
const hand = async (req: Request) => {
  const key = req.headers.get('idempotency-key') ?? '';
  const account = req.headers.get('x-account') ?? '';
  const body = await req.text();
  const hash = createHash('sha256').update(`POST /payments\n${body}`).digest('hex');
  const { amount } = JSON.parse(body) as { amount: number };
  const conn = await pool.connect();
  try {
    await conn.query('BEGIN');
    const claimed = await conn.query(
      `INSERT INTO hand_keys (merchant, key, request_hash, status) VALUES ($1, $2, $3, 'in_progress')
       ON CONFLICT (merchant, key) DO NOTHING RETURNING 1`,
      [account, key, hash],
    );
    if (claimed.rowCount !== 1) throw new Error('conflict');
    await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, amount]);
    await conn.query(
      `UPDATE hand_keys SET status = 'completed', response_status = 201, response_body = $3
        WHERE merchant = $1 AND key = $2`,
      [account, key, answerBytes],
    );
    await conn.query('COMMIT');
  } catch (error) {
    await conn.query('ROLLBACK');
    throw error;
  } finally {
    conn.release();
  }
  return json(answerBytes, 201);
};

const replayKeys = builds.map(() => nextKey());
for (const [b, route] of routes.entries())
  if ((await route(request(replayKeys[b]!))).status !== 201) throw new Error('the replayed key did not commit');

type Run = () => Promise<void>;
const check = (name: string, replayed: boolean) => async (response: Response) => {
  await response.arrayBuffer();
  if (response.status !== 201 || (response.headers.get('idempotent-replayed') === 'true') !== replayed)
    throw new Error(`${name}: answered ${response.status}`);
};
const variants: Record<string, Run> = {
  bare: async () => check('bare', false)(await bare(request(nextKey()))),
  hand: async () => check('hand', false)(await hand(request(nextKey()))),
};
for (const [b, route] of routes.entries()) {
  variants[`route${b}`] = async () => check(`route${b}`, false)(await route(request(nextKey())));
  variants[`replay${b}`] = async () => check(`replay${b}`, true)(await route(request(replayKeys[b]!)));
}
const names = Object.keys(variants);
const rotate = <T>(xs: readonly T[], n: number): T[] => xs.map((_, i) => xs[(i + n) % xs.length]!);
for (const name of names) for (let i = 0; i < 20; i++) await variants[name]!(); // warm-up

const c1: Record<string, number>[] = [];
const c64: Record<string, number>[] = [];
const concurrentNames = names.filter((n) => !n.startsWith('replay'));
for (let round = 0; round < rounds; round++) {
  const times = Object.fromEntries(names.map((n) => [n, [] as number[]]));
  for (let i = 0; i < sequential; i++)
    for (const name of rotate(names, i)) {
      const started = performance.now();
      await variants[name]!();
      times[name]!.push(performance.now() - started);
    }
  c1.push(Object.fromEntries(names.map((n) => [n, median(times[n]!)])));
  const perRequest: Record<string, number> = {};
  for (const name of rotate(concurrentNames, round)) {
    let left = concurrent;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (left-- > 0) await variants[name]!();
      }),
    );
    perRequest[name] = (performance.now() - started) / concurrent;
  }
  c64.push(perRequest);
}
load.push(loadavg()[0]!);

const ratio = (rows: Record<string, number>[], a: string, b: string) =>
  fmtRatio(spread(rows.map((r) => r[a]! / r[b]!)));
const ms = (rows: Record<string, number>[], n: string) => `${median(rows.map((r) => r[n]!)).toFixed(2)} ms`;
console.log(`hand-written c=1 p50 ${ms(c1, 'hand')}, bare ${ms(c1, 'bare')}; c=64 ${ms(c64, 'hand')} per request`);
for (const [b, dist] of builds.entries()) {
  const vsFirst =
    b === 0
      ? ''
      : `; route / first build: c=1 ${ratio(c1, `route${b}`, 'route0')}, c=64 ${ratio(c64, `route${b}`, 'route0')}`;
  console.log(
    `${dist}: c=1 route / hand ${ratio(c1, `route${b}`, 'hand')} (p50 ${ms(c1, `route${b}`)}), c=64 ${ratio(c64, `route${b}`, 'hand')}, replay / bare ${ratio(c1, `replay${b}`, 'bare')} (p50 ${ms(c1, `replay${b}`)})${vsFirst}`,
  );
}
console.log(
  `${rounds} rounds (${sequential} at c=1, ${concurrent} at c=64); load ${load.map((l) => l.toFixed(1)).join(' → ')}`,
);
await pool.end();
await cluster.stop();
