import { intentId } from '../store/record-rules.js';
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
  /**
   * True when `exclusive` already excludes every client of the store and frees the lock
   * of a client that died (Web Locks across the tabs of an origin). Otherwise (processes,
   * machines) the engine also waits on the lease an in-flight call keeps in the record.
   */
  readonly coversStore?: boolean;
  close?(): void;
}

const shared = new WeakMap<object, LocalCoordinator>();

/** The in-process coordinator of one store: clients sharing a store instance share it. */
export function coordinatorFor(store: object): LocalCoordinator {
  const coordinator = shared.get(store) ?? new LocalCoordinator();
  shared.set(store, coordinator);
  return coordinator;
}

/** A coordinator within one process: a promise chain per intent, nothing published. */
export class LocalCoordinator implements IntentCoordinator {
  readonly #queue = new KeyedQueue();

  exclusive<T>(scope: string, name: string, fn: () => Promise<T>): Promise<T> {
    return this.#queue.run(intentId(scope, name), fn);
  }

  publish(): void {}

  subscribe(): () => void {
    return () => {};
  }
}
