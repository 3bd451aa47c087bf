/**
 * PostgresStore bench, on its own throwaway cluster (PostgreSQL 15, unix socket, default
 * durability: fsync on, synchronous_commit on). A report, never a test.
 *
 *   npm run build && node bench/postgres.ts [--quick] [--no-growth] [--no-sweep | --sweep-only]
 *
 * Rows (ratios against baselines measured in the same run, interleaved rounds):
 * claims vs a raw `INSERT … ON CONFLICT DO NOTHING RETURNING` on the same pool (seq, c=64);
 * claims asked for relaxed durability (stored strict: an acknowledged claim is durable);
 * POST via PostgresStore (intent() + post(), and the one-step send()) vs two baselines (c=1,
 * c=64): bare ky + one raw INSERT per request (naive), and bare ky + the same INSERT grouped
 * as the store groups its writes (batched: the fair one at c=64), in time and in this
 * process's CPU per request;
 * claim latency with 1M vs 1k stored; one bounded sweep batch with 1M stored; claims' p99
 * at c=4 during a full sweep of a large scope vs without.
 */
import { randomUUID } from 'node:crypto';
import ky from 'ky';
import { createClient } from 'oncely';
import { PostgresStore } from 'oncely/postgres';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { batchedInsert, rawInsert as rawInsertOn } from './postgres-baseline.ts';
import { freshRecord } from './records.ts';
import { startServer } from './server-process.ts';
import { fmtRatio, loadLine, median, quantile, type Spread, spread } from './stats.ts';

const quick = process.argv.includes('--quick');
/** `--no-growth`: no 1M-row seeding (claim latency, sweep batch). */
const growth = !process.argv.includes('--no-growth');
/** `--no-sweep`: without claims during a full sweep (seeds 200k–670k rows). `--sweep-only`: only that. */
const sweepRows = !process.argv.includes('--no-sweep');
const sweepOnly = process.argv.includes('--sweep-only');
const ROUNDS = quick ? 3 : 5;
const SECONDS = quick ? 1 : 2;
const cluster = await startCluster();
const pool = new pg.Pool({ host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres', max: 16 });
pool.on('error', () => undefined);
const store = new PostgresStore({ pool });
await store.migrate();

const rawInsert = rawInsertOn(pool);
const claim = (durability: 'strict' | 'relaxed') => (name: string) =>
  store.claim(freshRecord('store', name), { durability });

/** This process's CPU (µs) per operation in the last `rate()`. */
let lastCpuUs = 0;

/** Operations per second of `op` over `concurrency` loops for SECONDS. */
async function rate(op: (name: string) => Promise<unknown>, concurrency: number): Promise<number> {
  let done = 0;
  const until = performance.now() + SECONDS * 1000;
  const started = performance.now();
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) await op(`n-${randomUUID()}`).then(() => done++);
    }),
  );
  const used = process.cpuUsage(cpu);
  lastCpuUs = (used.user + used.system) / done;
  return done / ((performance.now() - started) / 1000);
}

/** Interleaved rounds; each variant's rate per round, and the ratios to the first. */
async function compare(variants: Record<string, () => Promise<number>>) {
  const rates: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const cpus: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, run] of Object.entries(variants)) {
      rates[name]!.push(await run());
      cpus[name]!.push(lastCpuUs);
    }
  const [base] = Object.keys(variants);
  /** CPU per operation over `other`'s, per round. */
  const cpuOver = (name: string, other: string) => spread(cpus[name]!.map((v, i) => v / cpus[other]![i]!));
  return Object.fromEntries(
    Object.entries(rates).map(([name, values]) => [
      name,
      {
        perSecond: Math.round(median(values)),
        ratio: spread(values.map((v, i) => v / rates[base!]![i]!)),
        cpuUs: Math.round(median(cpus[name]!)),
        cpuOver: (other: string) => cpuOver(name, other),
        rateOver: (other: string) => spread(values.map((v, i) => v / rates[other]![i]!)),
      },
    ]),
  );
}

const rows: string[] = [];
const row = (measure: string, figure: string, detail: string) => {
  rows.push(`| ${measure} | ${figure} | ${detail} |`);
  process.stderr.write(`${measure}: ${figure} (${detail})\n`);
};
const pct = (s: { median: number; min: number; max: number }) =>
  `${(s.median * 100).toFixed(0)} % (${(s.min * 100).toFixed(0)}–${(s.max * 100).toFixed(0)})`;

