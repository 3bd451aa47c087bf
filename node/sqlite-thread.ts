/**
 * The main thread's side of a SqliteStore's database thread (`sqlite-worker.ts`): calls
 * go out as messages (those of one turn in one message) and come back as promises. The
 * thread is not trusted to answer: one that exits fails its pending calls with a
 * `StoreError` and the next call starts a new one; one that stays silent while calls are
 * pending (a stuck disk) is given up after `stallTimeout`, its calls failed, so that no
 * promise waits forever. The thread keeps the process alive only while calls are pending.
 */
import { Worker } from 'node:worker_threads';
import { StoreError } from '../src/errors.js';
import type { StoreEvent } from '../src/store/store.js';
import { commitChannel, threadCpuMs } from './commit-queue.js';
import {
  type Calls,
  decodeResults,
  encodeCall,
  type FromWorker,
  fromWire,
  type Op,
  type ToWorker,
  type WorkerConfig,
} from './sqlite-wire.js';

/** @internal Tests only: a SharedArrayBuffer of 2 or 3 Int32 the threads read (see `WorkerConfig.hooks`). */
export const testHooks: unique symbol = Symbol('oncely.sqlite.testHooks');
/** @internal Tests only: how long (ms) a thread may stay silent with calls pending. */
export const stallTimeout: unique symbol = Symbol('oncely.sqlite.stallTimeout');

/** Calls pending at most: past it the thread is not keeping up (or stuck) and new calls fail at once. */
const MAX_PENDING = 100_000;
/** Real timers and clock, taken at load: fake timers installed later by tests must not give up on the thread early. */
const io = {
  setInterval: globalThis.setInterval.bind(globalThis),
  clearInterval: globalThis.clearInterval.bind(globalThis),
  setTimeout: globalThis.setTimeout.bind(globalThis),
  clearTimeout: globalThis.clearTimeout.bind(globalThis),
  setImmediate: globalThis.setImmediate.bind(globalThis),
  now: performance.now.bind(performance),
};
const STALL_MS = 30_000;
const CHECK_MS = 1_000;

// From the TypeScript sources (tests, the bench) the worker runs its `.ts` file, and its
// `./x.js` imports resolve to `./x.ts` as in scripts/ts-resolve.ts; from dist/, the `.js`
// next to this module. (Not `new URL('./…', import.meta.url)`: Vite rewrites that pattern.)
function workerScript(): { script: string | URL; eval: boolean } {
  const here = import.meta.url as string | undefined;
  if (!here)
    throw new StoreError(
      "oncely's SQLite worker file cannot be found: this module has no import.meta.url (a CommonJS bundle?). Leave oncely external to the bundle.",
    );
  const entry = new URL(`sqlite-worker.${here.endsWith('.ts') ? 'ts' : 'js'}`, here);
  if (!here.endsWith('.ts')) return { script: entry, eval: false };
  // `process.getBuiltinModule`, not `require`: eval code is an ES module under `--input-type=module`.
  const boot = `
const { registerHooks } = process.getBuiltinModule('node:module');
registerHooks({
  resolve(specifier, context, next) {
    try { return next(specifier, context); } catch (error) {
      if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw error;
      return next(specifier.slice(0, -3) + '.ts', context);
    }
  },
});
import(${JSON.stringify(entry.href)});
`;
  return { script: boot, eval: true };
}

/**
 * Call ids, unique in the process: a thread kept from a closed store may still answer one
 * of its calls late, and that answer must match no call of the store it serves next.
 */
let nextId = 1;

/**
 * One thread kept from a closed store for the next store that starts one: a thread costs
 * tens of ms to start (hundreds on a loaded machine).
 */
let spare: Worker | undefined;

function keepSpare(worker: Worker): void {
  spare = worker;
  worker.once('exit', () => {
    if (spare === worker) spare = undefined;
  });
}

