/**
 * How long one SqliteStore commit holds the event loop, with 4 processes writing to the
 * same database file at once (each: 16 loops claiming a fresh intent, then updating it
 * twice; strict writes, fsync on). Every commit's synchronous time is read from the
 * `oncely:sqlite:commit` diagnostics channel, as wall time and as the thread's CPU time
 * (on a loaded machine the wall time also counts the time the OS ran other work). A lock held by another process is waited
 * for from a timer, so it shows as throughput, not as a block.
 *
 *   node bench/sqlite-block.ts [seconds = 3] [processes = 4]
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  subscribe('oncely:sqlite:commit', (message) => {
    const { ms, cpuMs } = message as { ms: number; cpuMs: number };
    commits.push(ms);
    cpu.push(cpuMs);
  });
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
  await store.close();
  process.stdout.write(`${JSON.stringify({ commits, cpu, writes })}\n`);
} else {
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
        JSON.parse(stdout.trim().split('\n').pop()!) as { commits: number[]; cpu: number[]; writes: number },
    );
    const all = runs.flatMap((run) => run.commits).sort((a, b) => a - b);
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
    };
    console.log(
      `${processes} processes, ${seconds}s: ${all.length} commits, ${Math.round(result.writesPerSecond)} writes/s; ` +
        `block per commit p50 ${result.p50Ms.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(3)} ms, max ${result.maxMs.toFixed(2)} ms ` +
        `(CPU time of the thread: p50 ${result.cpuP50Ms.toFixed(3)}, p99 ${result.cpuP99Ms.toFixed(3)}, max ${result.cpuMaxMs.toFixed(2)} ms)`,
    );
    console.log(JSON.stringify(result));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
