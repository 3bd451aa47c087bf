/**
 * `createClient` as the core entry exports it (`oncely` in edge and worker runtimes): there
 * is no default store there, so a missing one is told what to pass. The browser and Node
 * entries default the store, so a page does not carry this text.
 */
import { type Client, type ClientOptions, createClient as createAnyClient } from './client.js';

const NO_STORE =
  'createClient needs a store here: this runtime (an edge or worker runtime, or the core entry) has no default. Pass one, e.g. `store: new PostgresStore({ pool })` from "oncely/postgres", or `new MemoryStore()` for tests; in browsers and Node, "oncely" defaults to IndexedDB and SQLite.';

/** Creates a client. See {@link ClientOptions}. */
export function createClient(options: ClientOptions): Client {
  return createAnyClient(options, NO_STORE);
}