interface Pending {
  op: Op;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SqliteThread {
  readonly #config: WorkerConfig;
  readonly #emit: (event: StoreEvent) => void;
  readonly #stallMs: number;
  #worker: Worker | undefined;
  #pending = new Map<number, Pending>();
  /** Calls not sent yet, flat (`encodeCall`). */
  #outbox: unknown[] = [];
  /**
   * When the outbox goes: `soon`, once this turn's promise jobs have run; `later`, after the
   * loop's I/O (it holds relaxed writes only, which the next call of this turn takes along).
   */
  #due: 'none' | 'soon' | 'later' = 'none';
  #heard = 0;
  /** When the watchdog last ran: a tick far later than CHECK_MS means this thread's own loop was held. */
  #checked = 0;
  #watchdog: ReturnType<typeof setInterval> | undefined;
  /** Main-thread time spent sending since the last answer (ms), for `oncely:sqlite:commit`. */
  #sendMs = 0;

  constructor(config: WorkerConfig, emit: (event: StoreEvent) => void, stallMs = STALL_MS) {
    this.#config = config;
    this.#emit = emit;
    this.#stallMs = stallMs;
  }

  /**
   * `lazy`: a relaxed write, which nothing waits on to send a byte: it goes with the next
   * call made before the loop turns (a sequential caller's next claim), in one message and
   * one commit, whose sync syncs it too; alone, after the loop's I/O, if none comes.
   */
  call<K extends Op>(op: K, args: Calls[K][0], lazy = false): Promise<Calls[K][1]> {
    const started = commitChannel.hasSubscribers ? performance.now() : 0;
    if (this.#pending.size >= MAX_PENDING) {
      return Promise.reject(
        new StoreError(
          `oncely's database thread has ${MAX_PENDING} calls pending (a stuck disk?); nothing was written.`,
        ),
      );
    }
    let worker: Worker;
    try {
      worker = this.#worker ?? this.#start();
    } catch (error) {
      // The runtime refuses a thread (the permission model, out of memory or threads): nothing was sent.
      return Promise.reject(
        new StoreError(
          `oncely could not start the database thread for ${this.#config.file}: ${(error as Error)?.message ?? String(error)}. Nothing was written.`,
          { cause: error },
        ),
      );
    }
    const promise = new Promise<Calls[K][1]>((resolve, reject) => {
      const id = nextId++;
      this.#pending.set(id, { op, resolve: resolve as (value: unknown) => void, reject });
      if (this.#pending.size === 1) {
        // Pending calls keep the process alive, as a socket waiting for its answer would.
        worker.ref();
        this.#heard = io.now();
        // Kept between calls (a sequential caller's every call would start and stop one); it stops itself once idle.
        if (!this.#watchdog) {
          this.#checked = this.#heard;
          this.#watchdog = io.setInterval(() => this.#check(), CHECK_MS).unref();
        }
      }
      encodeCall(this.#outbox, id, op, args);
      if (!lazy && this.#due !== 'soon') {
        this.#due = 'soon';
        queueMicrotask(() => this.#send());
      } else if (lazy && this.#due === 'none') {
        this.#due = 'later';
        io.setImmediate(() => this.#send());
      }
    });
    if (started) this.#sendMs += performance.now() - started;
    return promise;
  }

  /**
   * Lets pending calls finish and closes the database; past `within` ms the thread is
   * terminated and they fail. A thread that closed cleanly is kept for the next store.
   */
  async close(within: number): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#send();
    worker.ref();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await new Promise<'closed' | 'exited' | 'late'>((resolve) => {
      worker.on('message', (message: FromWorker) => message.type === 'closed' && resolve('closed'));
      worker.once('exit', () => resolve('exited'));
      timer = io.setTimeout(() => resolve('late'), within);
      worker.postMessage({ type: 'close' } satisfies ToWorker);
    });
    io.clearTimeout(timer);
    if (outcome === 'late') return this.#abandon(`did not close within ${within} ms (a stuck disk?)`);
    if (outcome === 'exited') return;
    this.#lost(worker, 'was closed');
    worker.removeAllListeners('message');
    worker.removeAllListeners('exit');
    worker.unref();
    if (spare) void worker.terminate().catch(() => undefined);
    else keepSpare(worker);
  }

  #start(): Worker {
    let worker = spare;
    spare = undefined;
    if (worker) {
      worker.removeAllListeners('exit');
      worker.postMessage({ type: 'open', config: this.#config } satisfies ToWorker);
    } else {
      const { script, eval: evaluated } = workerScript();
      worker = new Worker(script, { eval: evaluated, workerData: this.#config });
      // 'error' is followed by 'exit', where pending calls fail; a parked thread has no other listener.
      worker.on('error', () => undefined);
    }
    const started = worker;
    this.#worker = started;
    started.unref();
    started.on('message', (message: FromWorker) => this.#receive(started, message));
    started.on('exit', (code) => this.#lost(started, `stopped (exit code ${code})`));
    return started;
  }

  #send(): void {
    this.#due = 'none';
    if (this.#outbox.length === 0 || !this.#worker) return;
    const calls = this.#outbox;
    this.#outbox = [];
    this.#worker.postMessage({ type: 'calls', calls, timed: commitChannel.hasSubscribers } satisfies ToWorker);
  }

  #receive(worker: Worker, message: FromWorker): void {
    if (worker !== this.#worker) return;
    this.#heard = io.now();
    if (message.type !== 'results') return;
    const timed = commitChannel.hasSubscribers;
    const started = timed ? performance.now() : 0;
    const cpu = timed ? threadCpuMs() : 0;
    for (const event of message.events) this.#emit(event);
    let answered = 0;
    decodeResults(message.results, (id, result) => {
      answered++;
      const pending = this.#pending.get(id);
      if (!pending) return;
      this.#pending.delete(id);
      if ('error' in result) pending.reject(fromWire(result.error));
      else pending.resolve(result.value);
    });
    if (this.#pending.size === 0) this.#idle(worker);
    if (timed) {
      // The main thread's side of these answers: what the event loop was held for.
      commitChannel.publish({
        ms: performance.now() - started + this.#sendMs,
        cpuMs: threadCpuMs() - cpu,
        writes: answered,
        thread: 'main',
        worker: message.commits,
        syncs: message.syncs,
      });
      this.#sendMs = 0;
    }
  }

  #idle(worker: Worker): void {
    worker.unref();
  }

  #check(): void {
    if (this.#pending.size === 0) {
      io.clearInterval(this.#watchdog);
      this.#watchdog = undefined;
      return;
    }
    const now = io.now();
    // This thread's loop was held (the process suspended, a long synchronous job): the
    // database thread's answers may be waiting in the queue, read after the timers. Its
    // silence is counted from now, when they can be heard.
    const held = now - this.#checked > 2 * CHECK_MS;
    this.#checked = now;
    if (held) {
      this.#heard = Math.max(this.#heard, now);
      return;
    }
    if (this.#pending.size > 0 && now - this.#heard > this.#stallMs) {
      this.#abandon(`has not answered for ${Math.round(this.#stallMs / 1000)} s (a stuck disk?)`);
    }
  }

  /** The thread is given up: its calls fail, and it is terminated without waiting for it. */
  #abandon(what: string): void {
    const worker = this.#worker;
    if (!worker) return;
    this.#lost(worker, what);
    worker.unref();
    void worker.terminate().catch(() => undefined);
  }

  #lost(worker: Worker, what: string): void {
    if (worker !== this.#worker) return;
    this.#worker = undefined;
    this.#outbox = [];
    this.#idle(worker);
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const { op, reject } of pending) {
      reject(
        new StoreError(
          `oncely's database thread for ${this.#config.file} ${what} before it answered (${op}): ` +
            'the write may or may not have been committed. Retry the call; the next one starts a new thread.',
        ),
      );
    }
  }
}
