import { intentId } from '../store/record-rules.js';
import type { IntentRecord } from '../store/store.js';
import { KeyedQueue } from './keyed-queue.js';

/**
 * Coordinates clients that share a store (tabs of one origin, processes of one
 * machine): one attempt in flight per intent, and outcomes told to the others.
 * The browser implementation uses Web Locks and BroadcastChannel.
 */
export interface IntentCoordinator {
  /**
   * Runs `fn` while holding the lock for (scope, name); others wait their turn. A
   * coordinator that can tell passes the {@link LockSection} it runs in.
   */
  exclusive<T>(
    scope: string,
    name: string,
    fn: (section?: LockSection) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T>;
  /**
   * Keeps the lock of (scope, name) between sections, so that the next `exclusive` starts
   * at once instead of waiting for the lock (Web Locks: a click's request leaves in the
   * same frame). The lock goes to any other client that asks, as soon as no section runs
   * here. `onHeld` runs as the first section each time the lock is (re)gained. Returns
   * the function that lets the lock go.
   */
  hold?(scope: string, name: string, onHeld: (section: LockSection) => Promise<void>): () => void;
  /**
   * Runs `fn` as a section now, in this call, when the lock of (scope, name) is kept here
   * ({@link hold}) and no section runs or waits; else runs nothing and returns `undefined`
   * (then `exclusive`). A click's call then reaches its request with nothing to wait for.
   */
  runHeld?<T>(scope: string, name: string, fn: (section: LockSection) => Promise<T>): Promise<T> | undefined;
  /**
   * Notes synchronously, where a reload finds it (localStorage), that `record` is sent
   * before its `in_flight` write lands (a call started under a kept lock). Returns the
   * function that drops the note once a write of the call has landed, or `undefined` when
   * no note could be made: the call then takes the strict path.
   */
  noteSent?(record: IntentRecord): (() => void) | undefined;
  /** The note of a page that went away before its `in_flight` write landed, with its drop. */
  sentNote?(scope: string, name: string): { record: IntentRecord; drop: () => void } | undefined;
  /** Drops every note of `scope` (`client.clear()`, on logout). */
  clearNotes?(scope: string): void;
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

/** What a section run under an intent's lock learns from the coordinator. */
export interface LockSection {
  /** This section's number, unique in the process. */
  readonly id: number;
  /**
   * The section that ended just before this one while this client kept the lock: no
   * client that takes the lock can have sent or moved the intent since it ended.
   * `undefined` when the lock was (re)gained for this section.
   */
  readonly after: number | undefined;
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

  /** Runs `fn` after the intent's earlier sections; `signal` ends the wait (not a section that started). */
  exclusive<T>(scope: string, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const id = intentId(scope, name);
    if (!signal) return this.#queue.run(id, () => fn());
    if (signal.aborted) return Promise.reject(signal.reason);
    let granted = false;
    const run = this.#queue.run(id, () => {
      if (signal.aborted) return Promise.reject(signal.reason);
      granted = true;
      return fn();
    });
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        if (!granted) reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  publish(): void {}

  subscribe(): () => void {
    return () => {};
  }
}
