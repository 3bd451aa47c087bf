/**
 * Two or more builds' PostgresStore against each other and against the baselines of
 * bench/postgres.ts, interleaved in one process on one throwaway cluster: the way to tell a
 * change from the noise of the shared machine. Each round runs every kind's baseline, then
 * each build (order rotated per round) on a fresh store over the same pool.
 *
 *   npm run build && node bench/postgres-builds.ts /tmp/before/dist dist [--rounds=6] [--n=400] [--only=claim,send,send64]
 *
 * Kinds: `claim` (sequential claims vs one raw `INSERT … ON CONFLICT` each), `send` (c=1) and
 * `send64` (c=64) — `client.send()` POSTs vs bare ky + the INSERT batched as the store
 * batches (postgres-baseline.ts) — `post64` (`intent()` + `post()` at c=64), and `mem`, `mem64`
 * (`send()` on the MemoryStore vs bare ky: the engine's share, no database; `amem64` with the store
 * answering a turn later, as one doing I/O), `writes`, `writes64`
 * (a `send()`'s two store writes alone vs the baseline's INSERT alone). Prints per
 * build the median wall and CPU µs and statements per operation (this process), its ratio to the baseline
 * and, per round, to the first build. `--profile` runs the first build alone (for `--cpu-prof`).
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import path from 'node:path';
import ky from 'ky';
import pg from 'pg';
import { startCluster } from '../test/postgres/cluster.ts';
import { batchedInsert, rawInsert as rawInsertOn } from './postgres-baseline.ts';
import { freshRecord } from './records.ts';
import { startServer } from './server-process.ts';
import { fmtRatio, inParallel, spread } from './stats.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
const builds = args.filter((arg) => !arg.startsWith('--')).map((dist) => path.resolve(dist));
const rounds = Number(flag('rounds') ?? 6);
const n = Number(flag('n') ?? 400);
const profile = args.includes('--profile');
type Kind = 'claim' | 'send' | 'send64' | 'post64' | 'mem' | 'mem64' | 'amem64' | 'writes' | 'writes64';
const KINDS = ['claim', 'send', 'send64', 'post64', 'mem', 'mem64', 'amem64', 'writes', 'writes64'];
const kinds = (flag('only')?.split(',') ?? ['claim', 'send', 'send64']) as Kind[];
if (builds.length < (profile ? 1 : 2) || kinds.some((k) => !KINDS.includes(k)))
  throw new Error('usage: node bench/postgres-builds.ts <dist> <dist> [...] [--rounds=6] [--n=400] [--only=…]');

const cluster = await startCluster();
const pool = new pg.Pool({ host: cluster.host, port: cluster.port, user: 'postgres', database: 'postgres', max: 16 });
pool.on('error', () => undefined);
/** Statements run (a connection handed out per statement). */
let statements = 0;
pool.on('acquire', () => statements++);
const server = await startServer();
const loaded = await Promise.all(
  builds.map(async (dist) => ({
    core: await import(path.join(dist, 'src/index.js')),
    postgres: await import(path.join(dist, 'postgres/index.js')),
  })),
);
await new loaded[0]!.postgres.PostgresStore({ pool }).migrate();
const rawInsert = rawInsertOn(pool);
const bare = ky.create({ retry: 0 });
const json = { amount: 1999 };

const cpuUs = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};
type Sample = { wall: number; cpu: number; statements: number };
/** Wall and CPU µs per operation of `count` operations, `concurrency` at a time. */
async function perOp(concurrency: number, count: number, op: (name: string) => Promise<unknown>): Promise<Sample> {
  const tag = randomUUID();
  const started = performance.now();
  const cpu = cpuUs();
  const ran = statements;
  await inParallel(count, concurrency, (i) => op(`${tag}-${i}`));
  return {
    wall: ((performance.now() - started) / count) * 1000,
    cpu: (cpuUs() - cpu) / count,
    statements: (statements - ran) / count,
  };
}

