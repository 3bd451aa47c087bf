/**
 * A server process for the SIGKILL tests of oncely/server on PostgreSQL (bundled by
 * test/server-postgres-kill.test.ts): `node server-child.mjs <pg config JSON> <key> <when>`
 * runs one request under `key` whose handler writes the ledger, and stops for good
 * (waiting to be killed) either `before-commit` (after its ledger row, the key row not yet
 * committed) or `after-commit` (all committed, the answer not yet sent). It prints
 * `written` or `committed` at that point.
 *
 * `node server-child.mjs <pg config JSON> burst <keys, comma-separated> <per key>`: prints
 * `ready`, waits for a line on stdin, then sends `per key` concurrent requests for every key
 * at once (the handler writes the ledger and holds 300 ms) and prints one line per answer:
 * `<key> <outcome>`, then `done`.
 */
import pg from 'pg';
import { PostgresKeyStore } from '../../postgres/key-store.js';
import { once } from '../../src/server/once.js';

const [configJson, key, when, perKey] = process.argv.slice(2);
const pool = new pg.Pool({ ...JSON.parse(configJson!), max: 8 });
pool.on('error', () => undefined);
const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
const forever = () => new Promise(() => setInterval(() => undefined, 60_000));

if (key === 'burst') {
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  const keys = when!.split(',');
  await Promise.all(
    keys.flatMap((k) =>
      Array.from({ length: Number(perKey) }, async () => {
        const result = await once(
          store,
          { scope: 'acct', key: k, operation: 'payout', request: { amount: 5 } },
          async (tx) => {
            await tx.query('INSERT INTO ledger (key) VALUES ($1)', [k]);
            await tx.query('SELECT pg_sleep(0.3)');
            return { paid: 5 };
          },
        );
        process.stdout.write(`${k} ${result.outcome}\n`);
      }),
    ),
  );
  process.stdout.write('done\n');
  await pool.end();
  process.exit(0);
}

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
