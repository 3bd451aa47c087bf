import type { IntentRecord } from '../store/store.js';
import { KeyedQueue } from './keyed-queue.js';

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
  readonly #queue = new KeyedQueue();

  exclusive<T>(scope: string, name: string, fn: () => Promise<T>): Promise<T> {
    return this.#queue.run(JSON.stringify([scope, name]), fn);
  }

  publish(): void {}

  subscribe(): () => void {
    return () => {};
  }
}
