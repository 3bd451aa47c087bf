// Your own server: an Express app whose payments route runs once per idempotency key
// (oncely/server over SqliteKeyStore: the key row and the ledger row commit in one SQLite
// transaction), and a Node worker (./worker.ts, another process) paying through it with the
// oncely client and its real default store. The first answer is lost on the way back —
// the connection drops after the payment committed — so the worker retries with the same
// key and gets the stored answer, marked as a replay: one ledger row.
//
//   npm run build && node examples/server-express/main.ts
//
// On PostgreSQL: PostgresKeyStore from 'oncely/postgres' and `tx.query(…)` (docs/server.md).
// Exits non-zero unless the ledger holds exactly one payment for the key.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { openSqliteKeyStore, type SqliteTransaction } from 'oncely/node';
import { createIdempotency } from 'oncely/server';
import { idempotent } from 'oncely/server/express';

const dir = mkdtempSync(join(tmpdir(), 'oncely-server-example-'));
const keys = await openSqliteKeyStore({ file: join(dir, 'shop.db') }); // the app's own file; keys migrated in
await keys.transaction((tx) =>
  tx.exec('CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, account TEXT, key TEXT, amount INTEGER)'),
);
const idempotency = createIdempotency<SqliteTransaction>({
  store: keys,
  // Keys are per account: the same key from two accounts is two keys.
  scope: (request) => request.headers.get('x-account-id') ?? '',
});

const app = express();
app.use(express.json());
// The network: the first answer never reaches the client — the connection drops after the
// payment has committed, exactly when a client cannot know whether it happened.
const seen: string[] = [];
app.use((req, res, next) => {
  seen.push(String(req.headers['idempotency-key']));
  if (seen.length === 1)
    res.end = (() => {
      req.socket.destroy();
      return res;
    }) as typeof res.end;
  next();
});
app.post(
  '/api/payments',
  idempotent(idempotency, ({ tx, json, scope, key }) => {
    const { amount } = json as { amount: number };
    // `tx` is the transaction that holds the key: the payment commits with it, or not at all.
    const { id } = tx.get<{ id: number }>(
      'INSERT INTO ledger (account, key, amount) VALUES (?, ?, ?) RETURNING id',
      scope,
      key,
      amount,
    )!;
    return { status: 201, body: { id: `pay_${id}`, account: scope, amount } };
  }),
);
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;

try {
  // The client: another process, its keys in its own state directory (the default Node store).
  const worker = spawn(
    process.execPath,
    [fileURLToPath(new URL('./worker.ts', import.meta.url)), `http://127.0.0.1:${port}/api/`],
    { env: { ...process.env, ONCELY_STATE_DIR: join(dir, 'client') }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  worker.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve) => worker.once('exit', resolve));
  console.log(output.trimEnd().replace(/^/gm, '  [worker] '));
  assert.equal(code, 0, 'the worker exits 0');
  const res = JSON.parse(output.trim().split('\n').at(-1)!) as { status: number; replayed: boolean; key: string };

  const ledger = await keys.transaction((tx) =>
    tx.all<{ key: string; amount: number }>('SELECT key, amount FROM ledger'),
  );
  console.log(`requests received: ${seen.length}, keys sent: ${[...new Set(seen)].join(', ')}`);
  console.log(`ledger rows: ${ledger.length}`, ledger);
  assert.equal(res.status, 201);
  assert.equal(res.replayed, true, 'the retry got the stored answer back');
  assert.ok(seen.length >= 2, 'the lost answer was retried');
  assert.equal(new Set(seen).size, 1, 'every attempt carried the same key');
  assert.equal(ledger.length, 1, 'exactly one payment');
  assert.equal(ledger[0]!.key, res.key, "the payment is recorded under the worker's key");
  assert.equal(seen[0], `"${res.key}"`, 'sent as a Structured Field string (the ietf profile)');
} finally {
  server.closeAllConnections();
  server.close();
  await keys.close();
  rmSync(dir, { recursive: true, force: true });
}
