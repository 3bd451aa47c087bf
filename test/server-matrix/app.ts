/**
 * The server of the server fault matrix, run as a child process (bundled by env.ts):
 * `node app.mjs '<config JSON>'` — an Express 5 app on 127.0.0.1 over PostgresKeyStore or
 * SqliteKeyStore, one route `POST /payments` whose handler writes the app's own ledger row
 * in the key's transaction. It prints `URL http://127.0.0.1:<port>` when it listens.
 *
 * The request's `x-behave` header picks what the handler does (the faults of the matrix):
 * `ok` (default) · `slow:<ms>` · `throw-before` / `throw-after` (its ledger write) ·
 * `garbage:<kind>` (an answer that is not one) · `never` (prints `written <key>`, never
 * resolves) · `backend-idle` / `backend-query` (prints `backend <pid> <key>`, then waits
 * 1.5 s in JS or in `pg_sleep`) · `after-commit` (the answer committed, then `res.end`
 * prints `committed <status> <body base64>` and never sends it) · `commit-unsent` /
 * `commit-lost` (PostgreSQL: the pool goes through pg-proxy.ts, which kills the connection
 * as its COMMIT is sent, before or after PostgreSQL commits).
 * A crash prints `CRASH <origin>` on stderr before the process dies.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { openSqliteKeyStore, type SqliteTransaction } from '../../node/sqlite-key-store.js';
import { PostgresKeyStore } from '../../postgres/key-store.js';
import { idempotent } from '../../src/server/express.js';
import { createIdempotency, type Idempotency } from '../../src/server/idempotency.js';
import { startPgProxy } from './pg-proxy.js';

export interface AppConfig {
  store: 'pg' | 'sqlite';
  /** `pg` connection settings (store `pg`). */
  pg?: pg.PoolConfig;
  /** The SQLite file (store `sqlite`). */
  file?: string;
  maxBodyBytes: number;
  transactionTimeout: number;
}

process.on('uncaughtExceptionMonitor', (error, origin) => {
  process.stderr.write(`CRASH ${origin} ${(error as Error)?.stack ?? String(error)}\n`);
});

const config = JSON.parse(process.argv[2]!) as AppConfig;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const forever = () => new Promise(() => setInterval(() => undefined, 60_000));
const say = (line: string) => process.stdout.write(`${line}\n`);

/** One ledger write on either store's transaction. */
type Ledger = {
  write(key: string): Promise<number>;
  backend(): Promise<number>;
  sleepInQuery(s: number): Promise<void>;
  /** Arms pg-proxy.ts's fault on this connection's COMMIT. */
  arm(mode: string): Promise<void>;
};

function garbage(kind: string): unknown {
  switch (kind) {
    case 'null':
      return null;
    case 'string':
      return 'ok';
    case 'float-status':
      return { status: 201.5, body: {} };
    case 'string-status':
      return { status: '201', body: {} };
    case 'low-status':
      return { status: 42, body: {} };
    case 'object-header':
      return { status: 201, headers: { 'x-bad': { nested: true } }, body: {} };
    case 'crlf-header':
      return { status: 201, headers: { 'x-bad': 'a\r\nSet-Cookie: x=1' }, body: {} };
    case 'bigint-body':
      return { status: 201, body: { n: 1n } };
    case 'function-body':
      return { status: 201, body: () => 1 };
    case 'symbol-body':
      return { status: 201, body: Symbol('x') };
    case 'bytes-body':
      return { status: 201, body: new Uint8Array([1, 2, 3]) };
    default:
      throw new Error(`unknown garbage ${kind}`);
  }
}

async function main() {
  let idempotency: Idempotency<unknown>;
  let ledgerOf: (tx: unknown) => Ledger;
  if (config.store === 'pg') {
    const { host = '', port = 5432 } = config.pg ?? {};
    const proxy = await startPgProxy(host.startsWith('/') ? { path: `${host}/.s.PGSQL.${port}` } : { host, port });
    const via = { host: '127.0.0.1', port: (proxy.address() as AddressInfo).port };
    const pool = new pg.Pool({ ...config.pg, ...via, max: 8 });
    pool.on('error', () => undefined);
    const store = new PostgresKeyStore<pg.PoolClient>({
      pool,
      autoMaintain: false,
      transactionTimeout: config.transactionTimeout,
    });
    idempotency = createIdempotency<pg.PoolClient>({
      store,
      maxBodyBytes: config.maxBodyBytes,
    }) as Idempotency<unknown>;
    ledgerOf = (tx) => {
      const c = tx as pg.PoolClient;
      return {
        write: async (key) =>
          Number((await c.query('INSERT INTO ledger (key) VALUES ($1) RETURNING id', [key])).rows[0].id),
        backend: async () => Number((await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid),
        sleepInQuery: async (s) => {
          await c.query('SELECT pg_sleep($1)', [s]);
        },
        arm: async (mode) => {
          await c.query(`SELECT 'oncely-fault:${mode}'`);
        },
      };
    };
  } else {
    const store = await openSqliteKeyStore({
      file: config.file!,
      autoMaintain: false,
      transactionTimeout: config.transactionTimeout,
    });
    idempotency = createIdempotency<SqliteTransaction>({
      store,
      maxBodyBytes: config.maxBodyBytes,
    }) as Idempotency<unknown>;
    ledgerOf = (tx) => {
      const t = tx as SqliteTransaction;
      return {
        write: async (key) =>
          Number(
            t.get<{ id: number }>('INSERT INTO ledger (key, created_at) VALUES (?, ?) RETURNING id', key, Date.now())!
              .id,
          ),
        backend: async () => process.pid,
        sleepInQuery: async (s) => {
          await sleep(s * 1000);
        },
        arm: async () => undefined,
      };
    };
  }

  const app = express();
  app.post('/payments', (req, res, next) => {
    if (req.get('x-behave') === 'after-commit') {
      // The answer is committed by the time the adapter writes it: it never leaves.
      const end = res.end.bind(res);
      res.end = ((chunk?: Uint8Array) => {
        say(`committed ${res.statusCode} ${Buffer.from(chunk ?? new Uint8Array()).toString('base64')}`);
        void forever().then(() => end());
        return res;
      }) as typeof res.end;
    }
    next();
  });
  app.post(
    '/payments',
    idempotent(idempotency, async ({ tx, key, request }) => {
      const behave = request.headers.get('x-behave') ?? 'ok';
      const ledger = ledgerOf(tx);
      if (behave === 'throw-before') throw new Error('the handler failed before its writes');
      const id = await ledger.write(key);
      if (behave === 'throw-after') throw new Error('the handler failed after its writes');
      if (behave === 'commit-unsent' || behave === 'commit-lost') await ledger.arm(behave);
      if (behave.startsWith('slow:')) await sleep(Number(behave.slice(5)));
      if (behave.startsWith('garbage:')) return garbage(behave.slice(8)) as never;
      if (behave === 'never') {
        say(`written ${key}`);
        await forever();
      }
      if (behave === 'backend-idle' || behave === 'backend-query') {
        say(`backend ${await ledger.backend()} ${key}`);
        if (behave === 'backend-idle') await sleep(1500);
        else await ledger.sleepInQuery(1.5);
        await ledger.backend(); // the transaction is used again after the wait
      }
      return { status: 201, headers: { location: `/payments/${id}` }, body: { id, key } };
    }),
  );
  const server = createServer(app);
  server.listen(0, '127.0.0.1', () => say(`URL http://127.0.0.1:${(server.address() as AddressInfo).port}`));
}

await main();
