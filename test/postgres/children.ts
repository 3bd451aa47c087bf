/** Spawns and tracks child processes that print lines, killed after each test. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repo, so that the external `pg` resolves from node_modules.
const script = path.join(repo, '.tmp', `pg-child-${process.pid}.mjs`);
beforeAll(async () => {
  await mkdir(path.dirname(script), { recursive: true });
  await build({
    entryPoints: [fileURLToPath(new URL('./child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: script,
    external: ['pg'],
    logLevel: 'warning',
  });
});
afterAll(() => rm(script, { force: true }));

export interface Child {
  proc: ChildProcessWithoutNullStreams;
  lines: string[];
  /** Resolves once a printed line satisfies `test` (rejects if the child exits first). */
  waitFor(test: (line: string) => boolean): Promise<string>;
  exited: Promise<void>;
}

const running = new Set<Child>();
afterEach(async () => {
  for (const child of running) child.proc.kill('SIGKILL');
  await Promise.all([...running].map((child) => child.exited));
  running.clear();
});

export function startChild(args: string[]): Child {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  let partial = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.test(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const child: Child = {
    proc,
    lines,
    exited,
    waitFor: (test) =>
      new Promise<string>((resolve, reject) => {
        const seen = lines.find(test);
        if (seen !== undefined) return resolve(seen);
        waiters.push({ test, resolve });
        void exited.then(() => reject(new Error(`child exited first (code ${proc.exitCode}): ${stderr}`)));
      }),
  };
  running.add(child);
  void exited.then(() => running.delete(child));
  return child;
}
