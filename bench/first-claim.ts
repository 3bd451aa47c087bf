/**
 * A process's first SqliteStore claim, build against build: each round starts a fresh Node
 * process per build (order rotated), which imports the build, constructs a store on a
 * directory kept per build, optionally waits (the app's other work), then claims twice.
 * The first claim pays for the database thread; the second is what every later one costs.
 *
 *   npm run build && node bench/first-claim.ts /tmp/before/dist dist [rounds = 30] [wait ms = 0]
 *
 * Prints each build's medians (import, first claim, second claim, construction to the first
 * claim's answer) and the per-round ratio of its first claim to the first build's.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtRatio, median, quantile, spread } from './stats.ts';

interface Times {
  import: number;
  first: number;
  second: number;
  fromConstruct: number;
}

async function child(dist: string, dir: string, wait: number): Promise<void> {
  const started = performance.now();
  const { SqliteStore } = (await import(
    path.join(dist, 'node/sqlite-store.js')
  )) as typeof import('../node/sqlite-store.ts');
  const imported = performance.now();
  const store = new SqliteStore({ dir });
  const now = Date.now();
  const claim = (n: number) =>
    store.claim({
      v: 1,
      scope: 's',
      name: `${process.pid}-${n}`,
      key: `k-${process.pid}-${n}`,
      state: 'ready',
      attempts: 0,
      createdAt: now,
      updatedAt: now,
    });
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const asked = performance.now();
  await claim(0);
  const first = performance.now();
  await claim(1);
  const times: Times = {
    import: imported - started,
    first: first - asked,
    second: performance.now() - first,
    fromConstruct: first - imported,
  };
  console.log(JSON.stringify(times));
  process.exit(0);
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  const args = process.argv.slice(2);
  const builds = args.filter((arg) => Number.isNaN(Number(arg))).map((dist) => path.resolve(dist));
  const [rounds = 30, wait = 0] = args.filter((arg) => !Number.isNaN(Number(arg))).map(Number);
  if (builds.length < 2) throw new Error('usage: node bench/first-claim.ts <dist> <dist> [...] [rounds] [wait ms]');
  const self = fileURLToPath(import.meta.url);
  const dirs = await Promise.all(builds.map(() => mkdtemp(path.join(tmpdir(), 'oncely-bench-first-'))));
  const times = builds.map(() => [] as Times[]);
  const load = [loadavg()[0]!];
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < builds.length; k++) {
      const b = (k + round) % builds.length;
      const out = execFileSync(process.execPath, [self, '--child', builds[b]!, dirs[b]!, String(wait)], {
        encoding: 'utf8',
      });
      times[b]!.push(JSON.parse(out) as Times);
    }
  }
  load.push(loadavg()[0]!);
  const ms = (values: number[]) =>
    `${median(values).toFixed(1)} ms (p25 ${quantile(values, 0.25).toFixed(0)}, p75 ${quantile(values, 0.75).toFixed(0)})`;
  for (const [b, dist] of builds.entries()) {
    const own = times[b]!;
    const part = (key: keyof Times) => `${key} ${ms(own.map((t) => t[key]))}`;
    const ratio =
      b === 0 ? '' : `; first / first build's ${fmtRatio(spread(own.map((t, r) => t.first / times[0]![r]!.first)))}`;
    console.log(
      `${dist}: ${['import', 'first', 'second', 'fromConstruct'].map((k) => part(k as keyof Times)).join('; ')}${ratio}`,
    );
  }
  console.log(
    `${rounds} rounds, ${wait} ms between construction and the first claim; load ${load.map((l) => l.toFixed(1)).join(' → ')}`,
  );
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}
