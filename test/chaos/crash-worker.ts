/**
 * A worker process for the crash-loop test: performs intents `job:0` … `job:<total-1>`
 * of one scope against a contract server over HTTP, with a `SqliteStore`, until it is
 * killed (SIGKILL, at any moment) or done. Each life first resumes what the previous
 * one left: every `client.pending()` intent, and every intent claimed but never sent, is
 * re-issued with the same request (the body is derived from the intent name).
 *
 * Run with `process.execPath` (Node >= 22.18 runs this file as is): it loads the built
 * library from `dist/`, so only erasable TypeScript is used here.
 *
 *   node crash-worker.ts <store dir> <base url> <scope> <total> [fsync: 1 | 0]
 *
 * Prints `ready` once the store is open, `sent <name>` before each request, `done` at
 * the end. Exits 2 on an error it did not expect.
 */
import type * as Core from '../../src/index.js';

type SqliteStoreClass = new (options: { dir: string; fsync?: boolean }) => Core.Store & { open(): Promise<void> };

const [dir, baseUrl, scope, totalText, fsyncText = '1'] = process.argv.slice(2);
if (!dir || !baseUrl || !scope || !totalText) {
  process.stderr.write('usage: crash-worker.ts <store dir> <base url> <scope> <total> [fsync: 1 | 0]\n');
  process.exit(2);
}
const total = Number(totalText);
const dist = (path: string) => new URL(`../../dist/${path}`, import.meta.url).href;
const core = (await import(dist('src/index.js'))) as typeof Core;
const { SqliteStore } = (await import(dist('node/index.js'))) as { SqliteStore: SqliteStoreClass };

// A SIGKILL loses nothing the kernel has (fsync matters for power cuts): some lives skip it, for speed.
const store = new SqliteStore({ dir, fsync: fsyncText !== '0' });
await store.open();

/**
 * The durability the engine asks for (claims and outcomes relaxed, the `in_flight` write
 * before a send strict), for engines that do not pass it yet: an update's new state is
 * predicted by running its (pure) updater on the record read just before.
 */
const withDurability: Core.Store = {
  ...store,
  get: (scope, name) => store.get(scope, name),
  list: (scope, states) => store.list(scope, states),
  delete: (scope, name, key) => store.delete(scope, name, key),
  clear: (scope) => store.clear(scope),
  sweep: (scope, now, options) => store.sweep(scope, now, options),
  close: () => store.close?.() ?? Promise.resolve(),
  claim: (fresh, options) => store.claim(fresh, { durability: 'relaxed', ...options }),
  async update(scope, name, updater, options) {
    if (options?.durability) return store.update(scope, name, updater, options);
    const current = await store.get(scope, name);
    const next = updater(current && { ...current });
    const sending = next?.state === 'in_flight' && current?.state !== 'in_flight';
    return store.update(scope, name, updater, { durability: sending ? 'strict' : 'relaxed' });
  },
};
const client = core.createClient({
  baseUrl,
  scope,
  store: withDurability,
  retry: { maxAttempts: 4, baseDelay: 1, maxDelay: 5, maxRetryAfter: 5, timeout: 300, deadline: 5_000 },
});
const say = (line: string) => process.stdout.write(`${line}\n`);
say('ready');

/** The request of an intent, derived from its name alone. */
const bodyOf = (name: string) => ({ job: `${scope}/${name}`, amount: Number(name.split(':')[1]) * 100 + 1 });

async function perform(name: string): Promise<void> {
  for (let round = 0; ; round++) {
    const intent = await client.intent(name);
    if (intent.state === 'succeeded') return;
    say(`sent ${name}`);
    try {
      await intent.post('jobs', { json: bodyOf(name) });
      return;
    } catch (error) {
      // Transient faults of the server: the intent stays unknown with its key; try again
      // after a pause, as an app's resume job would (up to ~30 s in all).
      if (!(error instanceof core.OutcomeUnknownError) || round >= 40) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 5 * 2 ** round)));
    }
  }
}

try {
  for (const pending of await client.pending()) await perform(pending.name);
  for (const claimed of await store.list(scope, ['ready'])) await perform(claimed.name);
  const finished = new Set((await store.list(scope, ['succeeded'])).map((record) => record.name));
  for (let i = 0; i < total; i++) {
    const name = `job:${i}`;
    if (!finished.has(name)) await perform(name);
  }
  await client.close();
  say('done');
} catch (error) {
  process.stderr.write(`crash-worker: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
}
