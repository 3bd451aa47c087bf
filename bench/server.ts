/**
 * Section `server`: what `oncely/server` costs on PostgreSQL (issue 27 §5), on a throwaway
 * cluster (PostgreSQL 15, unix socket, fsync and synchronous_commit on), in this process.
 * The same handler — one INSERT into a ledger — four ways, each a Fetch handler (`Request`
 * in, `Response` out, driven alike, so what a server does around a handler is common):
 * - bare: read the JSON body; BEGIN, the ledger INSERT, COMMIT; answer;
 * - hand-written: seed 001's key table — the key header, a SHA-256 of the body as the
 *   request hash, INSERT … ON CONFLICT DO NOTHING RETURNING, the ledger INSERT, UPDATE the
 *   key row to completed with the response body, COMMIT; answer;
 * - oncely: the route of `createIdempotency` over `PostgresKeyStore` (key header parsed,
 *   RFC 8785 fingerprint, claim, the handler on `tx`, answer stored, COMMIT, answer);
 * - store: `PostgresKeyStore.execute()` under the hand-written handler's own header and hash
 *   (what the route's HTTP layer adds is the gap between this and oncely);
 * and the replay: the route answering a committed key.
 *
 * c=1: request by request, the variants interleaved (order rotated), median latency per
 * round. c=64: each variant's throughput per round, the order rotated. A round's ratio is
 * variant / baseline within that round; the figure is the median over rounds (range).
 * Also counted: round trips (queries sent) per request of each variant.
 */
import { createHash } from 'node:crypto';
import { PostgresKeyStore } from 'oncely/postgres';
import { createIdempotency } from 'oncely/server';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { fmtMs, fmtRate, fmtRatio, median, type Spread, spread } from './stats.ts';

export interface ServerOptions {
  rounds: number;
  /** Requests per variant per round at c=1 (interleaved one by one). */
  sequential: number;
  /** Requests per variant per round at c=64. */
  concurrent: number;
}

const VARIANTS = ['bare', 'hand', 'oncely', 'store', 'replay'] as const;
type Variant = (typeof VARIANTS)[number];
const LABEL: Record<Variant, string> = {
  bare: 'bare handler',
  hand: 'hand-written key table (seed 001)',
  oncely: 'oncely/server (Fetch route, PostgresKeyStore)',
  store: 'PostgresKeyStore under a hand-written handler',
  replay: 'replay of a committed key (route)',
};

export interface ServerResult {
  c1: {
    /** Median over rounds of each variant's median latency (ms). */
    latencyMs: Record<Variant, number>;
    oncelyVsHand: Spread;
    storeVsHand: Spread;
    handVsBare: Spread;
    replayVsBare: Spread;
  };
  c64: {
    /** Median over rounds of each variant's requests per second. */
    perSecond: Record<Exclude<Variant, 'replay'>, number>;
    /** Time per request (1 / throughput), variant / baseline. */
    oncelyVsHand: Spread;
    storeVsHand: Spread;
    handVsBare: Spread;
  };
  /** Queries sent (round trips) per request. */
  roundTrips: Record<Variant, number>;
}

const rotate = <T>(xs: readonly T[], n: number): T[] => xs.map((_, i) => xs[(i + n) % xs.length]!);

