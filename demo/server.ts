// `npm run demo:server`: your own payments API on oncely/server — Express 5 over the
// embedded SQLite key store. POST /payments writes a ledger row in the transaction that
// holds the idempotency key, so key, payment and stored answer commit together or not at
// all. Its first line is `URL http://127.0.0.1:<port>`; then point the check at it:
//
//   npx oncely check http://127.0.0.1:<port>/payments --json '{"amount":1000,"currency":"EUR"}'
//
// Options: --file <path> (the SQLite file; default a new temp dir), --port <n> (default any
// free port), --postgres <connection string> (the same app over PostgresKeyStore instead).
// `X-Slow: <ms>` on a request holds its transaction that long (the check's --slow), to see
// 409 answered to a concurrent repeat; `X-Account` is the key's scope. --io <ms> (default 25)
// is the I/O a real handler awaits while it holds the key (a fraud check, a call to another
// service of yours): with none, SQLite's synchronous writes answer each request before the
// next is read, nothing can overlap, and `oncely check` says the race was not measured.
// (A provider's charge never goes inside the transaction: see docs/server.md.)
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import express from 'express';
import { openSqliteKeyStore, type SqliteTransaction } from 'oncely/node';
import { type Answer, createIdempotency, type KeyStore } from 'oncely/server';
import { idempotent } from 'oncely/server/express';
import type pg from 'pg';

const { values: args } = parseArgs({
  options: {
    file: { type: 'string' },
    port: { type: 'string' },
    postgres: { type: 'string' },
    io: { type: 'string', default: '25' },
  },
});

const IO_MS = Math.max(0, Number(args.io) || 0);

interface Payment {
  scope: string;
  key: string;
  amount: number;
  currency: string;
}

/** Writes the payment in the key's transaction and gives its ledger id. */
type Record<Tx> = (tx: Tx, payment: Payment) => number | Promise<number>;

function invalid(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'The body must be a JSON object.';
  const { amount, currency } = body as { amount?: unknown; currency?: unknown };
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount <= 0)
    return '`amount` must be a positive integer (minor units).';
  if (typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency)) return '`currency` must be an ISO 4217 code.';
  return undefined;
}

function paymentsApp<Tx>(store: KeyStore<Tx>, record: Record<Tx>): express.Express {
  const idempotency = createIdempotency({ store, scope: (request) => request.headers.get('x-account') ?? '' });
  const app = express();
  // A browser checkout on another origin may send the key and read the replay marker.
  app.use((req, res, next) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Idempotency-Key, Content-Type, X-Account');
    res.setHeader('Access-Control-Expose-Headers', 'Idempotent-Replayed, Retry-After, Location');
    if (req.method !== 'OPTIONS') return next();
    res.setHeader('Access-Control-Allow-Methods', 'POST');
    res.status(204).end();
  });
  app.post(
    '/payments',
    idempotent(idempotency, async ({ tx, json, key, scope, request }): Promise<Answer> => {
      const problem = invalid(json);
      // An answer like any other: stored with the key and replayed (the draft's rule).
      if (problem)
        return {
          status: 400,
          headers: { 'content-type': 'application/problem+json' },
          body: { type: 'about:blank', title: 'Invalid payment', status: 400, detail: problem },
        };
      const { amount, currency } = json as { amount: number; currency: string };
      const id = await record(tx, { scope, key, amount, currency: currency.toUpperCase() });
      const slow = Math.min(Number(request.headers.get('x-slow')) || 0, 5_000) + IO_MS;
      if (slow > 0) await new Promise((resolve) => setTimeout(resolve, slow));
      return {
        status: 201,
        headers: { location: `/payments/pay_${id}` },
        body: { id: `pay_${id}`, amount, currency: currency.toUpperCase(), status: 'succeeded' },
      };
    }),
  );
  return app;
}

const LEDGER = `CREATE TABLE IF NOT EXISTS ledger (
  id %ID%, scope TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL, currency TEXT NOT NULL)`;

let app: express.Express;
let where: string;
let close: () => Promise<void>;
if (args.postgres) {
  const { Pool } = (await import('pg')).default;
  const { PostgresKeyStore } = await import('oncely/postgres');
  const pool = new Pool({ connectionString: args.postgres, max: 16 });
  const store = new PostgresKeyStore<pg.PoolClient>({ pool });
  await store.migrate();
  await pool.query(LEDGER.replace('%ID%', 'bigserial PRIMARY KEY'));
  app = paymentsApp(store, async (tx, p) => {
    const { rows } = await tx.query(
      'INSERT INTO ledger (scope, key, amount, currency) VALUES ($1, $2, $3, $4) RETURNING id',
      [p.scope, p.key, p.amount, p.currency],
    );
    return Number(rows[0].id);
  });
  where = `PostgreSQL ${args.postgres}`;
  close = () => pool.end();
} else {
  const file = args.file ?? join(mkdtempSync(join(tmpdir(), 'oncely-demo-server-')), 'shop.db');
  const store = await openSqliteKeyStore({ file });
  await store.transaction((tx) => tx.exec(LEDGER.replace('%ID%', 'INTEGER PRIMARY KEY')));
  app = paymentsApp<SqliteTransaction>(store, (tx, p) => {
    const row = tx.get<{ id: number }>(
      'INSERT INTO ledger (scope, key, amount, currency) VALUES (?, ?, ?, ?) RETURNING id',
      p.scope,
      p.key,
      p.amount,
      p.currency,
    );
    return row!.id;
  });
  where = `SQLite ${file}`;
  close = () => store.close();
}

const server = app.listen(Number(args.port ?? 0), '127.0.0.1');
await new Promise((resolve, reject) => server.once('listening', resolve).once('error', reject));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`URL ${url}`);
console.log(`keys and ledger in ${where}`);
console.log(`try: npx oncely check ${url}/payments --json '{"amount":1000,"currency":"EUR"}'`);
console.log(`     (add --slow 'X-Slow: 300' to see the 409 a concurrent repeat gets)`);
console.log('Ctrl-C stops the server.');

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    void close().finally(() => process.exit(0));
  });
