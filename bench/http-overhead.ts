/**
 * Section 1: what oncely adds per request. Bare ky POST against oncely POST (a new
 * intent per request: `await (await client.intent(name)).post(...)`, i.e. claim, mark in
 * flight, send, settle) with the memory store and with the default Node store (SQLite),
 * and `client.send(name, 'POST', …)` on SQLite (the claim folded into the in_flight
 * write: one synced write before the request instead of two), sequentially and at
 * concurrency 64, against a node:http server in another process.
 *
 * The machine is shared and noisy, so variants are interleaved finely: a round is split
 * into blocks, and each block runs every variant in turn (rotating the order). A round's
 * ratio is variant time / bare-ky time summed over its blocks; the figure is the median
 * ratio over rounds, with the range next to it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ky from 'ky';
import { oncely, openDiskStore } from './oncely.ts';
import type { ServerProcess } from './server-process.ts';
import { fmtMs, fmtRatio, inParallel, type Spread, spread, timed } from './stats.ts';

export interface OverheadOptions {
  rounds: number;
  /** Requests per variant per round. */
  requests: number;
  /** Blocks a round is split into. */
  blocks: number;
  concurrency: number;
}

type Variant = 'ky' | 'memory' | 'disk' | 'send';
const VARIANTS: Variant[] = ['ky', 'memory', 'disk', 'send'];
type Store = 'memory' | 'disk' | 'send';
const STORES: Store[] = ['memory', 'disk', 'send'];

export interface OverheadMode {
  concurrency: number;
  requests: number;
  /** Median over rounds of each variant's wall time per request (ms): total time / requests. */
  perRequestMs: Record<Variant, number>;
  /** Variant / bare ky, per round. */
  ratio: Record<Store, Spread>;
  /** Median over rounds of each variant's CPU time per request (µs, this process, all threads). */
  cpuPerRequestUs: Record<Variant, number>;
  /** Variant CPU / bare-ky CPU, per round: steadier than wall time on a shared machine. */
  cpuRatio: Record<Store, Spread>;
}

const payload = { amount: 1999, currency: 'eur', cart: 'cart_42', items: [{ sku: 'A-1', qty: 2 }] };