export async function measureServer(options: ServerOptions): Promise<ServerResult> {
  const cluster = await startCluster({ settings: { max_connections: 120 } });
  const pool = new pg.Pool({ host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres', max: 70 });
  pool.on('error', () => undefined);
  try {
    return await run(pool, options);
  } finally {
    await pool.end();
    await cluster.stop();
  }
}

async function run(realPool: pg.Pool, options: ServerOptions): Promise<ServerResult> {
  // Every query on a connection from this pool is counted: the round trips per request.
  let queries = 0;
  const countOn = (conn: pg.PoolClient): pg.PoolClient =>
    new Proxy(conn, {
      get(target, name) {
        if (name === 'query')
          return (...args: unknown[]) => {
            queries++;
            return (target.query as (...a: unknown[]) => unknown)(...args);
          };
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const pool = {
    connect: async () => countOn(await realPool.connect()),
    query: realPool.query.bind(realPool),
  } as unknown as pg.Pool;

  const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  await store.migrate();
  await realPool.query(`CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, amount integer NOT NULL);
    CREATE TABLE hand_keys (merchant text NOT NULL, key text NOT NULL, request_hash text NOT NULL, status text NOT NULL,
      response_status integer, response_body bytea, created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (merchant, key))`);
  let seq = 0;
  const nextKey = () => `k-${++seq}`;
  const text = '{"amount":100,"currency":"EUR"}';
  const answer = { id: 'pay_1', amount: 100, currency: 'EUR' };
  const answerBytes = new TextEncoder().encode(JSON.stringify(answer));

  const route = createIdempotency<pg.PoolClient>({
    store,
    scope: (request) => request.headers.get('x-account') ?? '',
  }).route('POST /payments', async ({ tx, key, json }) => {
    await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, (json as { amount: number }).amount]);
    return { status: 201, body: answer };
  });
  const request = (key: string) =>
    new Request('http://shop.test/payments', {
      method: 'POST',
      headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json', 'x-account': 'acct_1' },
      body: text,
    });
  const replayKey = nextKey();
  if ((await route(request(replayKey))).status !== 201) throw new Error('the replayed key did not commit');

  // Every variant is a Fetch handler (`Request` in, `Response` out), driven alike: what a
  // server does around it (building the Request, sending the Response) is the same for all.
  const json = (bytes: Uint8Array, status: number, headers: HeadersInit = {}) =>
    new Response(bytes.slice(), { status, headers: { 'content-type': 'application/json', ...headers } });
  const handlers: Record<Variant, (request: Request) => Promise<Response>> = {
    bare: async (request) => {
      const { amount } = (await request.json()) as { amount: number };
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        await conn.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [nextKey(), amount]);
        await conn.query('COMMIT');
      } finally {
        conn.release();
      }
      return json(answerBytes, 201);
    },
    // Seed 001: claim (INSERT … ON CONFLICT DO NOTHING RETURNING), the work, UPDATE to completed.
    hand: async (request) => {
      const key = request.headers.get('idempotency-key') ?? '';
      const account = request.headers.get('x-account') ?? '';
      const body = await request.text();
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
        if (claimed.rowCount !== 1) throw new Error('conflict'); // every key here is new
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
    },
    oncely: route,
    // PostgresKeyStore under a hand-written handler: what the route's own HTTP layer adds.
    store: async (request) => {
      const key = request.headers.get('idempotency-key') ?? '';
      const body = await request.text();
      const fingerprint = createHash('sha256').update(`POST /payments\n${body}`).digest('hex');
      const { amount } = JSON.parse(body) as { amount: number };
      const claim = { scope: request.headers.get('x-account') ?? '', key, operation: 'POST /payments', fingerprint };
      const execution = await store.execute(claim, async (tx) => {
        await tx.query('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [key, amount]);
        return { status: 201, headers: [['content-type', 'application/json']], body: answerBytes };
      });
      if (execution.outcome !== 'ran') throw new Error(`the store answered ${execution.outcome}`);
      return json(execution.answer.body, 201);
    },
    replay: route,
  };
  const variants = Object.fromEntries(
    VARIANTS.map((name) => [
      name,
      async () => {
        const response = await handlers[name](request(name === 'replay' ? replayKey : nextKey()));
        await response.arrayBuffer();
        const expected = name === 'replay' ? 'true' : null;
        if (response.status !== 201 || response.headers.get('idempotent-replayed') !== expected)
          throw new Error(`${name}: answered ${response.status}`);
      },
    ]),
  ) as Record<Variant, () => Promise<void>>;

  // Round trips per request, and a warm-up of every path.
  const roundTrips = {} as Record<Variant, number>;
  for (const name of VARIANTS) {
    const before = queries;
    for (let i = 0; i < 20; i++) await variants[name]();
    roundTrips[name] = (queries - before) / 20;
  }

  const c1 = { latency: [] as Record<Variant, number>[] };
  const c64 = { rate: [] as Record<Variant, number>[] };
  const concurrentVariants = VARIANTS.filter((v) => v !== 'replay');
  for (let round = 0; round < options.rounds; round++) {
    // c=1: one request of each variant in turn, the order rotated every request.
    const times = Object.fromEntries(VARIANTS.map((v) => [v, [] as number[]])) as Record<Variant, number[]>;
    for (let i = 0; i < options.sequential; i++)
      for (const name of rotate(VARIANTS, i)) {
        const started = performance.now();
        await variants[name]();
        times[name].push(performance.now() - started);
      }
    c1.latency.push(Object.fromEntries(VARIANTS.map((v) => [v, median(times[v])])) as Record<Variant, number>);
    // c=64: each variant's throughput, the order rotated every round.
    const rates = {} as Record<Variant, number>;
    for (const name of rotate(concurrentVariants, round)) {
      let left = options.concurrent;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (left-- > 0) await variants[name]();
        }),
      );
      rates[name] = options.concurrent / ((performance.now() - started) / 1000);
    }
    c64.rate.push(rates);
  }

  const latencyRatio = (a: Variant, b: Variant) => spread(c1.latency.map((r) => r[a] / r[b]));
  // Time per request at c=64 is 1 / throughput: variant time / baseline time = baseline rate / variant rate.
  const rateRatio = (a: Variant, b: Variant) => spread(c64.rate.map((r) => r[b] / r[a]));
  return {
    c1: {
      latencyMs: Object.fromEntries(VARIANTS.map((v) => [v, median(c1.latency.map((r) => r[v]))])) as Record<
        Variant,
        number
      >,
      oncelyVsHand: latencyRatio('oncely', 'hand'),
      storeVsHand: latencyRatio('store', 'hand'),
      handVsBare: latencyRatio('hand', 'bare'),
      replayVsBare: latencyRatio('replay', 'bare'),
    },
    c64: {
      perSecond: Object.fromEntries(
        concurrentVariants.map((v) => [v, Math.round(median(c64.rate.map((r) => r[v])))]),
      ) as ServerResult['c64']['perSecond'],
      oncelyVsHand: rateRatio('oncely', 'hand'),
      storeVsHand: rateRatio('store', 'hand'),
      handVsBare: rateRatio('hand', 'bare'),
    },
    roundTrips,
  };
}