for (const c of sweepOnly ? [] : [1, 64]) {
  const r = await compare({
    raw: () => rate(rawInsert, c),
    strict: () => rate(claim('strict'), c),
    relaxed: () => rate(claim('relaxed'), c),
  });
  row(
    `claims c=${c} / raw INSERT … ON CONFLICT`,
    pct(r.strict!.ratio),
    `${r.strict!.perSecond}/s vs ${r.raw!.perSecond}/s raw; CPU ${fmtRatio(r.strict!.cpuOver('raw'))}${c === 1 ? '; target ≥ 90 %' : ''}`,
  );
  row(
    `claims asked relaxed c=${c} / raw INSERT`,
    pct(r.relaxed!.ratio),
    `${r.relaxed!.perSecond}/s (the engine's hint; claims are stored strict)`,
  );
}

// POST end to end at c=64: bare ky + one raw INSERT vs an oncely intent over PostgresStore.
const server = await startServer();
const bare = ky.create({ retry: 0 });
const batched = batchedInsert(pool);
const api = createClient({ baseUrl: server.baseUrl, scope: 'post', store });
for (const c of sweepOnly ? [] : [1, 64]) {
  const post = await compare({
    bare: () =>
      rate(
        (name) => rawInsert(name).then(() => bare.post(`${server.baseUrl}ok`, { json: { amount: 1999 } }).json()),
        c,
      ),
    batched: () =>
      rate((name) => batched(name).then(() => bare.post(`${server.baseUrl}ok`, { json: { amount: 1999 } }).json()), c),
    oncely: () => rate((name) => api.intent(name).then((intent) => intent.post('ok', { json: { amount: 1999 } })), c),
    // One step: the claim folds into the in_flight write (two round trips for a fresh intent).
    send: () => rate((name) => api.send(name, 'POST', 'ok', { json: { amount: 1999 } }), c),
  });
  row(
    `POST via PostgresStore / bare ky + 1 raw INSERT, c=${c}`,
    fmtRatio(invert(post.oncely!.ratio)),
    `${post.oncely!.perSecond}/s vs ${post.bare!.perSecond}/s (the naive baseline: it credits the store's batching to oncely)`,
  );
  row(
    `send() via PostgresStore / bare ky + 1 raw INSERT, c=${c}`,
    fmtRatio(invert(post.send!.ratio)),
    `${post.send!.perSecond}/s vs ${post.bare!.perSecond}/s (naive baseline)`,
  );
  // The fair baseline: the same INSERT grouped as the store groups it (at c=1 it is the naive one).
  for (const [label, variant] of [
    ['POST via PostgresStore', post.oncely!],
    ['send() via PostgresStore', post.send!],
  ] as const) {
    row(
      `${label} CPU / bare ky + batched INSERT, c=${c}`,
      fmtRatio(variant.cpuOver('batched')),
      `${variant.cpuUs} vs ${post.batched!.cpuUs} µs CPU per request (naive: ${post.bare!.cpuUs} µs); ` +
        `time ${fmtRatio(invert(variant.rateOver('batched')))}` +
        (label.startsWith('send') ? `; target ≤ ${c === 64 ? '1.2' : '1.3'}×` : ''),
    );
  }
}
await server.close();

function invert(s: Spread): Spread {
  return { ...s, median: 1 / s.median, min: 1 / s.max, max: 1 / s.min };
}

/** p50 latency (ms) of sequential strict claims into a scope that already holds the rows. */
async function claimLatency(samples: number): Promise<{ p50: number; p90: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await claim('strict')(`lat-${randomUUID()}`);
    times.push(performance.now() - start);
  }
  return { p50: quantile(times, 0.5), p90: quantile(times, 0.9) };
}

async function seed(total: number) {
  await pool.query('TRUNCATE oncely_intents');
  // Half settled long ago (sweepable), half recent; spread over 100 scopes plus 'store'.
  await pool.query(
    `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at, ttl)
     SELECT CASE WHEN i % 2 = 0 THEN 'store' ELSE 's' || (i % 100) END, 'seed-' || i, 'k-' || i,
            CASE WHEN i % 4 = 0 THEN 'succeeded' ELSE 'in_flight' END, 1, $2, $2, 86400000
     FROM generate_series(1, $1) AS i`,
    [total, Date.now() - 2 * 86_400_000],
  );
  await pool.query('VACUUM ANALYZE oncely_intents');
  await pool.query('CHECKPOINT'); // so that the seeding's writes are not flushed during the samples
}

