/**
 * A server whose effect is a provider's (issue 28): an Express app on oncely/server over
 * PostgreSQL whose `POST /orders` is a `providerCall` — phase 1 commits the order row, the
 * downstream intent and the key's phase row; phase 2 charges the provider through the
 * oncely client under that intent; phase 3 marks the order paid and stores the answer with
 * the key. The provider (oncely's contract server, with its own ledger) loses its first
 * answer, and a buyer sends the order twice at once; then a reconciliation pass finds
 * nothing to review and the invariant check finds no drift.
 *
 *   npm run build && node examples/postgres-provider-call/main.ts
 *
 * Connects with the usual PG* environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE);
 * test/server-provider-example.test.ts runs it against a throwaway cluster.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createClient, MemoryStore } from 'oncely';
import { createContractServer } from 'oncely/mock';
import { listenContractServer } from 'oncely/node';
import {
  callsInReview,
  checkProviderInvariant,
  PostgresKeyStore,
  PostgresStore,
  providerCall,
  settleIntent,
} from 'oncely/postgres';
import { createIdempotency } from 'oncely/server';
import { idempotent } from 'oncely/server/express';
import pg from 'pg';

// The stand-in provider: charges once per idempotency key, and keeps its own ledger.
const charges: { key: string; amount: number }[] = [];
const provider = createContractServer({
  routes: {
    'POST /charges': ({ json, key }) => {
      charges.push({ key: key!, amount: (json as { amount: number }).amount });
      return { status: 201, body: { id: `ch_${charges.length}` } };
    },
  },
});
provider.inject({ fault: 'drop-after-commit', match: { path: '/charges' } }); // the first answer is lost
const providerServer = await listenContractServer(provider);

// Two pools: the key store's (each request holds one for its key) and phase 1's.
const keyPool = new pg.Pool({ max: 8 });
const phasePool = new pg.Pool({ max: 8 });
const keys = new PostgresKeyStore<pg.PoolClient>({ pool: keyPool });
const intents = new PostgresStore({ pool: phasePool });
await keys.migrate();
await intents.migrate();
await keyPool.query(
  'CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, account text, key text, amount int, state text, charge text)',
);

// The app's oncely client towards the provider; its deadline stays well under the key store's 30 s.
const payments = createClient({
  baseUrl: providerServer.url,
  scope: 'shop',
  store: intents,
  retry: { deadline: 10_000 },
});

const idempotency = createIdempotency({ store: keys, scope: (request) => request.headers.get('x-account') ?? '' });
const app = express();
app.post(
  '/orders',
  idempotent(
    idempotency,
    providerCall<{ order: number; amount: number }, { id: string }, pg.PoolClient>({
      client: payments,
      pool: phasePool,
      // Phase 1: the app's rows, committed with the downstream intent before anything is sent.
      async begin(tx, { scope, key, json }) {
        const { amount } = json as { amount: number };
        const { rows } = await tx.query(
          "INSERT INTO orders (account, key, amount, state) VALUES ($1, $2, $3, 'pending') RETURNING id",
          [scope, key, amount],
        );
        return { order: Number(rows[0].id), amount };
      },
      // Phase 2: the provider call under the downstream intent (retries, 409s, replays as everywhere).
      async call(intent, { order, amount }) {
        const res = await intent.post('charges', { json: { order, amount } });
        return res.data as { id: string };
      },
      // Phase 3, in the key's transaction: the order paid, the answer stored with the key.
      async finish(tx, { order }, outcome) {
        const charge = outcome.via === 'provider' ? outcome.result.id : `reconciled: ${outcome.outcome}`;
        await tx.query("UPDATE orders SET state = 'paid', charge = $2 WHERE id = $1", [order, charge]);
        return { status: 201, body: { order, charge } };
      },
    }),
  ),
);
const server = createServer(app).listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const shop = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

// A buyer's client (in a browser: IndexedDB), sending the same order twice at once.
const buyer = createClient({
  baseUrl: shop,
  scope: 'buyer',
  store: new MemoryStore(),
  headers: { 'x-account': 'acct_1' },
});
const checkout = await buyer.intent('checkout:cart-1');
const [first, second] = await Promise.all([
  checkout.post('orders', { json: { amount: 2500 } }),
  checkout.post('orders', { json: { amount: 2500 } }),
]);
assert.equal(first.status, 201);
assert.deepEqual(second.data, first.data);
console.log('order answered', JSON.stringify(first.data), 'then', second.replayed ? 'replayed' : 'again');

// The reconciliation job (hourly): calls whose outcome is unknown past the provider's retention.
for (const call of await callsInReview(phasePool)) {
  const found = charges.some((charge) => charge.key === call.intentKey); // the provider's listing, by key
  await settleIntent(intents, payments.scope, call.intent, {
    key: call.intentKey,
    outcome: found ? 'succeeded' : 'failed',
  });
}

// The daily invariant: the provider's charges vs distinct keys.
const report = await checkProviderInvariant(phasePool, {
  clientScope: payments.scope,
  operation: 'POST /orders',
  charges: charges.map((charge) => charge.key),
});
const orders = await keyPool.query('SELECT state FROM orders');
console.log('provider charges', charges.length, 'orders', orders.rows.length, 'invariant', JSON.stringify(report));
assert.equal(charges.length, 1);
assert.deepEqual(
  orders.rows.map((row) => row.state),
  ['paid'],
);
assert.equal(report.drift, 0);
console.log('one order, one charge');

server.close();
await providerServer.close();
await Promise.all([keyPool.end(), phasePool.end()]);
