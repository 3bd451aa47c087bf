/**
 * Two or more builds of oncely against each other, interleaved in one process: the way
 * to tell a change from the noise of a shared machine, which moves a single run's ratios
 * by 2–3×. Each round times bare ky, then each build (order rotated per round) with a
 * fresh store: `client.send()` and `intent()` + `post()`; on SQLite then the store's claims
 * alone, sequential and 64 at once (µs per claim).
 *
 *   npm run build && git worktree add /tmp/before <commit> && (cd /tmp/before && npm ci && npm run build)
 *   node bench/compare-builds.ts /tmp/before/dist dist [rounds = 6] [requests = 300] [--store=memory] [--concurrency=64]
 *
 * `--store=sqlite` (default) or `memory` (the engine's own cost, no disk); `--concurrency`
 * requests in flight (default 1). Prints each one's median wall time and CPU time (this
 * process, all threads; steadier than wall time on a shared machine) per request, each
 * build's ratio to bare ky, and per round its ratio to the first build (below 1: faster).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import ky from 'ky';
import { freshRecord } from './records.ts';
import { startServer } from './server-process.ts';
import { fmtRatio, inParallel, spread } from './stats.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
const positional = args.filter((arg) => !arg.startsWith('--'));
const builds = positional.filter((arg) => Number.isNaN(Number(arg))).map((dist) => path.resolve(dist));
const [rounds = 6, requests = 300] = positional.filter((arg) => !Number.isNaN(Number(arg))).map(Number);
const storeKind = flag('store') ?? 'sqlite';
const concurrency = Number(flag('concurrency') ?? 1);
if (builds.length < 2 || !['sqlite', 'memory'].includes(storeKind) || !(concurrency >= 1))
  throw new Error(
    'usage: node bench/compare-builds.ts <dist> <dist> [...] [rounds] [requests] [--store=sqlite|memory] [--concurrency=N]',
  );

const server = await startServer();
const payload = { amount: 1999, currency: 'eur', cart: 'cart_42', items: [{ sku: 'A-1', qty: 2 }] };
const loaded = await Promise.all(
  builds.map(async (dist) => ({
    core: await import(path.join(dist, 'src/index.js')),
    node: storeKind === 'sqlite' ? await import(path.join(dist, 'node/sqlite-store.js')) : undefined,
  })),
);
const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
/** Wall and CPU µs per request of `requests` requests, `concurrency` at a time. */
const perRequest = async (run: (i: number) => Promise<unknown>) => {
  const started = performance.now();
  const cpu = cpuUs();
  await inParallel(requests, concurrency, run);
  return { wall: ((performance.now() - started) / requests) * 1000, cpu: (cpuUs() - cpu) / requests };
};
/** Wall and CPU µs per claim of `count` claims, `loops` at a time. */
const claims = async (store: { claim(r: unknown): Promise<unknown> }, loops: number, count: number, tag: string) => {
  const started = performance.now();
  const cpu = cpuUs();
  await inParallel(count, loops, (i) => store.claim(freshRecord('bench', `${tag}${i}`)));
  return { wall: ((performance.now() - started) / count) * 1000, cpu: (cpuUs() - cpu) / count };
};
const kinds = (storeKind === 'sqlite' ? ['send', 'intent+post', 'claim', 'claim c=64'] : ['send', 'intent+post']) as (
  | 'send'
  | 'intent+post'
  | 'claim'
  | 'claim c=64'
)[];
type Sample = { wall: number; cpu: number };
const times = {
  ky: [] as Sample[],
  ...Object.fromEntries(kinds.map((k) => [k, builds.map(() => [] as Sample[])])),
} as { ky: Sample[] } & Record<'send' | 'intent+post' | 'claim' | 'claim c=64', Sample[][]>;
const load = [loadavg()[0]!];
for (let round = -1; round < rounds; round++) {
  // Round -1 warms up (JIT, connections) and is not counted.
  const ky1 = await perRequest(() => ky.post(`${server.baseUrl}ok`, { json: payload }).json());
  if (round >= 0) times.ky.push(ky1);
  for (let k = 0; k < builds.length; k++) {
    const b = (k + Math.max(round, 0)) % builds.length;
    const { core, node } = loaded[b]!;
    const dir = node ? await mkdtemp(path.join(tmpdir(), 'oncely-bench-builds-')) : undefined;
    const store = node ? new node.SqliteStore({ dir }) : new core.MemoryStore();
    await store.open?.();
    const client = core.createClient({ baseUrl: server.baseUrl, store, scope: 'bench' });
    await client.sweep();
    const send = await perRequest((i) => client.send(`s${round}:${i}`, 'POST', 'ok', { json: payload }));
    const post = await perRequest(async (i) => (await client.intent(`i${round}:${i}`)).post('ok', { json: payload }));
    if (round >= 0) {
      times.send[b]!.push(send);
      times['intent+post'][b]!.push(post);
      if (node) {
        times.claim[b]!.push(await claims(store, 1, requests, `c${round}:`));
        times['claim c=64'][b]!.push(await claims(store, 64, requests * 20, `p${round}:`));
      }
    }
    await client.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
load.push(loadavg()[0]!);
const med = (samples: Sample[], of: keyof Sample) => spread(samples.map((s) => s[of])).median;
console.log(
  `${storeKind} store, concurrency ${concurrency}; bare ky: ${med(times.ky, 'wall').toFixed(0)} µs wall, ${med(times.ky, 'cpu').toFixed(0)} µs CPU per request`,
);
for (const kind of kinds) {
  for (const [b, dist] of builds.entries()) {
    const own = times[kind][b]!;
    const toKy = (of: keyof Sample) => fmtRatio(spread(own.map((t, r) => t[of] / times.ky[r]![of])));
    const toFirst = (of: keyof Sample) => fmtRatio(spread(own.map((t, r) => t[of] / times[kind][0]![r]![of])));
    const first = b === 0 ? '' : `; / first build: wall ${toFirst('wall')}, CPU ${toFirst('cpu')}`;
    console.log(
      `${kind.padEnd(11)} ${dist}: ${med(own, 'wall').toFixed(0)} µs wall, ${med(own, 'cpu').toFixed(0)} µs CPU; / ky: wall ${toKy('wall')}, CPU ${toKy('cpu')}${first}`,
    );
  }
}
console.log(`${rounds} rounds of ${requests}; load ${load.map((l) => l.toFixed(1)).join(' → ')}`);
await server.close();
