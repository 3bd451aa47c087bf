/**
 * Two or more builds of oncely against each other, interleaved in one process: the way
 * to tell a change from the noise of a shared machine, which moves a single run's ratios
 * by 2–3×. Each round times bare ky, then each build (order rotated per round) with a
 * fresh SqliteStore: `client.send()` and `intent()` + `post()`, sequentially and with 64
 * calls in flight (c=64: the time per request amortised); then the store's claims alone,
 * sequential and 64 at once (time per claim).
 *
 *   npm run build && git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)
 *   node bench/compare-builds.ts /tmp/before/dist dist [rounds = 6] [requests = 300]
 *
 * Prints each build's median time per request and, per round, its ratio to the first
 * build (below 1: faster).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import ky from 'ky';
import { startServer } from './server-process.ts';
import { fmtRatio, spread } from './stats.ts';

const args = process.argv.slice(2);
const builds = args.filter((arg) => Number.isNaN(Number(arg))).map((dist) => path.resolve(dist));
const [rounds = 6, requests = 300] = args.filter((arg) => !Number.isNaN(Number(arg))).map(Number);
if (builds.length < 2) throw new Error('usage: node bench/compare-builds.ts <dist> <dist> [...] [rounds] [requests]');

const server = await startServer();
const payload = { amount: 1999, currency: 'eur', cart: 'cart_42', items: [{ sku: 'A-1', qty: 2 }] };
const loaded = await Promise.all(
  builds.map(async (dist) => ({
    core: await import(path.join(dist, 'src/index.js')),
    node: await import(path.join(dist, 'node/sqlite-store.js')),
  })),
);
/** µs per request of `requests` calls of `run`, `concurrency` in flight at a time. */
const perRequest = async (run: (i: number) => Promise<unknown>, concurrency = 1) => {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < requests; i = next++) await run(i);
    }),
  );
  return ((performance.now() - started) / requests) * 1000;
};
const kinds = ['send', 'intent+post', 'send c=64', 'intent+post c=64', 'claim', 'claim c=64'] as const;
type Kind = (typeof kinds)[number];
const fresh = (name: string) => {
  const now = Date.now();
  return {
    v: 1,
    scope: 'bench',
    name,
    key: crypto.randomUUID(),
    state: 'ready',
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  };
};
/** µs per claim of `count` claims over `loops` loops. */
const claims = async (store: { claim(r: unknown): Promise<unknown> }, loops: number, count: number, tag: string) => {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < count) await store.claim(fresh(`${tag}${next++}`));
    }),
  );
  return ((performance.now() - started) / count) * 1000;
};
const times = {
  ky: [] as number[],
  ky64: [] as number[],
  ...Object.fromEntries(kinds.map((k) => [k, builds.map(() => [] as number[])])),
} as {
  ky: number[];
  ky64: number[];
} & Record<Kind, number[][]>;
const load = [loadavg()[0]!];
for (let round = 0; round < rounds; round++) {
  times.ky.push(await perRequest(() => ky.post(`${server.baseUrl}ok`, { json: payload }).json()));
  times.ky64.push(await perRequest(() => ky.post(`${server.baseUrl}ok`, { json: payload }).json(), 64));
  for (let k = 0; k < builds.length; k++) {
    const b = (k + round) % builds.length;
    const { core, node } = loaded[b]!;
    const dir = await mkdtemp(path.join(tmpdir(), 'oncely-bench-builds-'));
    const store = new node.SqliteStore({ dir });
    await store.open();
    const client = core.createClient({ baseUrl: server.baseUrl, store, scope: 'bench' });
    for (const c of [1, 64]) {
      const suffix = c === 1 ? '' : ` c=${c}`;
      times[`send${suffix}` as Kind][b]!.push(
        await perRequest((i) => client.send(`s${c}:${i}`, 'POST', 'ok', { json: payload }), c),
      );
      times[`intent+post${suffix}` as Kind][b]!.push(
        await perRequest(async (i) => (await client.intent(`i${c}:${i}`)).post('ok', { json: payload }), c),
      );
    }
    times.claim[b]!.push(await claims(store, 1, requests, 'c'));
    times['claim c=64'][b]!.push(await claims(store, 64, requests * 20, 'p'));
    await client.close();
    await rm(dir, { recursive: true, force: true });
  }
}
load.push(loadavg()[0]!);
console.log(
  `bare ky: ${spread(times.ky).median.toFixed(0)} µs per request; c=64: ${spread(times.ky64).median.toFixed(0)} µs`,
);
for (const kind of kinds) {
  for (const [b, dist] of builds.entries()) {
    const own = times[kind][b]!;
    const ratio = b === 0 ? '' : `; / first build ${fmtRatio(spread(own.map((t, r) => t / times[kind][0]![r]!)))}`;
    console.log(`${kind.padEnd(16)} ${dist}: ${spread(own).median.toFixed(0)} µs per request${ratio}`);
  }
}
console.log(`${rounds} rounds of ${requests}; load ${load.map((l) => l.toFixed(1)).join(' → ')}`);
await server.close();