const concurrencyOf = (kind: Kind) => (kind.endsWith('64') ? 64 : 1);
const countOf = (kind: Kind) => (kind.endsWith('64') ? n * 5 : n);
const baseline = (kind: Kind) => {
  if (kind === 'claim' || kind === 'writes') return rawInsert;
  if (kind === 'writes64') return batchedInsert(pool);
  if (kind.includes('mem')) return () => bare.post(`${server.baseUrl}ok`, { json }).json();
  const insert = kind === 'send' ? rawInsert : batchedInsert(pool);
  return (name: string) => insert(name).then(() => bare.post(`${server.baseUrl}ok`, { json }).json());
};
// biome-ignore lint/suspicious/noExplicitAny: each build's own types.
const operation = (kind: Kind, store: any, client: any) => {
  if (kind === 'claim') return (name: string) => store.claim(freshRecord('claims', name));
  if (kind.startsWith('writes'))
    // A send()'s writes alone: the claim folded into in_flight, then the outcome (relaxed).
    return (name: string) =>
      store
        .update('writes', name, () => ({ ...freshRecord('writes', name), state: 'in_flight', attempts: 1 }))
        .then(() =>
          store.update('writes', name, (r: object) => r && { ...r, state: 'succeeded', status: 200 }, {
            durability: 'relaxed',
          }),
        );
  if (kind === 'post64')
    // biome-ignore lint/suspicious/noExplicitAny: each build's own types.
    return (name: string) => client.intent(name).then((intent: any) => intent.post('ok', { json }));
  return (name: string) => client.send(name, 'POST', 'ok', { json });
};

/** A store that answers a turn of the event loop later, as one doing I/O would. */
// biome-ignore lint/suspicious/noExplicitAny: each build's own types.
const later = (store: any) => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  return new Proxy(store, {
    get(target, property) {
      const value = target[property];
      if (typeof value !== 'function') return value;
      if (!['claim', 'get', 'update'].includes(property as string)) return value.bind(target);
      return async (...args: unknown[]) => {
        await turn();
        return value.apply(target, args);
      };
    },
  });
};

const times = Object.fromEntries(
  kinds.map((k) => [k, { base: [] as Sample[], builds: builds.map(() => [] as Sample[]) }]),
) as Record<Kind, { base: Sample[]; builds: Sample[][] }>;
const load = [loadavg()[0]!];
for (let round = -1; round < rounds; round++) {
  // Round -1 warms up (JIT, prepared statements on every connection) and is not counted.
  for (const kind of kinds) {
    const c = concurrencyOf(kind);
    if (!profile) {
      const base = await perOp(c, countOf(kind), baseline(kind));
      if (round >= 0) times[kind].base.push(base);
    }
    for (let k = 0; k < (profile ? 1 : builds.length); k++) {
      const b = (k + Math.max(round, 0)) % builds.length;
      const { core, postgres } = loaded[profile ? 0 : b]!;
      const store = kind.includes('mem')
        ? kind === 'amem64'
          ? later(new core.MemoryStore())
          : new core.MemoryStore()
        : new postgres.PostgresStore({ pool });
      const client = core.createClient({ baseUrl: server.baseUrl, store, scope: `b${b}` });
      const sample = await perOp(c, countOf(kind), operation(kind, store, client));
      if (round >= 0) times[kind].builds[b]!.push(sample);
      await client.close();
    }
  }
}
load.push(loadavg()[0]!);

const med = (samples: Sample[], of: keyof Sample) => spread(samples.map((s) => s[of])).median;
for (const kind of profile ? [] : kinds) {
  const { base, builds: own } = times[kind];
  console.log(
    `${kind} (c=${concurrencyOf(kind)}, ${countOf(kind)} per round); baseline: ${med(base, 'wall').toFixed(0)} µs wall, ${med(base, 'cpu').toFixed(0)} µs CPU, ${med(base, 'statements').toFixed(2)} statements`,
  );
  for (const [b, dist] of builds.entries()) {
    const mine = own[b]!;
    const over = (of: keyof Sample, to: Sample[]) => fmtRatio(spread(mine.map((t, r) => t[of] / to[r]![of])));
    console.log(
      `  ${dist}: ${med(mine, 'wall').toFixed(0)} µs wall, ${med(mine, 'cpu').toFixed(0)} µs CPU, ${med(mine, 'statements').toFixed(2)} statements; / baseline: wall ${over('wall', base)}, CPU ${over('cpu', base)}` +
        (b === 0 ? '' : `; / first: wall ${over('wall', own[0]!)}, CPU ${over('cpu', own[0]!)}`),
    );
  }
}
console.log(`${rounds} rounds; load ${load.map((l) => l.toFixed(1)).join(' → ')}`);
await server.close();
await pool.end();
await cluster.stop();