interface Runner {
  /** Sends requests first..first+count-1 with `concurrency` in flight; resolves with the wall time (ms). */
  run(first: number, count: number, concurrency: number): Promise<number>;
  close(): Promise<void>;
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function runner(variant: Variant, baseUrl: string, tag: string): Promise<Runner> {
  if (variant === 'ky') {
    const url = `${baseUrl}ok`;
    return {
      run: (_first, count, concurrency) =>
        timed(() => inParallel(count, concurrency, () => ky.post(url, { json: payload }).json())),
      close: async () => {},
    };
  }
  const dir = variant !== 'memory' ? await mkdtemp(path.join(tmpdir(), 'oncely-bench-http-')) : undefined;
  const disk = dir ? await openDiskStore(dir) : undefined;
  const store = disk ?? new oncely.MemoryStore();
  const client = oncely.createClient({ baseUrl, store, scope: 'bench' });
  // The first intent() starts a background sweep: let it finish before timing.
  await (await client.intent(`${tag}:first`)).post('ok', { json: payload });
  await client.sweep();
  return {
    run: (first, count, concurrency) =>
      timed(() =>
        inParallel(count, concurrency, async (i) => {
          const name = `${tag}:${first + i}`;
          const res =
            variant === 'send'
              ? await client.send(name, 'POST', 'ok', { json: payload })
              : await (await client.intent(name)).post('ok', { json: payload });
          if (res.status !== 201) throw new Error(`unexpected ${res.status}`);
        }),
      ),
    close: async () => {
      await client.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function round(
  baseUrl: string,
  requests: number,
  blocks: number,
  concurrency: number,
  tag: string,
  shift: number,
) {
  const runners = {} as Record<Variant, Runner>;
  for (const variant of VARIANTS) runners[variant] = await runner(variant, baseUrl, `${tag}-${variant}`);
  const wall: Record<Variant, number> = { ky: 0, memory: 0, disk: 0, send: 0 };
  const cpu: Record<Variant, number> = { ky: 0, memory: 0, disk: 0, send: 0 };
  const size = Math.ceil(requests / blocks);
  try {
    for (let b = 0; b < blocks; b++) {
      for (let v = 0; v < VARIANTS.length; v++) {
        const variant = VARIANTS[(v + b + shift) % VARIANTS.length]!;
        const start = cpuMs();
        wall[variant] += await runners[variant].run(b * size, size, concurrency);
        cpu[variant] += cpuMs() - start;
      }
    }
  } finally {
    for (const variant of VARIANTS) await runners[variant].close();
  }
  return { wall, cpu };
}

export async function measureOverhead(server: ServerProcess, options: OverheadOptions): Promise<OverheadMode[]> {
  const modes: OverheadMode[] = [];
  for (const concurrency of [1, options.concurrency]) {
    // Warm-up: JIT, connection pool, page cache.
    await round(server.baseUrl, 300, 1, concurrency, `warm-c${concurrency}`, 0);
    const times: Record<Variant, number[]> = { ky: [], memory: [], disk: [], send: [] };
    const cpus: Record<Variant, number[]> = { ky: [], memory: [], disk: [], send: [] };
    const ratios: Record<Store, number[]> = { memory: [], disk: [], send: [] };
    const cpuRatios: Record<Store, number[]> = { memory: [], disk: [], send: [] };
    for (let r = 0; r < options.rounds; r++) {
      const { wall, cpu } = await round(
        server.baseUrl,
        options.requests,
        options.blocks,
        concurrency,
        `c${concurrency}r${r}`,
        r,
      );
      for (const variant of VARIANTS) {
        times[variant].push(wall[variant] / options.requests);
        cpus[variant].push((cpu[variant] / options.requests) * 1000);
      }
      for (const variant of STORES) {
        ratios[variant].push(wall[variant] / wall.ky);
        cpuRatios[variant].push(cpu[variant] / cpu.ky);
      }
    }
    const med = (values: Record<Variant, number[]>) =>
      Object.fromEntries(VARIANTS.map((v) => [v, spread(values[v]).median])) as Record<Variant, number>;
    modes.push({
      concurrency,
      requests: options.requests,
      perRequestMs: med(times),
      ratio: { memory: spread(ratios.memory), disk: spread(ratios.disk), send: spread(ratios.send) },
      cpuPerRequestUs: med(cpus),
      cpuRatio: { memory: spread(cpuRatios.memory), disk: spread(cpuRatios.disk), send: spread(cpuRatios.send) },
    });
  }
  return modes;
}

export function overheadRows(modes: OverheadMode[]): string[][] {
  return modes.flatMap((m) => {
    const label = m.concurrency === 1 ? `sequential ×${m.requests}` : `concurrency ${m.concurrency} ×${m.requests}`;
    const unit = m.concurrency === 1 ? 'per request' : 'per request, amortized';
    const detail = (v: Store) =>
      `${fmtMs(m.perRequestMs[v])} vs ${fmtMs(m.perRequestMs.ky)} ${unit}; CPU ${fmtRatio(m.cpuRatio[v])}, ` +
      `${m.cpuPerRequestUs[v].toFixed(0)} vs ${m.cpuPerRequestUs.ky.toFixed(0)} µs`;
    return [
      [`HTTP ${label}: memory store / bare ky`, fmtRatio(m.ratio.memory), detail('memory')],
      [`HTTP ${label}: default Node store (SQLite) / bare ky`, fmtRatio(m.ratio.disk), detail('disk')],
      [`HTTP ${label}: SQLite, client.send() / bare ky`, fmtRatio(m.ratio.send), detail('send')],
    ];
  });
}
