/**
 * `oncely` as resolved in Node (the `node` export condition): the core API, with a
 * `createClient` whose store defaults to a SQLite database in the state directory.
 */
import { type Client, type ClientOptions, createClient as createCoreClient } from '../src/client.js';
import { coordinatorFor } from '../src/coordinator/coordinator.js';
import { storeView } from '../src/store/forward.js';
import { SqliteStore } from './sqlite-store.js';

export * from '../src/index.js';

/** The default stores of this process, by database file, with how many clients use each. */
const shared = new Map<string, { store: SqliteStore; clients: number }>();

/**
 * The default store, shared by every client of the process that uses the same file, so
 * that their writes share one connection and one group commit; closed with its last client.
 * Each client gets a view of it that only counts `close` (every other call goes to the
 * store as made, every argument with it).
 */
function defaultStore(): { view: SqliteStore; store: SqliteStore } {
  const file = new SqliteStore().file;
  let entry = shared.get(file);
  if (!entry) {
    entry = { store: new SqliteStore(), clients: 0 };
    shared.set(file, entry);
  }
  const held = entry;
  held.clients++;
  const { store } = held;
  let closed = false;
  const view = storeView(store, async () => {
    if (closed) return;
    closed = true;
    if (--held.clients > 0) return;
    shared.delete(file);
    await store.close();
  });
  return { view, store };
}

/**
 * Creates a client whose keys live in `intents.db` (`node:sqlite`) in the state directory
 * (`$ONCELY_STATE_DIR`, else the OS one, e.g. `~/.local/state/oncely`) unless `store` is given.
 */
export function createClient(options: ClientOptions): Client {
  if (options.store) return createCoreClient(options);
  // Clients sharing the process's store share its coordination too (one chain per intent).
  const { view, store } = defaultStore();
  return createCoreClient({ ...options, store: view, coordinator: options.coordinator ?? coordinatorFor(store) });
}
