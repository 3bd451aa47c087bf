/**
 * `npm run bench`: oncely's benchmarks. A report, not a test: it never fails on a
 * timing. Every figure is a ratio against a baseline measured in the same run (or a
 * latency / size next to its target), as the median over several rounds with the range
 * of the rounds. Prints a table and writes bench/results.json.
 *
 *   npm run bench                       everything (~6 minutes on the 2-core VM)
 *   npm run bench -- --quick            fewer rounds and samples (~1.5 minutes)
 *   npm run bench -- --only=overhead,retry
 *
 * Sections: overhead (HTTP per-request overhead), claims (durable claims vs raw disk),
 * growth (1k to 1M intents stored), browser (IndexedDB and click delay in Chromium),
 * retry (CPU per retried attempt), startup (import time vs ky), bundle (bench/bundle.ts: the
 * checkout's parts from scripts/bundle-budget.js, the React example built with and without oncely),
 * server (oncely/server on PostgreSQL vs the same handler bare and under a hand-written key table).
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BrowserResult } from './browser.ts';
import type { ClaimsResult } from './durable-claims.ts';
import type { GrowthResult } from './growth.ts';
import type { OverheadMode } from './http-overhead.ts';
import type { RetryCpuResult } from './retry-cpu.ts';
import type { ServerResult } from './server.ts';
import { startServer } from './server-process.ts';
import type { StartupResult } from './startup.ts';

// Each section loads its module (and the tools it needs: Playwright, esbuild, pg, the built
// package) when it runs, so that `--only=overhead,claims,retry,startup` runs on a machine
// with only Node and the built package.
const notes: string[] = [];

const SECTIONS = ['overhead', 'claims', 'growth', 'browser', 'retry', 'startup', 'bundle', 'server'] as const;
type Section = (typeof SECTIONS)[number];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',') as Section[] | undefined;
const unknown = only?.filter((s) => !SECTIONS.includes(s));
if (unknown?.length) throw new Error(`unknown section(s) ${unknown.join(', ')}; known: ${SECTIONS.join(', ')}`);
const wanted = (s: Section) => !only || only.includes(s);

interface Target {
  /** What is checked, e.g. `≤ 1.10×`. */
  text: string;
  met: boolean;
}
interface Row {
  section: Section;
  measure: string;
  figure: string;
  detail: string;
  target?: Target;
}

const rows: Row[] = [];
const results: Record<string, unknown> = {};
const durations: Record<string, number> = {};
const failures: Record<string, string> = {};

const le = (value: number, limit: number, unit = '×'): Target => ({
  text: `≤ ${limit}${unit}`,
  met: value <= limit,
});

async function section(name: Section, fn: () => Promise<void>) {
  if (!wanted(name)) return;
  const start = performance.now();
  process.stderr.write(`bench: ${name}…`);
  try {
    await fn();
  } catch (error) {
    failures[name] = (error as Error).stack ?? String(error);
    rows.push({ section: name, measure: `${name}: not measured`, figure: 'error', detail: (error as Error).message });
  }
  durations[name] = Math.round(performance.now() - start);
  process.stderr.write(` ${(durations[name] / 1000).toFixed(0)} s\n`);
}

const load = () => os.loadavg().map((l) => Math.round(l * 100) / 100);
const loadAtStart = load();
const started = performance.now();
const server = await startServer();

