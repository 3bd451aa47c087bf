/**
 * Checkpoints of a SqliteStore's WAL, off the event loop. A checkpoint copies the WAL
 * into the database file and syncs both: done by SQLite inside a commit (auto-checkpoint)
 * it would hold the event loop for two flushes. Instead a worker thread with its own
 * connection runs `PRAGMA wal_checkpoint(PASSIVE)` every so often (it never waits for a
 * lock: a busy checkpoint is skipped until the next tick).
 */
import { Worker } from 'node:worker_threads';
import { loadSqlite } from './sqlite-driver.js';

/** How often the worker checkpoints (ms). */
const INTERVAL_MS = 200;

// Plain JavaScript run with `eval`: no module of ours to resolve from the worker (sources or dist alike).
// `process.getBuiltinModule`, not `require`: eval code is an ES module under `--input-type=module`.
const WORKER = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const sqlite = (${loadSqlite.toString()})();
const Database = sqlite.Database ?? sqlite.DatabaseSync;
const db = new Database(workerData.file);
db.exec('PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try { checkpoint.get(); } catch {}
}, workerData.interval);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export class WalCheckpointer {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #online = false;

  constructor(file: string) {
    this.#worker = new Worker(WORKER, { eval: true, workerData: { file, interval: INTERVAL_MS } });
    this.#worker.once('online', () => {
      this.#online = true;
    });
    // A process may end while the store is open: the worker must not keep it alive.
    this.#worker.unref();
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.on('error', () => undefined);
  }

  /** Stops the worker; the store's own connection checkpoints what is left when it closes. */
  async stop(): Promise<void> {
    // Not started yet: it has no connection to close.
    if (!this.#online) return void (await this.#worker.terminate());
    this.#worker.ref();
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}
