/**
 * `PRAGMA integrity_check` of a SqliteStore's file, on a thread of its own with a read-only
 * connection of its own. The check reads the whole file (minutes for a large one): run on
 * the database thread it would hold every other call of the store, and that thread's
 * silence past the stall bound would be taken for a stuck disk.
 */
import { Worker } from 'node:worker_threads';
import { StoreError } from '../src/errors.js';
import { loadSqlite } from './sqlite-driver.js';

// Plain JavaScript run with `eval`, as the WAL checkpointer: no module of ours to resolve.
const WORKER = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const sqlite = (${loadSqlite.toString()})();
const Database = sqlite.Database ?? sqlite.DatabaseSync;
const hooks = workerData.hooks && workerData.hooks.byteLength >= 12 ? new Int32Array(workerData.hooks) : undefined;
while (hooks && Atomics.load(hooks, 2) === 1) Atomics.wait(hooks, 2, 1);
try {
  const db = new Database(workerData.file, { readOnly: true, timeout: workerData.lockTimeout });
  const rows = db.prepare('PRAGMA integrity_check').all().map((row) => String(Object.values(row)[0]));
  db.close();
  parentPort.postMessage({ rows });
} catch (error) {
  parentPort.postMessage({ error: String(error && error.message || error) });
}
`;

/** The longest delay a Node timer takes as given. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface IntegrityCheckOptions {
  file: string;
  lockTimeout: number;
  /** Past it (ms, 0 or more; Infinity: never) the check is stopped and fails. */
  timeout: number;
  /** @internal tests only: [2] = 1 holds the check before it reads. */
  hooks?: SharedArrayBuffer;
}

/** A check under way: its rows, and a way to stop it (the store closes). */
export interface RunningCheck {
  result: Promise<string[]>;
  stop(): Promise<void>;
}

export function startIntegrityCheck({ file, lockTimeout, timeout, hooks }: IntegrityCheckOptions): RunningCheck {
  let worker: Worker;
  try {
    worker = new Worker(WORKER, { eval: true, workerData: { file, lockTimeout, hooks } });
  } catch (error) {
    // The runtime refuses a thread (the permission model, out of memory or threads).
    throw new StoreError(
      `oncely could not start a thread to check ${file}: ${(error as Error)?.message ?? String(error)}`,
      {
        cause: error,
      },
    );
  }
  let fail: (error: StoreError) => void = () => {};
  const result = new Promise<string[]>((resolve, reject) => {
    fail = reject;
    worker.once('message', (answer: { rows?: string[]; error?: string }) => {
      if (answer.rows) resolve(answer.rows);
      else reject(new StoreError(`oncely could not check ${file}: ${answer.error}`));
    });
    worker.once('error', (error) => reject(new StoreError(`oncely could not check ${file}: ${error.message}`)));
    worker.once('exit', () =>
      reject(new StoreError(`oncely's integrity check of ${file} stopped before it answered.`)),
    );
  });
  // Not waited for: a thread inside SQLite's native code (a long check, a stuck disk, a busy
  // wait on a lock) stops only once it gets back to JavaScript. Unreferenced, it does not
  // keep the process alive meanwhile.
  const end = (error: StoreError) => {
    fail(error);
    worker.unref();
    void worker.terminate().catch(() => undefined);
  };
  const stop = async () =>
    end(new StoreError(`oncely's integrity check of ${file} stopped before it answered: the store closed.`));
  // Past what a timer holds (Node would fire it after 1 ms), there is no bound to keep.
  const timer =
    timeout <= MAX_TIMER_MS
      ? setTimeout(() => {
          end(
            new StoreError(`oncely's integrity check of ${file} did not finish within ${timeout} ms; it was stopped.`),
          );
        }, timeout)
      : undefined;
  timer?.unref?.();
  void result.then(
    () => clearTimeout(timer),
    () => clearTimeout(timer),
  );
  return { result, stop };
}