const samples = quick ? 500 : 2000;
if (growth && !sweepOnly) {
  await seed(1_000);
  const small = [await claimLatency(samples)];
  await seed(1_000_000);
  const large = [await claimLatency(samples)];
  await seed(1_000);
  small.push(await claimLatency(samples));
  await seed(1_000_000);
  large.push(await claimLatency(samples));
  const ratios = large.map((l, i) => l.p50 / small[i]!.p50);
  row(
    'claim latency 1M / 1k stored (p50)',
    `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
    `p50 ${large.map((l) => l.p50.toFixed(3)).join('/')} ms vs ${small.map((s) => s.p50.toFixed(3)).join('/')} ms; target ≤ 1.2×`,
  );

  // Sweep with 1M stored (250k due in scope 'store'): one statement of 500 per call.
  const plan = await pool.query(
    `EXPLAIN SELECT name FROM oncely_intents WHERE scope = 'store' AND state IN ('succeeded', 'failed', 'ready')
   AND sweep_after < ${Date.now()} ORDER BY sweep_after LIMIT 500 FOR UPDATE SKIP LOCKED`,
  );
  const batches: number[] = [];
  for (let i = 0; i < (quick ? 10 : 40); i++) {
    const start = performance.now();
    const removed = await store.sweep('store', Date.now(), { limit: 500 });
    batches.push(performance.now() - start);
    if (removed < 500) break;
  }
  const usesIndex = plan.rows.some((r) => String(r['QUERY PLAN']).includes('oncely_intents_sweep'));
  row(
    'sweep batch of 500 with 1M stored',
    `${median(batches).toFixed(1)} ms p50`,
    `max ${Math.max(...batches).toFixed(1)} ms over ${batches.length} batches; plan uses oncely_intents_sweep: ${usesIndex}`,
  );
}

/**
 * Claims' p99 at c=4 in a scope holding `due` sweepable rows, with and without a full
 * sweep of that scope running meanwhile (issue 19 §4: 31 → 103 ms with 670k).
 */
async function claimsDuringSweep(due: number, window: number) {
  await pool.query("DELETE FROM oncely_intents WHERE scope = 'swept'");
  await pool.query(
    `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at, ttl)
     SELECT 'swept', 'old-' || i, 'k-' || i, CASE WHEN i % 2 = 0 THEN 'succeeded' ELSE 'failed' END, 1, $2, $2, 86400000
     FROM generate_series(1, $1) AS i`,
    [due, Date.now() - 2 * 86_400_000],
  );
  await pool.query('VACUUM ANALYZE oncely_intents');
  await pool.query('CHECKPOINT');
  const claims = async (until: () => boolean) => {
    const times: number[] = [];
    const now = Date.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!until()) {
          const start = performance.now();
          await store.claim({
            v: 1,
            scope: 'swept',
            name: `new-${randomUUID()}`,
            key: randomUUID(),
            state: 'ready',
            attempts: 0,
            createdAt: now,
            updatedAt: now,
          });
          times.push(performance.now() - start);
        }
      }),
    );
    return times;
  };
  const quietFor = (ms: number) => {
    const until = performance.now() + ms;
    return claims(() => performance.now() > until);
  };
  // Without a sweep: before it and after it (the load of the shared machine drifts).
  const before = await quietFor(window / 2);
  let swept = false;
  const started = performance.now();
  const sweeping = store.sweep('swept', Date.now(), { limit: Number.MAX_SAFE_INTEGER }).finally(() => {
    swept = true;
  });
  const during = await claims(() => swept);
  const removed = await sweeping;
  const ms = performance.now() - started;
  const after = await quietFor(window / 2);
  process.stderr.write(
    `claims p99 before the sweep ${quantile(before, 0.99).toFixed(1)} ms (n=${before.length}), during ${quantile(during, 0.99).toFixed(1)} (n=${during.length}), after ${quantile(after, 0.99).toFixed(1)} (n=${after.length})\n`,
  );
  return { alone: [...before, ...after], during, removed, ms };
}

if (sweepRows) {
  const due = Number(
    process.argv.find((a) => a.startsWith('--sweep-rows='))?.split('=')[1] ?? (quick ? 200_000 : 670_000),
  );
  const ratios: number[] = [];
  const detail: string[] = [];
  for (let round = 0; round < (quick ? 2 : 3); round++) {
    const r = await claimsDuringSweep(due, quick ? 3_000 : 5_000);
    const p99 = { alone: quantile(r.alone, 0.99), during: quantile(r.during, 0.99) };
    ratios.push(p99.during / p99.alone);
    detail.push(
      `${p99.alone.toFixed(1)} → ${p99.during.toFixed(1)} ms (max ${Math.max(...r.during).toFixed(0)}; ${r.removed} swept in ${(r.ms / 1000).toFixed(1)} s)`,
    );
  }
  row(
    `claims p99 at c=4 during a full sweep of ${due / 1000}k / without`,
    `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
    `${detail.join('; ')}; target ≤ 1.5×`,
  );
}

console.log('| measure | figure | detail |\n|---|---|---|');
console.log(rows.join('\n'));
console.log(loadLine());
await api.close().catch(() => undefined);
await pool.end();
await cluster.stop();
