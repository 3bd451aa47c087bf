/**
 * Child process of the growth section (growth.ts), so that each resident-memory figure
 * is one process's own. Prints one JSON line.
 *
 *   node growth-worker.ts seed <dir> <n>              put n intents in a disk store (fsync off: seeding only)
 *   node growth-worker.ts disk-claims <claims> <dir>…  open the stores (fsync on) and claim new intents in
 *                                                    each in turn, round-robin; latency per store
 *   node growth-worker.ts memory-claims <claims> <n>… seed one MemoryStore per n, then the same
 *   node growth-worker.ts disk-open <dir>              open time and resident memory of one disk store
 *   node growth-worker.ts memory-rss <n>               resident memory of a MemoryStore of n intents
 *   node growth-worker.ts sweep <dir>                  one sweep call (what client.intent() starts once; bounded by sweepBatch)
 */
import { oncely, openDiskStore } from './oncely.ts';
import { freshRecord } from './records.ts';
import { inParallel, median, quantile } from './stats.ts';

type IntentRecord = Parameters<InstanceType<typeof oncely.MemoryStore>['claim']>[0];
type Claimer = { claim(record: IntentRecord): Promise<unknown> };

const SCOPE = 'bench';
const record = (name: string): IntentRecord => freshRecord(SCOPE, name);

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
function memory() {
  globalThis.gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rssMb: mb(rss), heapMb: mb(heapUsed) };
}

/**
 * Claims new intents in every store in turn, so that the machine's load hits each alike.
 * `batch` claims are timed together (one sample) where a single claim is too short to time.
 */
async function claimRoundRobin(stores: Claimer[], claims: number, batch: number) {
  const samples: number[][] = stores.map(() => []);
  const tag = Date.now().toString(36);
  for (const [s, store] of stores.entries()) {
    for (let i = 0; i < 20; i++) await store.claim(record(`warm-${tag}-${s}-${i}`));
  }
  for (let i = 0; i < claims / batch; i++) {
    for (const [s, store] of stores.entries()) {
      const fresh = Array.from({ length: batch }, (_, j) => record(`probe-${tag}-${i}-${j}`));
      const start = performance.now();
      for (const r of fresh) await store.claim(r);
      samples[s]!.push((performance.now() - start) / batch);
    }
  }
  return samples.map((values) => ({ medianMs: median(values), p95Ms: quantile(values, 0.95) }));
}

const [mode, ...rest] = process.argv.slice(2);
let out: unknown;
if (mode === 'seed') {
  const [dir, n] = [rest[0]!, Number(rest[1])];
  const store = await openDiskStore(dir, { fsync: false });
  const start = performance.now();
  await inParallel(n, 64, (i) => store.claim(record(`seed-${i}`)));
  await store.close();
  out = { seeded: n, ms: performance.now() - start };
} else if (mode === 'disk-claims') {
  const [claims, ...dirs] = rest;
  const stores = await Promise.all(dirs.map((dir) => openDiskStore(dir)));
  out = await claimRoundRobin(stores, Number(claims), 1);
  await Promise.all(stores.map((store) => store.close()));
} else if (mode === 'memory-claims') {
  const [claims, ...sizes] = rest.map(Number);
  const stores = sizes.map(() => new oncely.MemoryStore());
  for (const [s, store] of stores.entries()) {
    for (let i = 0; i < sizes[s]!; i++) await store.claim(record(`seed-${i}`));
  }
  out = await claimRoundRobin(stores, claims!, 100);
} else if (mode === 'disk-open') {
  const before = memory();
  const start = performance.now();
  const store = await openDiskStore(rest[0]!);
  const openMs = performance.now() - start;
  out = { openMs, before, after: memory() };
  await store.close();
} else if (mode === 'memory-rss') {
  const store = new oncely.MemoryStore();
  const before = memory();
  for (let i = 0; i < Number(rest[0]); i++) await store.claim(record(`seed-${i}`));
  out = { before, after: memory(), size: (await store.list(SCOPE)).length };
} else if (mode === 'sweep') {
  const store = await openDiskStore(rest[0]!);
  const before = memory();
  let peakRss = before.rssMb;
  const timer = setInterval(() => {
    peakRss = Math.max(peakRss, mb(process.memoryUsage().rss));
  }, 20);
  const start = performance.now();
  const removed = await store.sweep(SCOPE, 0);
  const ms = performance.now() - start;
  clearInterval(timer);
  out = { ms, removed, before, peakRssMb: Math.max(peakRss, mb(process.memoryUsage().rss)) };
  await store.close();
} else throw new Error(`unknown mode ${mode}`);
process.stdout.write(`${JSON.stringify(out)}\n`);
