/**
 * Section 2: durable claims against the disk's physical limit. Runs bench/disk-claims.ts
 * (owned with the file store: raw append + fdatasync one record at a time and 64 at a
 * time, FileStore claims sequential and at concurrency 64, interleaved in rounds, same
 * disk, same run) and turns its per-round rates into per-round ratios.
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
}

export async function measureClaims(options: { seconds: number; rounds: number }): Promise<ClaimsResult> {
  const script = path.join(import.meta.dirname, 'disk-claims.ts');
  const { stdout } = await run(process.execPath, [script, String(options.seconds), String(options.rounds)], {
    maxBuffer: 1 << 20,
  });
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{"bench":"disk-claims"'));
  if (!line) throw new Error(`bench/disk-claims.ts printed no JSON result:\n${stdout}`);
  const out = JSON.parse(line) as DiskClaimsOutput;
  const ratio = (a: Rate, b: Rate) => out.all[a].map((value, i) => value / out.all[b][i]!);
  return {
    seconds: out.seconds,
    rounds: out.rounds,
    perSecond: out.median,
    sequential: spread(ratio('storeSequential', 'rawSingle')),
    concurrent: spread(ratio('storeConcurrent', 'rawBatched')),
  };
}

const pct = (s: Spread) => `${(s.median * 100).toFixed(0)} % (${(s.min * 100).toFixed(0)}–${(s.max * 100).toFixed(0)})`;

export function claimsRows(c: ClaimsResult): string[][] {
  const r = c.perSecond;
  return [
    [
      'disk claims sequential / raw append+fdatasync',
      pct(c.sequential),
      `${fmtRate(r.storeSequential)} vs ${fmtRate(r.rawSingle)} (${fmtRatio(c.sequential)})`,
    ],
    [
      'disk claims at concurrency 64 / raw 64 per fdatasync',
      pct(c.concurrent),
      `${fmtRate(r.storeConcurrent)} vs ${fmtRate(r.rawBatched)} records/s`,
    ],
  ];
}
