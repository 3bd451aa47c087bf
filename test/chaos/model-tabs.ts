/**
 * Tabs for the chaos model that keep their intents' locks (`intent.hold()`), as the hook
 * does in browsers: the engine's kept-lock path (the `in_flight` write with the first
 * attempt, notes of sent intents) under the same random faults. The browser's Web Locks
 * and BroadcastChannel are replaced by an in-memory FIFO lock manager and direct calls,
 * so that runs stay deterministic in virtual time; `browser/lock-holds.ts` is the real one.
 */
import { LockHolds } from '../../browser/lock-holds.js';
import type { IntentCoordinator, LockSection } from '../../src/coordinator/coordinator.js';
import type { IntentRecord } from '../../src/index.js';
import { intentId } from '../../src/store/record-rules.js';

type Callback = (lock: unknown) => Promise<unknown>;

/** The `request` of a LockManager: exclusive, first come first served, abortable while waiting. */
class MemoryLocks {
  readonly #queues = new Map<string, (() => void)[]>();
  readonly #held = new Set<string>();

  request(name: string, a: LockOptions | Callback, b?: Callback): Promise<unknown> {
    const callback = (typeof a === 'function' ? a : b)!;
    const options = typeof a === 'function' ? {} : a;
    const signal = options.signal;
    if (options.ifAvailable && (this.#held.has(name) || this.#queues.get(name)?.length))
      return Promise.resolve().then(() => callback(null));
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        this.#held.add(name);
        Promise.resolve()
          .then(() => callback({ name }))
          .then(resolve, reject)
          .finally(() => this.#next(name));
      };
      const onAbort = () => {
        const queue = this.#queues.get(name) ?? [];
        const at = queue.indexOf(grant);
        if (at >= 0) queue.splice(at, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.#held.has(name)) this.#queues.set(name, [...(this.#queues.get(name) ?? []), grant]);
      else grant();
    });
  }

  async query(): Promise<LockManagerSnapshot> {
    const pending = [...this.#queues].flatMap(([name, queue]) =>
      queue.map(() => ({ name, mode: 'exclusive' as const })),
    );
    return { held: [...this.#held].map((name) => ({ name, mode: 'exclusive' as const })), pending };
  }

  #next(name: string): void {
    this.#held.delete(name);
    this.#queues.get(name)?.shift()?.();
  }
}

/** Every tab of one origin: the lock manager, the channel, localStorage. */
export class ModelOrigin {
  readonly locks = new MemoryLocks() as unknown as LockManager;
  readonly tabs = new Set<ModelTab>();
  readonly notes = new Map<string, IntentRecord>();
  /** Notes written: one per call sent under a kept lock. */
  noted = 0;
}

/** One tab's coordinator: Web Locks semantics (every client of the store takes them), kept locks. */
export class ModelTab implements IntentCoordinator {
  readonly coversStore = true;
  readonly #holds: LockHolds;

  constructor(private readonly origin: ModelOrigin) {
    origin.tabs.add(this);
    // Asks reach the holder at once here, so no retries or queue checks (timers without end in virtual time).
    this.#holds = new LockHolds(
      origin.locks,
      (lock) => {
        for (const tab of origin.tabs) if (tab !== this) tab.#holds.wanted(lock);
      },
      0,
    );
  }

  exclusive<T>(scope: string, name: string, fn: (section?: LockSection) => Promise<T>, signal?: AbortSignal) {
    return this.#holds.run(intentId(scope, name), fn, signal);
  }

  hold(scope: string, name: string, onHeld: (section: LockSection) => Promise<void>): () => void {
    return this.#holds.hold(intentId(scope, name), onHeld);
  }

  noteSent(record: IntentRecord): (() => void) | undefined {
    const id = intentId(record.scope, record.name);
    this.origin.noted++;
    this.origin.notes.set(id, { ...record });
    return () => {
      if (this.origin.notes.get(id)?.key === record.key) this.origin.notes.delete(id);
    };
  }

  sentNote(scope: string, name: string) {
    const id = intentId(scope, name);
    const record = this.origin.notes.get(id);
    return (
      record && {
        record: { ...record },
        drop: () => {
          if (this.origin.notes.get(id)?.key === record.key) this.origin.notes.delete(id);
        },
      }
    );
  }

  publish(): void {}

  subscribe(): () => void {
    return () => {};
  }

  /** The tab died: the browser frees its locks. */
  close(): void {
    this.origin.tabs.delete(this);
    this.#holds.close();
  }
}
