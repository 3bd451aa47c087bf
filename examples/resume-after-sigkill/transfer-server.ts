/**
 * The transfers API: an Express 5 app whose `POST /transfers` runs once per idempotency key
 * on `oncely/server` over the `SqliteKeyStore` (`oncely/node`): the key row and the transfer
 * row commit in one SQLite transaction, or neither. 409 + `Retry-After` while a key is in
 * progress, 422 for a key reused with another body, the stored answer replayed with
 * `Idempotent-Replayed: true` — all the library's.
 *
 * One fault, `holding`: a new transfer gets no answer. Every other held request has run and
 * committed first (the money moved; the answer is withheld until the client goes away); the
 * others wait before reaching the key and are dropped when the client goes away, so nothing
 * of them ran and a resend runs them.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import { openSqliteKeyStore, type SqliteInvariantReport, type SqliteTransaction } from 'oncely/node';
import { createIdempotency } from 'oncely/server';
import { idempotent } from 'oncely/server/express';

export interface Transfer {
  id: number;
  job: string;
  key: string;
  amount: number;
}

export interface TransferServer {
  readonly url: string;
  /** Transfers committed, in order (the app's own table). */
  transfers(): Promise<Transfer[]>;
  /** The store's invariant check: transfers against the keys that committed them. */
  invariant(): Promise<SqliteInvariantReport>;
  /** Every request to `POST /transfers`: the job it was for and the key it carried. */
  readonly requests: readonly { job: string; key: string }[];
  /** Requests held right now (not answered). */
  readonly held: number;
  /** While true, new transfers are held (see above). */
  holding: boolean;
  close(): Promise<void>;
}

const OPERATION = 'POST /transfers';

export async function startTransferServer(dir: string): Promise<TransferServer> {
  const store = await openSqliteKeyStore({ file: join(dir, 'transfers.db') });
  await store.transaction((tx) =>
    tx.exec(`CREATE TABLE IF NOT EXISTS transfers (
      id INTEGER PRIMARY KEY, job TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL,
      created_at INTEGER NOT NULL)`),
  );
  const idempotency = createIdempotency<SqliteTransaction>({ store });
  const requests: { job: string; key: string }[] = [];
  let held = 0;
  let holdCount = 0;

  const app = express();
  app.use(express.json());
  app.post(
    '/transfers',
    (req, res, next) => {
      const { job } = (req.body ?? {}) as { job?: string };
      requests.push({ job: String(job), key: String(req.headers['idempotency-key']).replaceAll('"', '') });
      if (!state.holding) return next();
      held++;
      res.once('close', () => held--);
      if (holdCount++ % 2 === 1) return; // held before the key: never runs; the client's close drops it
      // Runs and commits; the answer never leaves (until the client gives up).
      res.end = (() => res) as typeof res.end;
      next();
    },
    idempotent(idempotency, ({ tx, json, key }) => {
      const { job, amount } = json as { job: string; amount: number };
      // `tx` holds the key row: the transfer commits with it, or not at all.
      const { id } = tx.get<{ id: number }>(
        'INSERT INTO transfers (job, key, amount, created_at) VALUES (?, ?, ?, ?) RETURNING id',
        job,
        key,
        amount,
        Date.now(),
      )!;
      return { status: 201, body: { id: `tr_${id}`, job, amount } };
    }),
  );

  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', (error?: Error) => (error ? reject(error) : resolve(listening)));
  });
  const { port } = server.address() as AddressInfo;
  const state: TransferServer = {
    url: `http://127.0.0.1:${port}/`,
    transfers: () =>
      store.transaction((tx) => tx.all<Transfer>('SELECT id, job, key, amount FROM transfers ORDER BY id')),
    invariant: () =>
      store.checkInvariant({ operation: OPERATION, effectsSql: 'SELECT count(*) FROM transfers WHERE created_at > ?' }),
    requests,
    get held() {
      return held;
    },
    holding: false,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await store.close();
    },
  };
  return state;
}
