/**
 * `oncely/browser`: everything in `oncely`, with a `createClient` that defaults to the
 * IndexedDB store and Web Locks coordination, plus those pieces themselves.
 */
export { WebLocksCoordinator, type WebLocksCoordinatorOptions } from './cross-tab.js';
export * from './default.js';
export { IdbStore, type IdbStoreOptions, type QuarantinedRecord } from './idb-store.js';
export { MemoryFallbackStore, type OpenBrowserStoreOptions, openBrowserStore } from './open-store.js';