try {
  await section('overhead', async () => {
    const { measureOverhead, overheadRows } = await import('./http-overhead.ts');
    const modes: OverheadMode[] = await measureOverhead(server, {
      rounds: quick ? 3 : 5,
      requests: quick ? 500 : 2000,
      blocks: 4,
      concurrency: 64,
    });
    results.overhead = modes;
    // Issue 30's goals: `intent()`+`post()` pays two strict writes, `send()` one.
    const targets = [
      [
        le(modes[0]!.ratio.memory.median, 1.15),
        le(modes[0]!.ratio.disk.median, 2.5),
        le(modes[0]!.ratio.send.median, 2),
      ],
      [
        le(modes[1]!.ratio.memory.median, 1.15),
        le(modes[1]!.ratio.disk.median, 1.1),
        le(modes[1]!.ratio.send.median, 1.1),
      ],
    ];
    overheadRows(modes).forEach(([measure, figure, detail], i) => {
      rows.push({
        section: 'overhead',
        measure: measure!,
        figure: figure!,
        detail: detail!,
        target: targets.flat()[i],
      });
    });
  });

  await section('claims', async () => {
    const { claimsRows, measureClaims } = await import('./durable-claims.ts');
    const claims: ClaimsResult = await measureClaims({ seconds: quick ? 1 : 1.5, rounds: quick ? 3 : 5 });
    results.claims = claims;
    const targets: Target[] = [
      { text: '≥ 100 %', met: claims.sequential.median >= 1 },
      { text: '≥ 50 %', met: claims.concurrent.median >= 0.5 },
      { text: '≤ 1 ms / ≤ 10 ms', met: claims.block.p99Ms <= 1 && claims.block.maxMs <= 10 },
    ];
    claimsRows(claims).forEach(([measure, figure, detail], i) => {
      rows.push({ section: 'claims', measure: measure!, figure: figure!, detail: detail!, target: targets[i] });
    });
  });

  await section('growth', async () => {
    const { growthRows, measureGrowth } = await import('./growth.ts');
    const growth: GrowthResult = await measureGrowth({
      sizes: quick ? [1000, 10_000] : [1000, 10_000, 100_000, 1_000_000],
      claims: quick ? 100 : 300,
      sweepAt: quick ? [10_000] : [10_000, 1_000_000],
    });
    results.growth = growth;
    const last = growth.points.at(-1)!;
    const targets: Record<string, Target> = {
      'claim latency, memory': le(growth.claimGrowth.memory, 1.2),
      'claim latency, disk': le(growth.claimGrowth.disk, 1.2),
      // Opening reads no record: the process does not grow with the store.
      'open a disk store': {
        text: 'RSS +≤ 5 MB at open',
        met: last.disk.rssAfterOpenMb - last.disk.baseRssMb <= 5,
      },
    };
    for (const [measure, figure, detail] of growthRows(growth)) {
      const target = Object.entries(targets).find(([prefix]) => measure!.startsWith(prefix))?.[1];
      rows.push({ section: 'growth', measure: measure!, figure: figure!, detail: detail!, target });
    }
  });

  await section('browser', async () => {
    // Issues 13 and 32 §5: the median over 200 real clicks, against TanStack's useMutation + fetch as the floor.
    const { browserRows, measureBrowser } = await import('./browser.ts');
    const browser: BrowserResult = await measureBrowser({
      claims: 500,
      clicks: quick ? 40 : 200,
      firstClicks: quick ? 5 : 20,
    });
    results.browser = browser;
    const targets: (Target | undefined)[] = [
      undefined,
      undefined,
      le(browser.click.handlerToFetch.medianMs, 0.5, ' ms'),
      undefined,
      undefined,
    ];
    browserRows(browser).forEach(([measure, figure, detail], i) => {
      rows.push({ section: 'browser', measure: measure!, figure: figure!, detail: detail!, target: targets[i] });
    });
  });

  await section('retry', async () => {
    const { measureRetryCpu, retryCpuRows } = await import('./retry-cpu.ts');
    const retry: RetryCpuResult = await measureRetryCpu(server, {
      rounds: quick ? 3 : 5,
      calls: quick ? 50 : 100,
      attempts: 10,
    });
    results.retry = retry;
    for (const [measure, figure, detail] of retryCpuRows(retry))
      rows.push({
        section: 'retry',
        measure: measure!,
        figure: figure!,
        detail: detail!,
        target: le(retry.ratio.median, 1.15),
      });
  });

  await section('startup', async () => {
    const { measureStartup, startupRows } = await import('./startup.ts');
    const startup: StartupResult = await measureStartup({ rounds: quick ? 3 : 5, samples: quick ? 5 : 9 });
    results.startup = startup;
    for (const [measure, figure, detail] of startupRows(startup))
      rows.push({
        section: 'startup',
        measure: measure!,
        figure: figure!,
        detail: detail!,
        target: le(startup.ratio.median, 1.3),
      });
  });

  await section('bundle', async () => {
    const { bundleRows, measureBundle } = await import('./bundle.ts');
    const bundle = await measureBundle();
    results.bundle = bundle;
    const { budget } = bundle;
    const targets: (Target | undefined)[] = [
      le(budget.checkout.total.gzip / 1024, budget.target.checkout.total / 1024, ' KB'),
      le(budget.checkout.own.gzip / 1024, budget.target.checkout.own / 1024, ' KB'),
      le(budget.everything.total.gzip / 1024, budget.target.everything.total / 1024, ' KB'),
    ];
    bundleRows(bundle).forEach(([measure, figure, detail], i) => {
      rows.push({ section: 'bundle', measure, figure, detail, target: targets[i] });
    });
    rows.push({
      section: 'bundle',
      measure: 'the checkout holds no run()/intentFetch(), other profile, mock, OTel, CLI or Node code',
      figure: budget.failures.some((f) => f.startsWith('the checkout')) ? 'no' : 'yes',
      detail: 'metafile inputs and marker strings, with a control bundle that imports each',
    });
  });

  await section('server', async () => {
    const { measureServer, serverRows } = await import('./server.ts');
    const result: ServerResult = await measureServer({
      rounds: quick ? 3 : 5,
      sequential: quick ? 100 : 150,
      concurrent: quick ? 500 : 800,
    });
    results.server = result;
    const targets: (Target | undefined)[] = [
      le(result.c1.oncelyVsHand.median, 1.2),
      le(result.c64.oncelyVsHand.median, 1.1),
      le(result.c1.replayVsBare.median, 1),
    ];
    serverRows(result).forEach(([measure, figure, detail], i) => {
      rows.push({ section: 'server', measure, figure, detail, target: targets[i] });
    });
  });
} finally {
  await server.close();
}

