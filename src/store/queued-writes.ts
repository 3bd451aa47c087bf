/**
 * The outcome writes that calls have handed to the store without waiting for them (a call
 * resolves once its outcome write is queued: docs/engine.md, "the outcome write"), by
 * intent. Every client of one coordinator (one store in one process) shares one, so a read
 * through any of them after a call sees its outcome: what reads or writes an intent first
 * waits for {@link QueuedWrites.landed}.
 */
export class QueuedWrites {
  readonly #byId = new Map<string, Promise<void>>();

  /**
   * Starts `write` after the intent's earlier queued write, if any. `write` reports its
   * own failure (an event): what it rejects with is dropped here.
   */
  queue(id: string, write: () => Promise<void>): void {
    const before = this.#byId.get(id);
    this.track(id, before ? before.then(write) : write());
  }

  /** Counts `write` (already started) among the writes of intent `id` that a read waits for. */
  track(id: string, write: Promise<unknown>): void {
    const before = this.#byId.get(id);
    const entry: Promise<void> = Promise.all([before, write.catch(() => undefined)]).then(() => {
      if (this.#byId.get(id) === entry) this.#byId.delete(id);
    });
    this.#byId.set(id, entry);
  }

  /**
   * Settles once the queued write of intent `id` (of every intent, without `id`) has landed
   * or failed; `undefined` when none is queued, so that the common path awaits nothing.
   */
  landed(id?: string): Promise<void> | undefined {
    if (this.#byId.size === 0) return undefined;
    if (id !== undefined) return this.#byId.get(id);
    return Promise.all(this.#byId.values()).then(() => undefined);
  }
}

const shared = new WeakMap<object, QueuedWrites>();

/** The queue of the clients that share `coordinator` (they share a store and a process). */
export function queuedWritesFor(coordinator: object): QueuedWrites {
  let writes = shared.get(coordinator);
  if (!writes) {
    writes = new QueuedWrites();
    shared.set(coordinator, writes);
  }
  return writes;
}
