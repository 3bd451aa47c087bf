/**
 * The provider cases' server, run as a child process (bundled by the test): `node
 * provider-app.mjs '<config JSON>'` — an Express 5 app on `oncely/server` over PostgreSQL
 * whose `POST /payments` is a `providerCall`: phase 1 writes an `orders` row and the
 * downstream intent, phase 2 charges the provider (`POST /charges` under the oncely client,
 * over `PostgresStore`), phase 3 marks the order paid and stores the answer. Prints
 * `URL http://127.0.0.1:<port>` when it listens, `phase1 <key>` once phase 1 committed
 * (then, with `x-behave: pause` and phase 1 run by this request, waits 30 s: the test's
 * moment to SIGKILL it) and
 * `calling <key>` just before the provider call.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { PostgresKeyStore } from '../../postgres/key-store.js';
import { PostgresStore } from '../../postgres/postgres-store.js';
import { providerCall } from '../../postgres/provider-call.js';
import { createClient } from '../../src/index.js';
import { idempotent } from '../../src/server/express.js';
import { createIdempotency } from '../../src/server/idempotency.js';

export interface ProviderAppConfig {
  pg: pg.PoolConfig;
  /** The provider's base URL (the contract server). */
  provider: string;
  /** Port to listen on; 0 picks one. A restarted app takes its predecessor's, so clients keep their baseUrl. */
  port: number;
  /** The downstream intents' lease (ms): how long a killed call holds its intent. */
  leaseTtl: number;
}

process.on('uncaughtExceptionMonitor', (error, origin) => {
  process.stderr.write(`CRASH ${origin} ${(error as Error)?.stack ?? String(error)}\n`);
});

const config = JSON.parse(process.argv[2]!) as ProviderAppConfig;
const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const keyPool = new pg.Pool({ ...config.pg, max: 8 });
const phasePool = new pg.Pool({ ...config.pg, max: 8 });
for (const pool of [keyPool, phasePool]) pool.on('error', () => undefined);
const keys = new PostgresKeyStore<pg.PoolClient>({ pool: keyPool, autoMaintain: false });
const intents = new PostgresStore({ pool: phasePool });
await keys.migrate();
await intents.migrate();

const client = createClient({
  baseUrl: config.provider,
  scope: 'shop',
  store: intents,
  leaseTtl: config.leaseTtl,
  // Well under the key store's transactionTimeout (30 s): the key's transaction waits for the call.
  retry: { deadline: 8_000, baseDelay: 20, maxDelay: 250 },
});
const idempotency = createIdempotency({ store: keys, scope: (request) => request.headers.get('x-account') ?? '' });

type State = { order: number; amount: number };
/** Keys whose phase 1 ran in this request: `x-behave: pause` pauses only those (a resumed request goes on). */
const fresh = new Set<string>();
const payments = providerCall<State, { id: string }, pg.PoolClient>({
  client,
  pool: phasePool,
  async begin(tx, { scope, key, json }) {
    const { amount } = json as { amount: number };
    const { rows } = await tx.query(
      "INSERT INTO orders (scope, key, amount, state) VALUES ($1, $2, $3, 'pending') RETURNING id",
      [scope, key, amount],
    );
    fresh.add(key);
    return { order: Number(rows[0].id), amount };
  },
  async call(intent, state, { key, request }) {
    say(`phase1 ${key}`);
    if (fresh.delete(key) && request.headers.get('x-behave') === 'pause') await sleep(30_000);
    say(`calling ${key}`);
    const res = await intent.post('charges', { json: { amount: state.amount, order: state.order } });
    return res.data as { id: string };
  },
  async finish(tx, state, outcome) {
    const charge = outcome.via === 'provider' ? outcome.result.id : `reconciled:${outcome.outcome}`;
    await tx.query("UPDATE orders SET state = 'paid', charge = $2 WHERE id = $1", [state.order, charge]);
    return { status: 201, body: { order: state.order, charge } };
  },
});

const app = express();
app.post('/payments', idempotent(idempotency, payments));
const server = createServer(app);
server.listen(config.port, '127.0.0.1', () => say(`URL http://127.0.0.1:${(server.address() as AddressInfo).port}`));
