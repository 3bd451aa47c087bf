import { type IntentCoordinator, LocalCoordinator } from '../src/coordinator/coordinator.js';
import { intentId } from '../src/store/record-rules.js';
import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord } from '../src/store/store.js';

export interface WebLocksCoordinatorOptions {
  /**
   * Name of the BroadcastChannel the tabs share.
   * @default 'oncely'
   */
  channel?: string;
  /**
   * Prefix of Web Lock names; the lock of an intent is `prefix + JSON.stringify([scope, name])`.
   * @default 'oncely:'
   */
  lockPrefix?: string;
  /**
   * The Web Locks manager. Without one (old browsers, insecure contexts) locks are only
   * taken within this page, through a {@link LocalCoordinator}; pass `undefined`
   * explicitly to choose that.
   * @default globalThis.navigator.locks, read at first use
   */
  locks?: LockManager;
}

/**
 * Coordinates the tabs of one origin: one attempt in flight per intent across all of
 * them (Web Locks, released by the browser if the holder tab dies), and records told
 * to the other tabs over a BroadcastChannel. Where Web Locks are missing it locks
 * within the page only; where BroadcastChannel is missing `publish` and `subscribe` do
 * nothing. Constructing it touches neither API.
 */
export class WebLocksCoordinator implements IntentCoordinator {
  readonly #channelName: string;
  readonly #lockPrefix: string;
  readonly #locksOption: { value: LockManager | undefined } | undefined;
  readonly #local = new LocalCoordinator();
  readonly #listeners = new Set<(record: IntentRecord) => void>();
  #channel: BroadcastChannel | undefined;
  #closed = false;

  constructor(options: WebLocksCoordinatorOptions = {}) {
    this.#channelName = options.channel ?? 'oncely';
    this.#lockPrefix = options.lockPrefix ?? 'oncely:';
    this.#locksOption = 'locks' in options ? { value: options.locks } : undefined;
  }

  get #locks(): LockManager | undefined {
    return this.#locksOption ? this.#locksOption.value : globalThis.navigator?.locks;
  }

  /** True when locks span tabs (Web Locks), false when they only span this page. */
  get crossTab(): boolean {
    return this.#locks !== undefined;
  }

  /** Web Locks exclude every tab of the origin, and a dead tab's locks are released: no lease to wait on. */
  get coversStore(): boolean {
    return this.crossTab;
  }

  /**
   * Runs `fn` holding the lock of (scope, name). `signal` aborts the wait for the lock
   * (rejecting with its reason); once granted, `fn` runs to the end.
   */
  async exclusive<T>(scope: string, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const id = intentId(scope, name);
    if (this.#locks) {
      return this.#locks.request(this.#lockPrefix + id, signal ? { signal } : {}, () => fn()) as Promise<T>;
    }
    return this.#localExclusive(scope, name, fn, signal);
  }

  /** Sends `record` to the coordinators of the other tabs (not to this one's listeners). */
  publish(record: IntentRecord): void {
    try {
      this.#open()?.postMessage(record);
    } catch {
      // A closed or unclonable channel: telling the other tabs is best effort.
    }
  }

  /** Hears records published by other tabs. Messages that are not valid records are ignored. */
  subscribe(listener: (record: IntentRecord) => void): () => void {
    this.#listeners.add(listener);
    this.#open();
    return () => {
      this.#listeners.delete(listener);
    };
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    this.#channel?.close();
    this.#channel = undefined;
  }

  #open(): BroadcastChannel | undefined {
    if (this.#channel || this.#closed || typeof BroadcastChannel === 'undefined') return this.#channel;
    try {
      const channel = new BroadcastChannel(this.#channelName);
      channel.onmessage = (event: MessageEvent) => this.#receive(event.data);
      // Node keeps the process alive for an open channel; a browser has no `unref`.
      (channel as { unref?: () => void }).unref?.();
      this.#channel = channel;
    } catch {
      // Opaque origins may refuse a channel: stay silent, as without BroadcastChannel.
    }
    return this.#channel;
  }

  #receive(data: unknown): void {
    const parsed = parseRecord(data);
    if (!('record' in parsed)) return;
    for (const listener of this.#listeners) {
      try {
        listener({ ...parsed.record });
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  #localExclusive<T>(scope: string, name: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (!signal) return this.#local.exclusive(scope, name, fn);
    if (signal.aborted) return Promise.reject(signal.reason);
    let granted = false;
    const run = this.#local.exclusive(scope, name, () => {
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
}
