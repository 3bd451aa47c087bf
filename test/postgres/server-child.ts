/**
 * A server process for the SIGKILL tests of oncely/server on PostgreSQL (bundled by
 * test/server-postgres-kill.test.ts): `node server-child.mjs <pg config JSON> <key> <when>`
 * runs one request under `key` whose handler writes the ledger, and stops for good
 * (waiting to be killed) either `before-commit` (after its ledger row, the key row not yet
 * committed) or `after-commit` (all committed, the answer not yet sent). It prints
 * `written` or `committed` at that point.
 */
import pg from 'pg';
import { PostgresKeyStore } from '../../postgres/key-store.js';
import { once } from '../../src/server/once.js';

const [configJson, key, when] = process.argv.slice(2);
const pool = new pg.Pool({ ...JSON.parse(configJson!), max: 2 });
pool.on('error', () => undefined);
const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
const forever = () => new Promise(() => setInterval(() => undefined, 60_000));

await once(store, { scope: 'acct', key: key!, operation: 'payout', request: { amount: 5 } }, async (tx) => {
  await tx.query('INSERT INTO ledger (key) VALUES ($1)', [key]);
  if (when === 'before-commit') {
    process.stdout.write('written\n');
    await forever();
  }
  return { paid: 5 };
});
process.stdout.write('committed\n');
await forever();
