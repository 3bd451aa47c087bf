/**
 * `oncely` as resolved in Node (the `node` export condition): the core API, with a
 * `createClient` whose store defaults to crash-safe files in the state directory.
 */
import { type Client, type ClientOptions, createClient as createCoreClient } from '../src/client.js';
import { FileStore } from './file-store.js';

export * from '../src/index.js';

/**
 * Creates a client whose keys live on disk (`$ONCELY_STATE_DIR`, else the OS state
 * directory, e.g. `~/.local/state/oncely`) unless `store` is given.
 */
export function createClient(options: ClientOptions): Client {
  return createCoreClient({ ...options, store: options.store ?? new FileStore() });
}
