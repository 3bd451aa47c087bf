/**
 * `oncely` as resolved in Node (the `node` export condition): the core API, with a
 * `createClient` whose store defaults to a SQLite database in the state directory.
 */
import { type Client, type ClientOptions, createClient as createCoreClient } from '../src/client.js';
import { SqliteStore } from './sqlite-store.js';

export * from '../src/index.js';

/**
 * Creates a client whose keys live in `intents.db` (`node:sqlite`) in the state directory
 * (`$ONCELY_STATE_DIR`, else the OS one, e.g. `~/.local/state/oncely`) unless `store` is given.
 */
export function createClient(options: ClientOptions): Client {
  return createCoreClient({ ...options, store: options.store ?? new SqliteStore() });
}
