/**
 * Durable claims per second: SqliteStore (the default Node store) against raw disk
 * writes, in the same run.
 *
 *   node bench/disk-claims.ts [seconds per measurement = 2] [rounds = 3]
 *
 * Measures, each for a fixed time, interleaved over several rounds (median reported):
 * - raw single: append one ~250-byte record + fdatasync, one after another;
 * - raw batched: append 64 records + one fdatasync;
 * - SqliteStore claims of fresh intents, sequential (one awaited after another), strict;
 * - SqliteStore claims at concurrency 64 (64 loops claiming at once), strict.
 * Targets (issue 10): sequential ≥ 100 % of raw single; concurrent ≥ 50 % of raw batched.
 * Everything runs in a temp directory under os.tmpdir(), removed at the end.
 */
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import '../scripts/ts-resolve.ts';
import { freshRecord } from './records.ts';

const { SqliteStore } = await import('../node/sqlite-store.js');
type IntentRecord = import('../src/store/store.js').IntentRecord;

const seconds = Number(process.argv[2] ?? 2);
const rounds = Number(process.argv[3] ?? 3);
const BATCH = 64;
const CONCURRENCY = 64;

const root = await mkdtemp(path.join(tmpdir(), 'oncely-bench-'));
let serial = 0;

const fresh = (): IntentRecord => freshRecord('bench', `job:${serial++}`);
const line = () => Buffer.from(`${JSON.stringify(fresh())}\n`);

/** Runs `step` (which does `n` records) until `seconds` pass; returns records per second. */
async function rate(step: () => Promise<number>): Promise<number> {
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  let done = 0;
  while (performance.now() < end) done += await step();
  return done / ((performance.now() - start) / 1000);
}

async function rawSingle(dir: string): Promise<number> {
  const handle = await open(path.join(dir, 'single.log'), 'a');
  try {
    return await rate(async () => {
      await handle.write(line());
      await handle.datasync();
      return 1;
    });
  } finally {
    await handle.close();
  }
}

async function rawBatched(dir: string): Promise<number> {
  const handle = await open(path.join(dir, 'batched.log'), 'a');
  try {
    return await rate(async () => {
      await handle.write(Buffer.concat(Array.from({ length: BATCH }, line)));
      await handle.datasync();
      return BATCH;
    });
  } finally {
    await handle.close();
  }
}

async function storeSequential(dir: string): Promise<number> {
  const store = new SqliteStore({ dir });
  await store.open();
  try {
    return await rate(async () => {
      await store.claim(fresh());
      return 1;
    });
  } finally {
    await store.close();
  }
}

async function storeConcurrent(dir: string): Promise<number> {
  const store = new SqliteStore({ dir });
  await store.open();
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await store.claim(fresh());
        done++;
      }
    }),
  );
  const perSecond = done / ((performance.now() - start) / 1000);
  await store.close();
  return perSecond;
}

const runs = { rawSingle, rawBatched, storeSequential, storeConcurrent };
const results: Record<keyof typeof runs, number[]> = {
  rawSingle: [],
  rawBatched: [],
  storeSequential: [],
  storeConcurrent: [],
};
try {
  for (let round = 0; round < rounds; round++) {
    for (const [label, run] of Object.entries(runs) as [keyof typeof runs, (dir: string) => Promise<number>][]) {
      const dir = await mkdtemp(path.join(root, `${label}-`));
      results[label].push(await run(dir));
      await rm(dir, { recursive: true, force: true });
    }
  }
} finally {
  await rm(root, { recursive: true, force: true });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const m = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)])) as Record<
  keyof typeof runs,
  number
>;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(9);
const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(1)} %`;
console.log(
  `durable writes/s, median of ${rounds} rounds of ${seconds}s (each round: ${Object.keys(runs).join(', ')})`,
);
console.log(`raw append + fdatasync, 1 record      ${fmt(m.rawSingle)}   all: ${results.rawSingle.map(fmt).join()}`);
console.log(
  `raw append + fdatasync, ${BATCH} records    ${fmt(m.rawBatched)}   all: ${results.rawBatched.map(fmt).join()}`,
);
console.log(
  `SqliteStore claims, sequential        ${fmt(m.storeSequential)}   all: ${results.storeSequential.map(fmt).join()}`,
);
console.log(
  `SqliteStore claims, concurrency ${CONCURRENCY}     ${fmt(m.storeConcurrent)}   all: ${results.storeConcurrent.map(fmt).join()}`,
);
console.log(
  `sequential vs raw single: ${pct(m.storeSequential, m.rawSingle)} (target ≥ 100 %); ` +
    `concurrent vs raw batched: ${pct(m.storeConcurrent, m.rawBatched)} (target ≥ 50 %)`,
);
console.log(JSON.stringify({ bench: 'disk-claims', seconds, rounds, median: m, all: results }));
