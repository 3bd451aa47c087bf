/**
 * Section 2: durable claims against the disk's physical limit. Runs bench/disk-claims.ts
 * (raw append + fdatasync one record at a time and 64 at a time, SqliteStore claims
 * sequential and at concurrency 64, interleaved in rounds, same disk, same run) and turns
 * its per-round rates into per-round ratios; then bench/sqlite-block.ts (how long one
 * commit holds the main thread's event loop, 4 processes writing to one database).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fmtRate, fmtRatio, type Spread, spread } from './stats.ts';

const run = promisify(execFile);

interface DiskClaimsOutput {
  bench: 'disk-claims';
  seconds: number;
  rounds: number;
  median: Record<Rate, number>;
  all: Record<Rate, number[]>;
}
type Rate = 'rawSingle' | 'rawBatched' | 'storeSequential' | 'storeConcurrent';

export interface ClaimsResult {
  seconds: number;
  rounds: number;
  /** Median records (or claims) per second. */
  perSecond: Record<Rate, number>;
  /** Sequential claims / raw single, per round. */
  sequential: Spread;
  /** Concurrent claims / raw batched, per round. */
  concurrent: Spread;
  block: BlockResult;
}

export interface BlockResult {
  processes: number;
  commits: number;
  writesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpuP50Ms: number;
  cpuP99Ms: number;
  cpuMaxMs: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  workerCommitP99Ms: number;
}

async function lastJson<T>(script: string, args: string[], tag: string): Promise<T> {
  const { stdout } = await run(process.execPath, [path.join(import.meta.dirname, script), ...args], {
    maxBuffer: 64 << 20,
  });
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith(`{"bench":"${tag}"`));
  if (!line) throw new Error(`bench/${script} printed no JSON result:\n${stdout}`);
  return JSON.parse(line) as T;
}

export async function measureClaims(options: { seconds: number; rounds: number }): Promise<ClaimsResult> {
  const out = await lastJson<DiskClaimsOutput>(
    'disk-claims.ts',
    [String(options.seconds), String(options.rounds)],
    'disk-claims',
  );
  const block = await lastJson<BlockResult>('sqlite-block.ts', ['3', '4'], 'sqlite-block');
  const ratio = (a: Rate, b: Rate) => out.all[a].map((value, i) => value / out.all[b][i]!);
  return {
    seconds: out.seconds,
    rounds: out.rounds,
    perSecond: out.median,
    sequential: spread(ratio('storeSequential', 'rawSingle')),
    concurrent: spread(ratio('storeConcurrent', 'rawBatched')),
    block,
  };
}

const pct = (s: Spread) => `${(s.median * 100).toFixed(0)} % (${(s.min * 100).toFixed(0)}–${(s.max * 100).toFixed(0)})`;

export function claimsRows(c: ClaimsResult): string[][] {
  const r = c.perSecond;
  return [
    [
      'SqliteStore claims sequential / raw append+fdatasync',
      pct(c.sequential),
      `${fmtRate(r.storeSequential)} vs ${fmtRate(r.rawSingle)} (${fmtRatio(c.sequential)})`,
    ],
    [
      'SqliteStore claims at concurrency 64 / raw 64 per fdatasync',
      pct(c.concurrent),
      `${fmtRate(r.storeConcurrent)} vs ${fmtRate(r.rawBatched)} records/s`,
    ],
    [
      `event-loop block per commit, ${c.block.processes} processes (p99 / max)`,
      `${c.block.p99Ms.toFixed(2)} / ${c.block.maxMs.toFixed(1)} ms`,
      `p50 ${c.block.p50Ms.toFixed(2)} ms over ${c.block.commits} commits, ${Math.round(c.block.writesPerSecond)} writes/s; ` +
        `main-thread CPU p50 ${c.block.cpuP50Ms.toFixed(2)} / p99 ${c.block.cpuP99Ms.toFixed(2)} / max ${c.block.cpuMaxMs.toFixed(1)} ms; ` +
        `loop delay p99 ${c.block.loopDelayP99Ms.toFixed(1)} / max ${c.block.loopDelayMaxMs.toFixed(1)} ms; commit on the database thread p99 ${c.block.workerCommitP99Ms.toFixed(2)} ms`,
    ],
  ];
}
