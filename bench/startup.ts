/**
 * Startup: how long `await import()` of a package takes in a fresh Node process, oncely
 * (the Node entry: SQLite store included) against bare ky, the transport it wraps. Each
 * sample is a new process; the two are interleaved so that a burst of load hits both.
 * Run alone: `npm run build && node bench/startup.ts`.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fmtRatio, median, type Spread, spread } from './stats.ts';

const exec = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '..');

/** Milliseconds from before `import(specifier)` to its resolution, in a new process started in the repository. */
async function importMs(specifier: string): Promise<number> {
  const code = `const t = performance.now(); await import(${JSON.stringify(specifier)}); console.log(performance.now() - t);`;
  const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', code], { cwd: repo });
  return Number(stdout.trim());
}

export interface StartupResult {
  oncelyMs: number;
  kyMs: number;
  /** oncely / ky per round (medians of `samples` each). */
  ratio: Spread;
  rounds: number;
  samples: number;
}

export async function measureStartup({ rounds, samples }: { rounds: number; samples: number }): Promise<StartupResult> {
  const oncely: number[] = [];
  const ky: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const o: number[] = [];
    const k: number[] = [];
    for (let s = 0; s < samples; s++) {
      o.push(await importMs('oncely'));
      k.push(await importMs('ky'));
    }
    oncely.push(...o);
    ky.push(...k);
    ratios.push(median(o) / median(k));
  }
  return { oncelyMs: median(oncely), kyMs: median(ky), ratio: spread(ratios), rounds, samples };
}

export const startupRows = (s: StartupResult): string[][] => [
  [
    "import('oncely') in Node vs import('ky')",
    fmtRatio(s.ratio),
    `median ${s.oncelyMs.toFixed(0)} ms vs ${s.kyMs.toFixed(0)} ms, a new process per sample, ${s.rounds} rounds × ${s.samples}`,
  ],
];

if (import.meta.main) {
  const result = await measureStartup({ rounds: 3, samples: 7 });
  for (const [measure, figure, detail] of startupRows(result)) console.log(`${measure}: ${figure}; ${detail}`);
}
