import type { IntentRecord, Store } from '../store/store.js';

/** What the author's factory gives the suite, once per test. */
export interface ConformanceStore {
  /** A fresh, empty store. */
  store: Store;
  /** Opens another store over the same data (a restart, another process, tab or isolate). Tests that need it are skipped without it. */
  reopen?: () => Promise<Store>;
  /** Removes what the store left behind; called after the test, pass or fail. */
  cleanup?: () => Promise<void>;
  /**
   * For stores that join the app's transactions: claims `record` through `store` inside a
   * transaction that then rolls back, and resolves after the rollback.
   */
  claimRolledBack?: (store: Store, record: IntentRecord) => Promise<void>;
}

export type MakeStore = () => Promise<ConformanceStore>;

/** Returned by a test that needs what the factory does not offer (`reopen`, `claimRolledBack`). */
export const SKIPPED = 'skipped';

/** One test's stores: every store it opened is closed, and every factory's cleanup run, when it ends. */
export class Harness {
  readonly #make: MakeStore;
  readonly #made: ConformanceStore[] = [];
  readonly #extra: Store[] = [];
  readonly #closed = new WeakSet<Store>();

  constructor(make: MakeStore) {
    this.#make = make;
  }

  async fresh(): Promise<ConformanceStore> {
    const made = await this.#make();
    this.#made.push(made);
    return made;
  }

  /** Another store over `made`'s data; call only when `made.reopen` exists. */
  async reopened(made: ConformanceStore): Promise<Store> {
    const store = await made.reopen!();
    this.#extra.push(store);
    return store;
  }

  async close(store: Store): Promise<void> {
    if (this.#closed.has(store)) return;
    this.#closed.add(store);
    await store.close?.();
  }

  async end(): Promise<void> {
    for (const store of this.#extra.splice(0)) await this.close(store);
    for (const made of this.#made.splice(0)) {
      await this.close(made.store);
      await made.cleanup?.();
    }
  }
}

const T0 = 1_700_000_000_000;

export { T0 };

/** A valid record; `name` doubles as a readable key unless `extra.key` says otherwise. */
export function intentRecord(scope: string, name: string, extra: Partial<IntentRecord> = {}): IntentRecord {
  return {
    v: 1,
    scope,
    name,
    key: `key-${scope}-${name}`,
    state: 'ready',
    attempts: 0,
    createdAt: T0,
    updatedAt: T0,
    ...extra,
  };
}
