/**
 * The payments API of `provider-chain.spec.ts`, run as a child process so that the spec can
 * SIGKILL it and start it again on the same port: `node e2e/server/provider-api.ts '<config JSON>'`.
 *
 * An Express 5 app on `oncely/server` over PostgreSQL (`PostgresKeyStore`) whose
 * `POST /payments` is a `providerCall` (`oncely/postgres`): phase 1 writes an `orders` row
 * and the downstream intent, phase 2 charges the provider (`POST /charges` on the contract
 * server, through the oncely client over `PostgresStore`), phase 3 marks the order paid and
 * stores the answer the page reads (`{ id, amount, currency, status: 'succeeded' }`).
 * CORS as in `api-server.ts` (the page lives on another origin).
 *
 * Routes: `POST /payments`; `GET /ledger` (the paid orders, in the page's ledger shape);
 * `POST /__control` `{ "pause": true }`: the next request that runs phase 1 in this process
 * waits 60 s after it (the spec's moment to SIGKILL it).
 *
 * Prints `URL http://127.0.0.1:<port>` when it listens, `phase1 <key>` once phase 1 is
 * committed (or found committed, on a resume) and `calling <key>` just before the provider call.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createClient } from 'oncely';
import { PostgresKeyStore, PostgresStore, providerCall } from 'oncely/postgres';
import { createIdempotency } from 'oncely/server';
import { idempotent } from 'oncely/server/express';
import pg from 'pg';
import { answerPreflight, applyCors } from './cors.ts';

export interface ProviderApiConfig {
  pg: pg.PoolConfig;
  /** The provider's base URL (the contract server). */
  provider: string;
  /** 0 picks one; a restarted API takes its predecessor's, so the page keeps its API URL. */
  port: number;
  /** The downstream intents' lease (ms): how long a killed call holds its intent. */
  leaseTtl: number;
}

const ORDERS_TABLE = `CREATE TABLE IF NOT EXISTS orders (
  id bigserial PRIMARY KEY, scope text NOT NULL, key text NOT NULL, amount int NOT NULL,
  currency text NOT NULL, state text NOT NULL, charge text, created_at timestamptz NOT NULL DEFAULT now())`;

const config = JSON.parse(process.argv[2]!) as ProviderApiConfig;
const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const keyPool = new pg.Pool({ ...config.pg, max: 8 });
const phasePool = new pg.Pool({ ...config.pg, max: 8 });
for (const pool of [keyPool, phasePool]) pool.on('error', () => undefined);
const keys = new PostgresKeyStore<pg.PoolClient>({ pool: keyPool, autoMaintain: false });
const intents = new PostgresStore({ pool: phasePool });
await keys.migrate();
await intents.migrate();
await phasePool.query(ORDERS_TABLE);

const provider = createClient({
  baseUrl: config.provider,
  scope: 'shop',
  store: intents,
  leaseTtl: config.leaseTtl,
  // Well under the key store's transactionTimeout (30 s): the key's transaction waits for the call.
  retry: { deadline: 8_000, baseDelay: 20, maxDelay: 250 },
});
const idempotency = createIdempotency({ store: keys, scope: (request) => request.headers.get('x-account') ?? '' });

interface Order {
  order: number;
  amount: number;
  currency: string;
}
/** Keys whose phase 1 ran in this process: only those pause (a resumed request goes on). */
const fresh = new Set<string>();
let pauseNext = false;

const payments = providerCall<Order, { id: string }, pg.PoolClient>({
  client: provider,
  pool: phasePool,
  async begin(tx, { scope, key, json }) {
    const { amount, currency } = json as { amount: number; currency: string };
    const { rows } = await tx.query(
      "INSERT INTO orders (scope, key, amount, currency, state) VALUES ($1, $2, $3, $4, 'pending') RETURNING id",
      [scope, key, amount, currency],
    );
    fresh.add(key);
    return { order: Number(rows[0].id), amount, currency };
  },
  async call(intent, order, { key }) {
    say(`phase1 ${key}`);
    if (fresh.delete(key) && pauseNext) {
      pauseNext = false;
      await sleep(60_000);
    }
    say(`calling ${key}`);
    const res = await intent.post('charges', { json: { amount: order.amount, order: order.order } });
    return res.data as { id: string };
  },
  async finish(tx, order, outcome) {
    const charge = outcome.via === 'provider' ? outcome.result.id : `reconciled:${outcome.outcome}`;
    await tx.query("UPDATE orders SET state = 'paid', charge = $2 WHERE id = $1", [order.order, charge]);
    const body = {
      id: charge,
      amount: order.amount,
      currency: order.currency,
      status: 'succeeded',
      order: order.order,
    };
    return { status: 201, body };
  },
});

const app = express();
app.use((req, res, next) => {
  if (req.method === 'OPTIONS') return answerPreflight(req, res, '*');
  if (!applyCors(req, res, '*')) return void res.status(403).end();
  next();
});
app.post('/payments', idempotent(idempotency, payments));
app.get('/ledger', async (_req, res) => {
  const { rows } = await phasePool.query(
    "SELECT charge AS id, key, amount, currency, created_at FROM orders WHERE state = 'paid' ORDER BY created_at",
  );
  const charges = rows.map((row) => ({ ...row, created_at: new Date(row.created_at).getTime() }));
  res.json({ count: charges.length, charges });
});
app.post('/__control', express.json(), (req, res) => {
  if (req.body?.pause === true) pauseNext = true;
  res.json({ pause: pauseNext });
});
const server = createServer(app);
server.listen(config.port, '127.0.0.1', () => say(`URL http://127.0.0.1:${(server.address() as AddressInfo).port}`));