const totalMs = Math.round(performance.now() - started);
printTable(rows);
const loaded = await import('./oncely.ts').then((m) => m.notes).catch(() => [] as string[]);
notes.push(...loaded);
for (const note of notes) console.log(`note: ${note}`);
for (const [name, stack] of Object.entries(failures)) console.log(`section ${name} failed:\n${stack}`);
console.log(
  `bench: ${(totalMs / 1000).toFixed(0)} s on ${os.cpus().length} CPUs, Node ${process.versions.node}; load average ${loadAtStart.join(' ')} at start, ${load().join(' ')} at end (a load above ${os.cpus().length} means other work competed)`,
);

const out = path.join(import.meta.dirname, 'results.json');
await writeFile(
  out,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      quick,
      sections: only ?? SECTIONS,
      environment: {
        node: process.versions.node,
        platform: `${os.platform()} ${os.release()}`,
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        loadAverage: { start: loadAtStart, end: load() },
      },
      durationsMs: { ...durations, total: totalMs },
      table: rows,
      results,
      failures,
      notes,
    },
    null,
    2,
  )}\n`,
);
console.log(`bench: wrote ${path.relative(process.cwd(), out)}`);

function printTable(table: Row[]) {
  const cells = table.map((r) => [
    r.measure,
    r.figure,
    r.target ? `${r.target.met ? 'met   ' : 'MISSED'} ${r.target.text}` : '',
    r.detail,
  ]);
  const header = ['measure', 'figure: median (range)', 'target', 'detail'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  widths[3] = Math.min(widths[3]!, 70);
  const line = (c: string[]) => c.map((x, i) => (i === 3 ? x : x.padEnd(widths[i]!))).join('  ');
  console.log();
  console.log(line(header));
  console.log(widths.map((w) => '─'.repeat(w)).join('  '));
  let current: Section | undefined;
  table.forEach((r, i) => {
    if (current !== undefined && r.section !== current) console.log();
    current = r.section;
    console.log(line(cells[i]!));
  });
  console.log();
}
