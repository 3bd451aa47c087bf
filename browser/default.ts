/**
 * `oncely` as resolved in browsers (the `browser` export condition): the core API, with
 * a `createClient` whose store defaults to IndexedDB and whose coordinator defaults to
 * Web Locks + BroadcastChannel across tabs, and whose small requests outlive the page.
 */
import { type Client, type ClientOptions, createClient as createCoreClient } from '../src/client.js';
import { lazyStore } from '../src/store/lazy-store.js';
import { WebLocksCoordinator } from './cross-tab.js';
import { openBrowserStore } from './open-store.js';

export * from '../src/index.js';

/**
 * Creates a client whose keys live in IndexedDB (database `oncely`) unless `store` is
 * given, and whose tabs coordinate through Web Locks unless `coordinator` is given.
 * Where IndexedDB is unavailable it falls back to memory and reports a `store` event
 * `{ type: 'fallback' }` once.
 */
export function createClient(options: ClientOptions): Client {
  return createCoreClient({
    ...options,
    store: options.store ?? lazyStore(openBrowserStore()),
    coordinator: options.coordinator ?? new WebLocksCoordinator(),
    keepalive: options.keepalive ?? true,
  });
}
