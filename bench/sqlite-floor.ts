/**
 * Where a sequential POST through the default Node store spends its time, part by part,
 * measured in one process, interleaved: what no change to the engine can take away.
 *
 *   npm run build && node bench/sqlite-floor.ts [rounds = 4] [per block = 200]
 *
 * - bare ky POST (the baseline of the overhead section);
 * - `client.send()` on SqliteStore (one strict write before the request, one relaxed after);
 * - the same store's strict and relaxed `update()` alone: back to back; after 1 ms of work
 *   on the main thread (the database thread sat idle meanwhile); and after 1 ms in which
 *   both threads slept, as during a request (on a VM a thread that slept past the
 *   hypervisor's halt polling costs about 100 µs to wake, each way);
 * - a bare worker thread's echo after the same two kinds of 1 ms, and raw `fdatasync` of
 *   16 KB overwritten (a commit's four WAL pages);
 * - the design not taken: the same insert and `fdatasync` of the WAL on the main thread,
 *   no database thread (a stuck disk would then hold the app's event loop).
 * The floor of `send()` is its one strict write after both threads slept, plus the request
 * (the outcome's relaxed write rides on the next call's commit); its ratio to bare ky is
 * what the store alone costs, before any engine work.
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import ky from 'ky';
import { oncely, openDiskStore } from './oncely.ts';
import { startServer } from './server-process.ts';
import { spread } from './stats.ts';

// Blocks of 200: a block of 40 is timed half cold (bare ky's median 1.4 ms where 200 give 0.6 ms, on the 2-core VM).
const rounds = Number(process.argv[2] ?? 4);
const per = Number(process.argv[3] ?? 200);
const server = await startServer();
const dir = await mkdtemp(path.join(tmpdir(), 'oncely-bench-floor-'));
const store = await openDiskStore(dir);
const client = oncely.createClient({ baseUrl: server.baseUrl, store, scope: 'bench' });
const payload = { amount: 1999, currency: 'eur', cart: 'cart_42', items: [{ sku: 'A-1', qty: 2 }] };
await (await client.intent('first')).post('ok', { json: payload });
await client.sweep();
const echo = new Worker(
  `require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m));`,
  { eval: true },
);
const raw = openSync(path.join(dir, 'raw'), 'w');
writeSync(raw, Buffer.alloc(1 << 22));
fdatasyncSync(raw);
// The design not taken: the commit and its sync on the main thread.
const inline = new DatabaseSync(path.join(dir, 'inline.sqlite'));
inline.exec(
  'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID',
);
const insertInline = inline.prepare('INSERT INTO t VALUES (?, ?)');
const inlineRow = JSON.stringify({ v: 1, scope: 'bench', key: crypto.randomUUID(), state: 'ready', payload });
let inlineWal: number | undefined;
const commitInline = async () => {
  insertInline.run(`k${n++}`, inlineRow);
  inlineWal ??= openSync(path.join(dir, 'inline.sqlite-wal'), 'r+');
  fdatasyncSync(inlineWal);
};

const busy = () => {
  const until = performance.now() + 1;
  while (performance.now() < until);
};
const sleep = () => new Promise((resolve) => setTimeout(resolve, 1));
const touch = (durability: 'strict' | 'relaxed') =>
  store.update('bench', 'first', (c) => c && { ...c, updatedAt: Date.now() }, { durability });
let n = 0;
let offset = 0;
/** Each part: what is timed, and what runs untimed before it. */
const parts: Record<string, { run: () => Promise<unknown>; before?: () => unknown }> = {
  'bare ky POST': { run: () => ky.post(`${server.baseUrl}ok`, { json: payload }).json() },
  'client.send() on SqliteStore': { run: () => client.send(`floor:${n++}`, 'POST', 'ok', { json: payload }) },
  'strict update, back to back': { run: () => touch('strict') },
  'strict update, after 1 ms of work': { run: () => touch('strict'), before: busy },
  'strict update, after 1 ms asleep': { run: () => touch('strict'), before: sleep },
  'relaxed update, back to back': { run: () => touch('relaxed') },
  'relaxed update, after 1 ms of work': { run: () => touch('relaxed'), before: busy },
  'insert + fdatasync on the main thread, back to back': { run: commitInline },
  'insert + fdatasync on the main thread, after 1 ms asleep': { run: commitInline, before: sleep },
  'worker echo, after 1 ms of work': {
    run: () => new Promise((resolve) => echo.once('message', resolve).postMessage(n++)),
    before: busy,
  },
  'worker echo, after 1 ms asleep': {
    run: () => new Promise((resolve) => echo.once('message', resolve).postMessage(n++)),
    before: sleep,
  },
  'fdatasync of 16 KB overwritten': {
    run: async () => {
      offset = (offset + 16384) % (1 << 22);
      writeSync(raw, Buffer.alloc(16384, 1), 0, 16384, offset);
      fdatasyncSync(raw);
    },
  },
};
const names = Object.keys(parts);
const samples: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
const load = [loadavg()[0]!];
for (let r = 0; r < rounds; r++) {
  for (let v = 0; v < names.length; v++) {
    const name = names[(v + r) % names.length]!;
    const { run, before } = parts[name]!;
    for (let i = 0; i < per; i++) {
      await before?.();
      const started = performance.now();
      await run();
      samples[name]!.push(performance.now() - started);
    }
  }
}
load.push(loadavg()[0]!);
const median = (name: string) => spread(samples[name]!).median * 1000;
const us = (x: number) => `${x.toFixed(0).padStart(5)} µs`;
for (const name of names) console.log(`${name.padEnd(58)} ${us(median(name))}`);
const ky1 = median('bare ky POST');
const floor = median('strict update, after 1 ms asleep') + ky1;
const sent = median('client.send() on SqliteStore');
console.log(
  `send() floor (one strict write after both threads slept, plus the request) ${us(floor)} = ${(floor / ky1).toFixed(2)}× bare ky; ` +
    `send() ${(sent / ky1).toFixed(2)}×; with the commit on the main thread ` +
    `${((median('insert + fdatasync on the main thread, after 1 ms asleep') + ky1) / ky1).toFixed(2)}×; ` +
    `load ${load.map((l) => l.toFixed(1)).join(' → ')}`,
);
console.log(
  JSON.stringify({
    bench: 'sqlite-floor',
    medianUs: Object.fromEntries(names.map((k) => [k, median(k)])),
    floorRatio: floor / ky1,
    sendRatio: sent / ky1,
    load,
  }),
);
closeSync(raw);
if (inlineWal !== undefined) closeSync(inlineWal);
inline.close();
await echo.terminate();
await client.close();
await server.close();
await rm(dir, { recursive: true, force: true });
