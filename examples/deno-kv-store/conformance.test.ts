/// <reference lib="deno.ns" />
/// <reference lib="deno.unstable" />
/**
 * `deno test --unstable-kv --no-check -A examples/deno-kv-store/conformance.test.ts`: the oncely store
 * conformance suite against DenoKvStore, with Deno's own test runner. Each test gets a fresh
 * database file; `reopen` opens a second connection to it (another process, after a restart).
 */
import { runStoreConformance } from 'oncely/testing';
import { DenoKvStore } from './kv-store.ts';

runStoreConformance(
  'DenoKvStore',
  async () => {
    const dir = await Deno.makeTempDir({ prefix: 'oncely-kv-' });
    const open = async () => new DenoKvStore(await Deno.openKv(`${dir}/intents.kv`));
    return { store: await open(), reopen: open, cleanup: () => Deno.remove(dir, { recursive: true }) };
  },
  { it: (name, fn) => Deno.test({ name, fn }) },
  { utf8Names: true },
);
