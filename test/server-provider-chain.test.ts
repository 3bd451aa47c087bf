/**
 * The chain of issue 28 end to end, at the node level: the oncely client (SQLite store) →
 * an Express app on oncely/server + PostgreSQL whose handler is a providerCall (a child
 * process, test/server-matrix/provider-app.ts) → the contract server as the provider, with
 * its own ledger. Faults: a double send (a second client with the same key at once), the
 * API process SIGKILLed after phase 1, SIGKILLed during phase 2 (charged, answer lost), the
 * provider's answer dropped. Each fault × RUNS checkouts; invariant: one order and one
 * provider charge per checkout intent, every checkout ends 201 with the stored answer.
 * (With the browser hop — the React checkout in Chromium — as well: e2e/tests/provider-chain.spec.ts.)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteStore } from '../node/sqlite-store.js';
import { downstreamIntent } from '../postgres/provider-call.js';
import { checkProviderInvariant } from '../postgres/provider-invariant.js';
import { type Client, createClient } from '../src/index.js';
import type { ContractServer } from '../src/mock/index.js';
import { useTestDatabase } from './postgres/database.js';
import { AppProcess } from './server-matrix/env.js';
import type { ProviderAppConfig } from './server-matrix/provider-app.js';
import { buildProviderApp, startProvider } from './server-matrix/provider-setup.js';

const RUNS = 2;
const FAULTS = ['double send', 'SIGKILL after phase 1', 'SIGKILL during phase 2', 'provider answer dropped'] as const;

const repo = fileURLToPath(new URL('..', import.meta.url));
const script = path.join(repo, '.tmp', `provider-chain-app-${process.pid}.mjs`);
const db = useTestDatabase();
const charges: string[] = [];
let provider: ContractServer;
let providerUrl = '';
let closeProvider: () => Promise<void> = async () => undefined;
let dir = '';
let app: AppProcess;
let port = 0;
const stores: SqliteStore[] = [];

async function startApp(): Promise<void> {
  const config: ProviderAppConfig = { pg: db.config, provider: providerUrl, port, leaseTtl: 1_000 };
  app = new AppProcess(script, config as never);
  await app.started();
  port = Number(new URL(app.url).port); // a restarted app takes the same one: the client's baseUrl stays
}

function client(name: string): Client {
  const store = new SqliteStore({ dir: path.join(dir, name) });
  stores.push(store);
  return createClient({
    baseUrl: `http://127.0.0.1:${port}`,
    scope: 'buyer',
    store,
    retry: { deadline: 45_000, maxAttempts: 100, baseDelay: 100, maxDelay: 600, maxRetryAfter: 1_000 },
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'oncely-provider-chain-'));
  await buildProviderApp(script);
  ({ provider, url: providerUrl, close: closeProvider } = await startProvider(db.admin, charges));
  await startApp();
}, 90_000);

afterAll(async () => {
  if (app?.alive) await app.kill();
  await Promise.all(stores.map((store) => store.close().catch(() => undefined)));
  await closeProvider();
  await rm(script, { force: true });
  await rm(dir, { recursive: true, force: true });
});

/** Waits until the provider has charged under the downstream key of `key`. */
async function charged(key: string): Promise<void> {
  const downstream = downstreamIntent('shop', '', 'POST /payments', key).key;
  for (let i = 0; i < 250 && !charges.includes(downstream); i++) await new Promise((r) => setTimeout(r, 20));
  expect(charges).toContain(downstream);
}

it(`oncely client (SQLite) → Express on oncely/server + PostgreSQL → provider: ${FAULTS.length} faults × ${RUNS} runs, one order and one charge per checkout`, async () => {
  const buyer = client('buyer');
  const keys: string[] = [];
  for (let run = 0; run < RUNS; run++) {
    for (const fault of FAULTS) {
      const checkout = await buyer.intent(`checkout:${run}:${fault}`);
      keys.push(checkout.key);
      const body = { json: { amount: 100 + run } };
      if (fault === 'double send') {
        // A second client (another store, another process's worth) with the same key, at the same instant.
        const twin = await client(`twin-${run}`).intent(`checkout:${run}:${fault}`, { key: checkout.key });
        provider.inject({ fault: 'delay', ms: 500, match: { path: '/charges' } });
        const [a, b] = await Promise.all([checkout.post('payments', body), twin.post('payments', body)]);
        expect([a.status, b.status]).toEqual([201, 201]);
        expect(b.data).toEqual(a.data);
        expect(a.replayed || b.replayed).toBe(true);
        continue;
      }
      if (fault === 'provider answer dropped') {
        provider.inject({ fault: 'drop-after-commit', match: { path: '/charges' } });
        expect((await checkout.post('payments', body)).status).toBe(201);
        continue;
      }
      const pause = fault === 'SIGKILL after phase 1';
      if (!pause) provider.inject({ fault: 'delay', ms: 3_000, when: 'after-commit', match: { path: '/charges' } });
      const sent = checkout.post('payments', { ...body, headers: pause ? { 'x-behave': 'pause' } : {} });
      if (pause) await app.waitFor(`phase1 ${checkout.key}`, 30_000);
      else await charged(checkout.key);
      await app.kill();
      await startApp();
      const res = await sent;
      expect(res.status).toBe(201);
      expect(res.attempts).toBeGreaterThan(1);
    }
  }
  const orders = await db.admin.query('SELECT key, state FROM orders');
  const perKey = (key: string) => charges.filter((c) => c === downstreamIntent('shop', '', 'POST /payments', key).key);
  const report = {
    checkouts: keys.length,
    charges: charges.length,
    orders: orders.rows.length,
    paid: orders.rows.filter((row) => row.state === 'paid').length,
  };
  console.log(`provider chain: ${FAULTS.length} faults × ${RUNS} runs`, JSON.stringify(report));
  expect(report).toEqual({
    checkouts: RUNS * FAULTS.length,
    charges: keys.length,
    orders: keys.length,
    paid: keys.length,
  });
  for (const key of keys) expect(perKey(key)).toHaveLength(1);
  const invariant = await checkProviderInvariant(db.admin, {
    clientScope: 'shop',
    operation: 'POST /payments',
    charges,
  });
  expect(invariant.drift).toBe(0);
}, 240_000);
