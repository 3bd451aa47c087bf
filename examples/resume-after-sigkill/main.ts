// A worker SIGKILLed with three transfers in flight, restarted over the same state
// directory: the new life lists `client.pending()`, re-issues each with the same key,
// finishes the rest, and every job ends with exactly one transfer.
//
//   npm run build && node examples/resume-after-sigkill/main.ts
//
// This process plays the app's supervisor: it owns the transfers API (./transfer-server.ts,
// an Express app on oncely/server over SqliteKeyStore), writes the job rows, starts
// ./worker.ts, kills it mid-flight and starts it again. Exits non-zero unless each job and
// each key has exactly one transfer, counted in the API's own table.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startTransferServer } from './transfer-server.ts';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'oncely-resume-example-'));
const stateDir = join(dir, 'oncely'); // ONCELY_STATE_DIR: where both lives keep their keys
const jobsFile = join(dir, 'jobs.json'); // the app's own rows: what to send, for every life

const jobs = Array.from({ length: 5 }, (_, i) => ({
  id: `job_${i + 1}`,
  to: `acct_${100 + i}`,
  amount: 1_000 * (i + 1),
}));
writeFileSync(jobsFile, JSON.stringify(jobs));

const server = await startTransferServer(dir);

interface Life {
  child: ChildProcess;
  lines: string[];
  exited: Promise<{ code: number | null; signal: string | null }>;
}

function startWorker(life: number): Life {
  const lines: string[] = [];
  const child = spawn(process.execPath, [WORKER, jobsFile, server.url], {
    env: { ...process.env, ONCELY_STATE_DIR: stateDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    console.log(`  [worker, life ${life}] ${line}`);
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, lines, exited };
}

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let running: ChildProcess | undefined;
try {
  console.log('life 1: the API holds every answer; the worker is killed with three transfers in flight');
  server.holding = true;
  const first = startWorker(1);
  running = first.child;
  await until('three held requests', () => server.held === 3);
  first.child.kill('SIGKILL');
  const death = await first.exited;
  assert.equal(death.signal, 'SIGKILL');
  const movedAtKill = (await server.transfers()).length;
  console.log(`  killed (SIGKILL): ${movedAtKill} of the 3 held transfers had been committed, no answer given\n`);

  console.log('life 2: a fresh worker over the same state directory');
  server.holding = false;
  const second = startWorker(2);
  running = second.child;
  let timer: NodeJS.Timeout | undefined;
  const { code } = await Promise.race([
    second.exited,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('life 2 took over 30 s')), 30_000);
    }),
  ]).finally(() => clearTimeout(timer));
  assert.equal(code, 0, 'life 2 finished every job');
  const listed = second.lines.find((line) => line.startsWith('pending after start:')) ?? '';
  assert.equal(listed.match(/\(in_flight\)/g)?.length, 3, 'life 2 found the three transfers in flight');

  console.log('\ntransfers per job (each must be 1), and the keys each job was sent with:');
  const transfers = await server.transfers();
  for (const job of jobs) {
    const count = transfers.filter((t) => t.job === job.id).length;
    const keys = new Set(server.requests.filter((r) => r.job === job.id).map((r) => r.key));
    console.log(`  ${job.id}: ${count} transfer, ${keys.size} key`);
    assert.equal(count, 1, `${job.id}: exactly one transfer`);
    assert.equal(keys.size, 1, `${job.id}: one key across both lives`);
  }
  assert.equal(transfers.length, jobs.length);
  // One effect per key: the transfers table against the keys that committed them.
  assert.equal(new Set(transfers.map((t) => t.key)).size, transfers.length, 'one transfer per key');
  const invariant = await server.invariant();
  console.log(
    `invariant (POST /transfers): ${invariant.effects} transfers, ${invariant.keys} keys, drift ${invariant.drift}`,
  );
  assert.deepEqual([invariant.effects, invariant.keys, invariant.drift], [jobs.length, jobs.length, 0]);
  console.log(`ok: ${jobs.length} jobs, ${transfers.length} transfers, ${server.requests.length} requests`);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
