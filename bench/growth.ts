/**
 * Section 3: does a claim get slower, or the process bigger, as intents pile up? With
 * 1k to 1M intents already stored (memory store and SqliteStore): claim latency,
 * resident memory, the time to open a disk store, and one bounded sweep call (`sweep`) that a
 * client's first `intent()` starts in the background.
 *
 * Claim latency is compared within one process: one store per size, claimed in turn
 * (round-robin), so that the machine's load hits every size alike; the figure is the
 * largest size's median over the smallest's. Memory figures come from one fresh child
 * process per size (growth-worker.ts). Disk stores are seeded through the store's own
 * API with fsync off (seeding only: `new SqliteStore({ dir, fsync: false })`), at
 * concurrency 64, which is how concurrent claims lay them out; they are measured with
 * fsync on.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fmtMs } from './stats.ts';

const run = promisify(execFile);
const worker = path.join(import.meta.dirname, 'growth-worker.ts');

async function child<T>(...args: (string | number)[]): Promise<T> {
  const { stdout } = await run(process.execPath, ['--expose-gc', worker, ...args.map(String)], {
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

interface Memory {
  rssMb: number;
  heapMb: number;
}
interface ClaimTiming {
  medianMs: number;
  p95Ms: number;
}

export interface GrowthPoint {
  n: number;
  memory: { claim: ClaimTiming; rssMb: number; heapMb: number; baseRssMb: number };
  disk: { claim: ClaimTiming; openMs: number; rssAfterOpenMb: number; baseRssMb: number };
  /** One sweep call (at most sweepBatch records), what the client's first intent() starts. */
  sweep?: { ms: number; peakRssMb: number; baseRssMb: number };
}

export interface GrowthResult {
  points: GrowthPoint[];
  seedMs: number;
  /** Claim median at the largest size / at the smallest, measured side by side. */
  claimGrowth: { memory: number; disk: number };
}

export async function measureGrowth(options: { sizes: number[]; claims: number; sweepAt: number[] }) {
  const root = await mkdtemp(path.join(tmpdir(), 'oncely-bench-growth-'));
  const dirs = options.sizes.map((n) => path.join(root, `n${n}`));
  let seedMs = 0;
  try {
    for (const [i, n] of options.sizes.entries()) seedMs += (await child<{ ms: number }>('seed', dirs[i]!, n)).ms;
    const disk = await child<ClaimTiming[]>('disk-claims', options.claims, ...dirs);
    const memory = await child<ClaimTiming[]>('memory-claims', options.claims * 10, ...options.sizes);
    const points: GrowthPoint[] = [];
    for (const [i, n] of options.sizes.entries()) {
      const open = await child<{ openMs: number; before: Memory; after: Memory }>('disk-open', dirs[i]!);
      const rss = await child<{ before: Memory; after: Memory }>('memory-rss', n);
      const point: GrowthPoint = {
        n,
        memory: { claim: memory[i]!, rssMb: rss.after.rssMb, heapMb: rss.after.heapMb, baseRssMb: rss.before.rssMb },
        disk: { claim: disk[i]!, openMs: open.openMs, rssAfterOpenMb: open.after.rssMb, baseRssMb: open.before.rssMb },
      };
      if (options.sweepAt.includes(n)) {
        const sweep = await child<{ ms: number; before: Memory; peakRssMb: number }>('sweep', dirs[i]!);
        point.sweep = { ms: sweep.ms, peakRssMb: sweep.peakRssMb, baseRssMb: sweep.before.rssMb };
      }
      points.push(point);
    }
    const first = points[0]!;
    const last = points.at(-1)!;
    return {
      points,
      seedMs,
      claimGrowth: {
        memory: last.memory.claim.medianMs / first.memory.claim.medianMs,
        disk: last.disk.claim.medianMs / first.disk.claim.medianMs,
      },
    } satisfies GrowthResult;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));

export function growthRows(g: GrowthResult): string[][] {
  const first = g.points[0]!;
  const last = g.points.at(-1)!;
  const rows: string[][] = [];
  for (const store of ['memory', 'disk'] as const) {
    rows.push([
      `claim latency, ${store} store: ${k(last.n)} / ${k(first.n)} stored`,
      `${g.claimGrowth[store].toFixed(2)}×`,
      g.points
        .map((p) => `${k(p.n)}: ${fmtMs(p[store].claim.medianMs)} (p95 ${fmtMs(p[store].claim.p95Ms)})`)
        .join(', '),
    ]);
  }
  rows.push([
    'resident memory, memory store',
    `+${(last.memory.rssMb - last.memory.baseRssMb).toFixed(0)} MB`,
    g.points.map((p) => `${k(p.n)}: ${p.memory.rssMb} MB (heap ${p.memory.heapMb} MB)`).join(', '),
  ]);
  rows.push([
    `open a disk store of ${k(last.n)} intents`,
    fmtMs(last.disk.openMs),
    `RSS ${last.disk.baseRssMb} → ${last.disk.rssAfterOpenMb} MB; ` +
      g.points.map((p) => `${k(p.n)}: ${fmtMs(p.disk.openMs)}`).join(', '),
  ]);
  for (const p of g.points) {
    if (!p.sweep) continue;
    rows.push([
      `one sweep call with ${k(p.n)} on disk (a client's first intent() starts it)`,
      fmtMs(p.sweep.ms),
      `peak RSS ${p.sweep.baseRssMb} → ${p.sweep.peakRssMb} MB`,
    ]);
  }
  rows.push(['seeding the disk stores (fsync off)', fmtMs(g.seedMs), 'through SqliteStore.claim, concurrency 64']);
  return rows;
}
