import { promisifyRequest, type UseStore } from 'idb-keyval';

/** Where and how an IndexedDB object store is opened. */
export interface IdbLocation {
  /** Database name. */
  dbName: string;
  /** Object store name inside the database. */
  storeName: string;
  /** The IndexedDB factory; `globalThis.indexedDB` when omitted. */
  factory?: IDBFactory | undefined;
  /** Durability hint for readwrite transactions. */
  durability: IDBTransactionDurability;
  /**
   * The browser closed the connection itself (the `close` event): the user cleared the
   * site's data, or the backing store failed. Not called for a close asked for by script.
   */
  onLost?: () => void;
}

/** An opened (lazily) object store: idb-keyval's `UseStore` plus `close`. */
export interface IdbHandle {
  use: UseStore;
  close(): Promise<void>;
}

function globalFactory(): IDBFactory {
  // Reading `indexedDB` can itself throw (SecurityError in sandboxed frames, some
  // private modes), so it is read here, at first use, never at import.
  const factory = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!factory) throw new Error('IndexedDB is not available in this environment');
  return factory;
}

function openRequest(factory: IDBFactory, location: IdbLocation, version?: number): Promise<IDBDatabase> {
  const request = version === undefined ? factory.open(location.dbName) : factory.open(location.dbName, version);
  request.onupgradeneeded = () => {
    if (!request.result.objectStoreNames.contains(location.storeName)) {
      request.result.createObjectStore(location.storeName);
    }
  };
  return promisifyRequest(request);
}

/**
 * Like idb-keyval's `createStore(dbName, storeName)`, with what a payments SDK needs on
 * top: readwrite transactions carry a durability hint (`strict` asks the browser to
 * flush to disk before `complete`; Chrome and Firefox default to `relaxed`), a database
 * that exists without our object store gets it added by a version bump, a connection is
 * closed when another tab upgrades, and nothing touches `indexedDB` until first use.
 */
export function openIdb(location: IdbLocation): IdbHandle {
  let dbp: Promise<IDBDatabase> | undefined;

  const connect = async (): Promise<IDBDatabase> => {
    const factory = location.factory ?? globalFactory();
    let db = await openRequest(factory, location);
    if (!db.objectStoreNames.contains(location.storeName)) {
      const next = db.version + 1;
      db.close();
      db = await openRequest(factory, location, next);
    }
    db.onclose = () => {
      dbp = undefined;
      location.onLost?.();
    };
    db.onversionchange = () => {
      db.close();
      dbp = undefined;
    };
    return db;
  };

  const getDb = (): Promise<IDBDatabase> => {
    if (!dbp) {
      const pending = connect();
      dbp = pending;
      pending.catch(() => {
        if (dbp === pending) dbp = undefined;
      });
    }
    return dbp;
  };

  const objectStore = (db: IDBDatabase, mode: IDBTransactionMode): IDBObjectStore => {
    const options = mode === 'readwrite' ? { durability: location.durability } : undefined;
    return db.transaction(location.storeName, mode, options).objectStore(location.storeName);
  };

  // The callback runs right after its transaction is created, in the same microtask,
  // as in idb-keyval: a transaction left without requests commits on its own.
  const use: UseStore = async (mode, callback) => {
    let store: IDBObjectStore;
    try {
      store = objectStore(await getDb(), mode);
    } catch (error) {
      // The browser closed the connection under us (Safari does): reconnect once.
      if ((error as { name?: unknown } | null)?.name !== 'InvalidStateError') throw error;
      dbp = undefined;
      store = objectStore(await getDb(), mode);
    }
    return callback(store);
  };

  const close = async (): Promise<void> => {
    const pending = dbp;
    dbp = undefined;
    if (pending) (await pending.catch(() => undefined))?.close();
  };

  return { use, close };
}
