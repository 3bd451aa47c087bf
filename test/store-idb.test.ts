import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { IdbStore } from '../browser/idb-store.js';
import { runStoreConformance } from './store-conformance.js';

// Each test gets its own in-memory IndexedDB; `reopen` is another tab (or a restart)
// over the same database.
runStoreConformance('IdbStore', async () => {
  const factory = new IDBFactory();
  return {
    store: new IdbStore({ indexedDB: factory }),
    reopen: async () => new IdbStore({ indexedDB: factory }),
  };
});

runStoreConformance('IdbStore (custom database, relaxed durability)', async () => {
  const factory = new IDBFactory();
  const options = { indexedDB: factory, dbName: 'app', storeName: 'oncely-intents', durability: 'relaxed' } as const;
  return { store: new IdbStore(options), reopen: async () => new IdbStore(options) };
});
