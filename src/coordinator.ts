import type { IntentRecord } from './store.js';

/**
 * Coordinates clients that share a store (tabs of one origin, processes of one
 * machine): one attempt in flight per intent, and outcomes told to the others.
 * The browser implementation uses Web Locks and BroadcastChannel.
 */
export interface IntentCoordinator {
  /** Runs `fn` while holding the lock for (scope, name); others wait their turn. */
  exclusive<T>(scope: string, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Tells the other clients that this intent's record changed. */
  publish(record: IntentRecord): void;
  /** Hears records published by other clients. Returns an unsubscribe function. */
  subscribe(listener: (record: IntentRecord) => void): () => void;
  close?(): void;
}

/** A coordinator for one client alone: a promise chain per intent, nothing published. */
export class LocalCoordinator implements IntentCoordinator {
  readonly #tails = new Map<string, Promise<unknown>>();

  async exclusive<T>(scope: string, name: string, fn: () => Promise<T>): Promise<T> {
    const id = JSON.stringify([scope, name]);
    const previous = this.#tails.get(id) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.#tails.set(id, tail);
    try {
      return await run;
    } finally {
      if (this.#tails.get(id) === tail) this.#tails.delete(id);
    }
  }

  publish(): void {}

  subscribe(): () => void {
    return () => {};
  }
}
