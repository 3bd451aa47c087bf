/**
 * How long one SqliteStore commit holds the event loop, with 4 processes writing to the
 * same database file at once (each: 16 loops claiming a fresh intent, then updating it
 * twice; strict writes, fsync on). The commit runs on the store's database thread; the
 * main thread's share of each commit (sending its calls, taking its answers) is read from
 * the `oncely:sqlite:commit` diagnostics channel, as wall time and as the thread's CPU
 * time (on a loaded machine the wall time also counts the time the OS ran other work).
 * The event loop's delay (`monitorEventLoopDelay`) is reported next to it, and the
 * database thread's own commit time. A lock held by another process is waited for from
 * a timer, so it shows as throughput, not as a block.
 *
 *   node bench/sqlite-block.ts [seconds = 3] [processes = 4]
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { promisify } from 'node:util';
import '../scripts/ts-resolve.ts';

type IntentRecord = import('../src/store/store.js').IntentRecord;
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

if (process.argv[2] === 'child') {
  const [dir, secondsText] = process.argv.slice(3);
  const { SqliteStore } = await import('../node/sqlite-store.js');
  const store = new SqliteStore({ dir: dir! });
  await store.open();
  const commits: number[] = [];
  const cpu: number[] = [];
  const worker: number[] = [];
  subscribe('oncely:sqlite:commit', (message) => {
    const m = message as { ms: number; cpuMs: number; worker?: { ms: number }[] };
    commits.push(m.ms);
    cpu.push(m.cpuMs);
    for (const c of m.worker ?? []) worker.push(c.ms);
  });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const end = performance.now() + Number(secondsText) * 1000;
  let writes = 0;
  const lane = async () => {
    while (performance.now() < end) {
      const now = Date.now();
      const name = randomUUID();
      const fresh: IntentRecord = {
        v: 1,
        scope: 'b',
        name,
        key: name,
        state: 'ready',
        attempts: 0,
        createdAt: now,
        updatedAt: now,
      };
      await store.claim(fresh);
      for (const state of ['in_flight', 'succeeded'] as const) {
        await store.update('b', name, (current) => current && { ...current, state, updatedAt: Date.now() });
      }
      writes += 3;
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
  delay.disable();
  await store.close();
  const loop = { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 };
  process.stdout.write(`${JSON.stringify({ commits, cpu, worker, loop, writes })}\n`);
} else {
  const message = await messageCost();
  const seconds = Number(process.argv[2] ?? 3);
  const processes = Number(process.argv[3] ?? 4);
  const dir = await mkdtemp(path.join(tmpdir(), 'oncely-bench-block-'));
  try {
    const script = import.meta.filename;
    const outputs = await Promise.all(
      Array.from({ length: processes }, () =>
        promisify(execFile)(process.execPath, [script, 'child', dir, String(seconds)], { maxBuffer: 64 << 20 }),
      ),
    );
    const runs = outputs.map(
      ({ stdout }) =>
        JSON.parse(stdout.trim().split('\n').pop()!) as {
          commits: number[];
          cpu: number[];
          worker: number[];
          loop: { p99: number; max: number };
          writes: number;
        },
    );
    const all = runs.flatMap((run) => run.commits).sort((a, b) => a - b);
    const worker = runs.flatMap((run) => run.worker).sort((a, b) => a - b);
    const cpu = runs.flatMap((run) => run.cpu).sort((a, b) => a - b);
    const writes = runs.reduce((sum, run) => sum + run.writes, 0);
    const result = {
      bench: 'sqlite-block',
      processes,
      seconds,
      commits: all.length,
      writesPerSecond: writes / seconds,
      p50Ms: quantile(all, 0.5),
      p99Ms: quantile(all, 0.99),
      maxMs: all.at(-1) ?? 0,
      cpuP50Ms: quantile(cpu, 0.5),
      cpuP99Ms: quantile(cpu, 0.99),
      cpuMaxMs: cpu.at(-1) ?? 0,
      loopDelayP99Ms: Math.max(...runs.map((run) => run.loop.p99)),
      loopDelayMaxMs: Math.max(...runs.map((run) => run.loop.max)),
      workerCommitP99Ms: quantile(worker, 0.99),
      ...message,
    };
    console.log(
      `${processes} processes, ${seconds}s: ${all.length} commits, ${Math.round(result.writesPerSecond)} writes/s; ` +
        `block per commit p50 ${result.p50Ms.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(3)} ms, max ${result.maxMs.toFixed(2)} ms ` +
        `(CPU time of the thread: p50 ${result.cpuP50Ms.toFixed(3)}, p99 ${result.cpuP99Ms.toFixed(3)}, max ${result.cpuMaxMs.toFixed(2)} ms); ` +
        `event-loop delay p99 ${result.loopDelayP99Ms.toFixed(2)} ms, max ${result.loopDelayMaxMs.toFixed(1)} ms; ` +
        `commit on the database thread p99 ${result.workerCommitP99Ms.toFixed(2)} ms`,
    );
    console.log(
      `message passing per call: store.get() ${result.getUs.toFixed(0)} µs (main-thread CPU ${result.getCpuUs.toFixed(0)} µs) ` +
        `vs a bare worker echo ${result.echoUs.toFixed(0)} µs`,
    );
    console.log(JSON.stringify(result));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * What a call costs in message passing: sequential `store.get()` of one row (a point read
 * on the database thread, no disk write) against a bare worker echo, in the same run.
 */
async function messageCost() {
  const { Worker } = await import('node:worker_threads');
  const { SqliteStore } = await import('../node/sqlite-store.js');
  const dir = await mkdtemp(path.join(tmpdir(), 'oncely-bench-msg-'));
  const store = new SqliteStore({ dir });
  const now = Date.now();
  await store.claim({
    v: 1,
    scope: 'b',
    name: 'n',
    key: 'k-bench-0123456789',
    state: 'ready',
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  });
  const echo = new Worker(
    'process.getBuiltinModule("node:worker_threads").parentPort.on("message", (m) => process.getBuiltinModule("node:worker_threads").parentPort.postMessage(m))',
    { eval: true },
  );
  const ping = () =>
    new Promise((resolve) => {
      echo.once('message', resolve);
      echo.postMessage({ op: 'read', args: { scope: 'b', name: 'n' } });
    });
  const N = 2000;
  for (let i = 0; i < 200; i++) {
    await store.get('b', 'n');
    await ping();
  }
  const t0 = performance.now();
  const cpu = process.threadCpuUsage();
  for (let i = 0; i < N; i++) await store.get('b', 'n');
  const used = process.threadCpuUsage(cpu);
  const t1 = performance.now();
  for (let i = 0; i < N; i++) await ping();
  const t2 = performance.now();
  await echo.terminate();
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return { getUs: ((t1 - t0) / N) * 1000, getCpuUs: (used.user + used.system) / N, echoUs: ((t2 - t1) / N) * 1000 };
}
