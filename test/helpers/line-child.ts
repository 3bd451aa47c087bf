/**
 * A Node child process whose stdout is read as lines: wait for a line (rejected, with the
 * child's stderr, if it exits first), SIGKILL it; and a set of them to kill after each test.
 */
import { type ChildProcessWithoutNullStreams, type SpawnOptionsWithoutStdio, spawn } from 'node:child_process';

export interface LineChild {
  proc: ChildProcessWithoutNullStreams;
  /** stdout's complete lines so far. */
  lines: string[];
  /** The first line, printed or to come, that starts with `match` (a string) or satisfies it. */
  waitFor(match: string | ((line: string) => boolean)): Promise<string>;
  /** Resolves once the child has exited and its pipes are closed. */
  exited: Promise<void>;
  /** SIGKILLs the child and waits for it. */
  kill(): Promise<void>;
  /** How it ended and what it printed, for a failure's message. */
  describe(): string;
}

/** Runs `node script ...args`. */
export function spawnLineChild(script: string, args: string[], options: SpawnOptionsWithoutStdio = {}): LineChild {
  const proc = spawn(process.execPath, [script, ...args], options);
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
  return {
    proc,
    lines,
    exited,
    waitFor: (match) =>
      new Promise<string>((resolve, reject) => {
        const test = typeof match === 'string' ? (line: string) => line.startsWith(match) : match;
        const seen = lines.find(test);
        if (seen !== undefined) return resolve(seen);
        waiters.push({ test, resolve });
        const what = typeof match === 'string' ? `"${match}"` : 'the line waited for';
        void exited.then(() => reject(new Error(`child exited (code ${proc.exitCode}) before ${what}: ${stderr}`)));
      }),
    kill: async () => {
      proc.kill('SIGKILL');
      await exited;
    },
    describe: () =>
      `exit ${proc.exitCode ?? proc.signalCode ?? 'pending'}; stdout: ${JSON.stringify(lines.slice(0, 6))}; stderr: ${stderr.slice(-2000) || '(none)'}`,
  };
}

/** The children started through it; `killAll()` (after each test) SIGKILLs those still running. */
export class LineChildren {
  readonly #running = new Set<LineChild>();

  start(script: string, args: string[]): LineChild {
    const child = spawnLineChild(script, args);
    this.#running.add(child);
    void child.exited.then(() => this.#running.delete(child));
    return child;
  }

  async killAll(): Promise<void> {
    for (const child of this.#running) child.proc.kill('SIGKILL');
    await Promise.all([...this.#running].map((child) => child.exited));
    this.#running.clear();
  }
}