/** [measure, figure, detail] rows; the first three carry issue 27's targets (run.ts). */
export function serverRows(r: ServerResult): [string, string, string][] {
  const lat = r.c1.latencyMs;
  const rate = r.c64.perSecond;
  const trips = (v: Variant) => `${r.roundTrips[v]} round trips`;
  return [
    [
      'server c=1: oncely/server / hand-written key table (PostgreSQL)',
      fmtRatio(r.c1.oncelyVsHand),
      `p50 ${fmtMs(lat.oncely)} vs ${fmtMs(lat.hand)}; ${trips('oncely')} vs ${trips('hand')}`,
    ],
    [
      'server c=64: oncely/server / hand-written key table',
      fmtRatio(r.c64.oncelyVsHand),
      `time per request; ${fmtRate(rate.oncely)} vs ${fmtRate(rate.hand)}`,
    ],
    [
      'server c=1: replay / bare handler',
      fmtRatio(r.c1.replayVsBare),
      `p50 ${fmtMs(lat.replay)} vs ${fmtMs(lat.bare)}; ${trips('replay')} vs ${trips('bare')}`,
    ],
    [
      `server c=1: ${LABEL.store} / hand-written`,
      fmtRatio(r.c1.storeVsHand),
      `p50 ${fmtMs(lat.store)} vs ${fmtMs(lat.hand)}; the gap to the route is the route's HTTP layer`,
    ],
    [
      `server c=64: ${LABEL.store} / hand-written`,
      fmtRatio(r.c64.storeVsHand),
      `${fmtRate(rate.store)} vs ${fmtRate(rate.hand)}`,
    ],
    [
      'server c=1 / c=64: hand-written key table / bare handler',
      `${fmtRatio(r.c1.handVsBare)} / ${fmtRatio(r.c64.handVsBare)}`,
      `p50 ${fmtMs(lat.hand)} vs ${fmtMs(lat.bare)}; ${fmtRate(rate.hand)} vs ${fmtRate(rate.bare)}; ${trips('bare')}`,
    ],
  ];
}
