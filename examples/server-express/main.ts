// Your own server: an Express app whose payments route runs once per idempotency key
// (oncely/server), and the oncely client calling it over HTTP on 127.0.0.1. The first
// answer is lost on the way back (the payment is made); the client retries with the same
// key and gets the stored answer, marked as a replay: one payment.
//
//   npm run build && node examples/server-express/main.ts
//
// The key store here is MemoryKeyStore (one process, for an example); on PostgreSQL use
// PostgresKeyStore from 'oncely/postgres' and write the payment with `tx` (docs/server.md).
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createClient, MemoryStore } from 'oncely';
import { createIdempotency, MemoryKeyStore, type MemoryTransaction } from 'oncely/server';
import { idempotent } from 'oncely/server/express';

const payments: { id: string; account: string; amount: number }[] = [];

const idempotency = createIdempotency<MemoryTransaction>({
  store: new MemoryKeyStore(),
  // Keys are per account: the same key from two accounts is two keys.
  scope: (request) => request.headers.get('x-account-id') ?? '',
});

const app = express();
app.use(express.json());
app.post(
  '/api/payments',
  idempotent(idempotency, async ({ tx, json, scope }) => {
    const { amount } = json as { amount: number };
    const payment = { id: `pay_${payments.length + 1}`, account: scope, amount };
    tx.onCommit(() => payments.push(payment)); // written with the key, or not at all
    return { status: 201, body: payment };
  }),
);
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;

let lost = 0;
const api = createClient({
  baseUrl: `http://127.0.0.1:${port}/api/`,
  scope: 'acct_1',
  store: new MemoryStore(),
  headers: { 'x-account-id': 'acct_1' },
  retry: { baseDelay: 50 },
  // The network: the first answer is lost after the server has committed the payment.
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    if (lost++ === 0) throw new TypeError('fetch failed: the connection was reset');
    return response;
  },
});

const checkout = await api.intent('checkout:cart_42');
const res = await checkout.post('payments', { json: { amount: 4200 } });
console.log(`HTTP ${res.status}, replayed: ${res.replayed}, attempts: ${res.attempts}`, res.data);

assert.equal(res.status, 201);
assert.equal(res.replayed, true);
assert.equal(payments.length, 1, 'exactly one payment');
console.log(`payments made: ${payments.length}`);
server.closeAllConnections();
server.close();
