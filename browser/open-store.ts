import { MemoryStore } from '../src/store/memory-store.js';
import type { ObservableStore, Store, StoreEvent } from '../src/store/store.js';
import { IdbStore, type IdbStoreOptions } from './idb-store.js';

export interface OpenBrowserStoreOptions extends IdbStoreOptions {
  /**
   * How long to wait for IndexedDB to open and accept a write before falling back to
   * memory. Some browsers leave `indexedDB.open` pending forever in private modes.
   * @default 5000
   */
  openTimeout?: number;
}

/**
 * Keeps intents in memory because IndexedDB could not be used. Keys survive neither a
 * reload nor a crash, and other tabs do not see them. Every subscriber hears the
 * `fallback` event once, however late it subscribes.
 */
export class MemoryFallbackStore extends MemoryStore implements ObservableStore {
  /** Why IndexedDB could not be used. */
  readonly reason: string;

  constructor(reason: string) {
    super();
    this.reason = reason;
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    let subscribed = true;
    queueMicrotask(() => {
      if (subscribed) listener({ type: 'fallback', reason: this.reason });
    });
    return () => {
      subscribed = false;
    };
  }
}

let warned = false;

/**
 * The durable store for a browser: an {@link IdbStore}, opened and checked with a
 * write. Where IndexedDB is missing or blocked (no `indexedDB`, private-mode quirks,
 * `file:` pages, `indexedDB.open` failing or hanging past `openTimeout`), resolves with
 * a {@link MemoryFallbackStore} instead, warns once on the console, and reports
 * `{ type: 'fallback', reason }` to its subscribers. Never rejects.
 *
 * @example
 * const store = await openBrowserStore();
 * store.subscribe((event) => event.type === 'fallback' && showBanner(event.reason));
 */
export async function openBrowserStore(options: OpenBrowserStoreOptions = {}): Promise<Store & ObservableStore> {
  const store = new IdbStore(options);
  const timeout = options.openTimeout ?? 5000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const probe = store.probe().then(
    () => undefined,
    (error: unknown) => `IndexedDB is unavailable: ${errorText(error)}`,
  );
  const expired = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`IndexedDB did not open within ${timeout} ms`), timeout);
  });
  const failure = await Promise.race([probe, expired]);
  clearTimeout(timer);
  if (failure === undefined) return store;
  // Release the connection if the slow open completes after all.
  probe.finally(() => store.close()).catch(() => undefined);
  if (!warned) {
    warned = true;
    console.warn(`oncely: ${failure}. Idempotency keys are kept in memory only and will not survive a reload.`);
  }
  return new MemoryFallbackStore(failure);
}

function errorText(error: unknown): string {
  if (error instanceof Error || (typeof DOMException !== 'undefined' && error instanceof DOMException)) {
    return `${error.name}: ${error.message}`;
  }
  return String(error);
}
