/**
 * Where a sequential POST through the default Node store spends its time, part by part,
 * measured in one process, interleaved: what no change to the engine can take away.
 *
 *   npm run build && node bench/sqlite-floor.ts [rounds = 5] [per block = 40]
 *
 * - bare ky POST (the baseline of the overhead section);
 * - `client.send()` on SqliteStore (one strict write before the request, one relaxed after);
 * - the same store's strict and relaxed `update()` alone, back to back and after 1 ms of
 *   work on the main thread (as when a request was just sent: the database thread sat idle
 *   meanwhile, and waking an idle thread costs more on a VM);
 * - a bare worker thread's echo after the same 1 ms, and raw `fdatasync` of 16 KB
 *   overwritten (a commit's four WAL pages).
 * The floor of `send()` is its two writes after a request plus the request; its ratio to
 * bare ky is what the store alone costs, before any engine work.
 */
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import ky from 'ky';
import { oncely, openDiskStore } from './oncely.ts';
import { startServer } from './server-process.ts';
import { spread } from './stats.ts';

const rounds = Number(process.argv[2] ?? 5);
const per = Number(process.argv[3] ?? 40);
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

const busy = () => {
  const until = performance.now() + 1;
  while (performance.now() < until);
};
const touch = (durability: 'strict' | 'relaxed') =>
  store.update('bench', 'first', (c) => c && { ...c, updatedAt: Date.now() }, { durability });
let n = 0;
let offset = 0;
/** Each part: what is timed, and what runs untimed before it. */
const parts: Record<string, { run: () => Promise<unknown>; before?: () => void }> = {
  'bare ky POST': { run: () => ky.post(`${server.baseUrl}ok`, { json: payload }).json() },
  'client.send() on SqliteStore': { run: () => client.send(`floor:${n++}`, 'POST', 'ok', { json: payload }) },
  'strict update, back to back': { run: () => touch('strict') },
  'strict update, after 1 ms of work': { run: () => touch('strict'), before: busy },
  'relaxed update, back to back': { run: () => touch('relaxed') },
  'relaxed update, after 1 ms of work': { run: () => touch('relaxed'), before: busy },
  'worker echo, after 1 ms of work': {
    run: () => new Promise((resolve) => echo.once('message', resolve).postMessage(n++)),
    before: busy,
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
      before?.();
      const started = performance.now();
      await run();
      samples[name]!.push(performance.now() - started);
    }
  }
}
load.push(loadavg()[0]!);
const median = (name: string) => spread(samples[name]!).median * 1000;
const us = (x: number) => `${x.toFixed(0).padStart(5)} µs`;
for (const name of names) console.log(`${name.padEnd(36)} ${us(median(name))}`);
const ky1 = median('bare ky POST');
const floor = median('strict update, after 1 ms of work') + median('relaxed update, after 1 ms of work') + ky1;
const sent = median('client.send() on SqliteStore');
console.log(
  `send() floor (its two writes after work, plus the request) ${us(floor)} = ${(floor / ky1).toFixed(2)}× bare ky; ` +
    `send() ${(sent / ky1).toFixed(2)}×; load ${load.map((l) => l.toFixed(1)).join(' → ')}`,
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
await echo.terminate();
await client.close();
await server.close();
await rm(dir, { recursive: true, force: true });
