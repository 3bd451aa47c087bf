/**
 * A child process on its own pool, for the multi-process PostgreSQL tests.
 * Bundled by `children.ts` (the engine's sources need more than type stripping), then
 * `node child.mjs <mode> <pg config JSON> <scope> …`:
 *
 * - `race <name> <key>`: prints `ready`, waits for a line on stdin, claims (scope, name)
 *   with `key`, prints `{"key":…,"created":…}`.
 * - `worker <baseUrl> <owner>`: drains the scope with `startWorker`, resending each intent
 *   through the engine (`api.intent(name).post('payouts', …)`). Prints `T <name>` when a
 *   handler starts, `D <name> <state>` when it ends, `E <code> <class>` for each error.
 */
import pg from 'pg';
import { PostgresStore } from '../../postgres/postgres-store.js';
import { startWorker } from '../../postgres/worker.js';
import { createClient } from '../../src/client.js';
import type { IntentRecord } from '../../src/store/store.js';

const [mode, configJson, scope, ...rest] = process.argv.slice(2);
const pool = new pg.Pool({ ...JSON.parse(configJson!), max: 4 });
pool.on('error', () => undefined);
const store = new PostgresStore({ pool });
const print = (line: string) => process.stdout.write(`${line}\n`);

if (mode === 'race') {
  const [name, key] = rest;
  print('ready');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const now = Date.now();
  const fresh: IntentRecord = {
    v: 1,
    scope: scope!,
    name: name!,
    key: key!,
    state: 'ready',
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  };
  const result = await store.claim(fresh);
  print(JSON.stringify({ key: result.record.key, created: result.created }));
  await pool.end();
  process.exit(0);
}

if (mode === 'worker') {
  const [baseUrl, owner] = rest;
  const api = createClient({ baseUrl: baseUrl!, scope, store, retry: { maxAttempts: 8, baseDelay: 50 } });
  const report = (error: unknown) => {
    const e = error as { code?: string; constructor?: { name?: string } };
    print(`E ${e?.code ?? 'none'} ${e?.constructor?.name ?? typeof error}`);
  };
  startWorker({
    store,
    scope: scope!,
    owner,
    batch: 4,
    leaseMs: 1_500,
    idleAfter: 0,
    retryAfter: 200,
    interval: 100,
    onError: report,
    resend: async (record) => {
      print(`T ${record.name}`);
      const intent = await api.intent(record.name);
      // The app rebuilds the request from its own rows; here the name is the payout id.
      await intent.post('payouts', { json: { payout: record.name } });
      print(`D ${record.name} ${(await store.get(scope!, record.name))?.state}`);
    },
  });
  print('ready');
}
