/**
 * Issue 28's whole chain in real Chromium: the React checkout → an Express app on
 * `oncely/server` over PostgreSQL whose `POST /payments` is a `providerCall`
 * (e2e/server/provider-api.ts, a child process: SIGKILLed and started again on the same
 * port) → the contract server as the provider, with its own ledger. A throwaway PostgreSQL
 * cluster (test/postgres/cluster.ts) per worker. One fault per test; each ends with the page
 * "paid", one order row for the page's key, and one provider charge under its downstream key.
 */
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { type ContractServer, createContractServer } from 'oncely/mock';
import { listenContractServer } from 'oncely/node';
import { checkProviderInvariant, downstreamIntent } from 'oncely/postgres';
import pg from 'pg';
import { type Cluster, startCluster } from '../../test/postgres/cluster.ts';
import { AppProcess } from '../../test/server-matrix/env.ts';
import { claimedKey, expect, expectState, test } from '../fixtures.ts';
import type { ProviderApiConfig } from '../server/provider-api.ts';
import type { StaticServer } from '../server/static-server.ts';

const SCRIPT = fileURLToPath(new URL('../server/provider-api.ts', import.meta.url));
const ACCOUNT = 'acct_demo';
const OPERATION = 'POST /payments';
/** The provider's ledger: the idempotency key of every charge it made (a replay adds none). */
const charges: string[] = [];
let cluster: Cluster;
let db: pg.Pool;
let provider: ContractServer;
let closeProvider: () => Promise<void> = async () => undefined;
let api: AppProcess;
let apiConfig: ProviderApiConfig;
let checkouts = 0;

test.describe.configure({ mode: 'serial' });

async function startApi(): Promise<void> {
  api = new AppProcess(SCRIPT, apiConfig as never);
  await api.started();
  apiConfig.port = Number(new URL(api.url).port);
}

async function pauseAfterPhase1(): Promise<void> {
  const res = await fetch(`${api.url}/__control`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pause: true }),
  });
  expect(await res.json()).toEqual({ pause: true });
}

/** SIGKILL, then a fresh process on the same port. */
async function restartApi(): Promise<void> {
  await api.kill();
  await startApi();
}

// biome-ignore lint/correctness/noEmptyPattern: Playwright reads fixture dependencies from this pattern.
test.beforeAll(async ({}, testInfo) => {
  testInfo.setTimeout(120_000);
  charges.length = 0; // a fresh chain: a new cluster, provider and API
  checkouts = 0;
  cluster = await startCluster();
  const config = { host: cluster.host, port: cluster.port, user: cluster.user, database: cluster.database };
  db = new pg.Pool({ ...config, max: 2 });
  db.on('error', () => undefined);
  provider = createContractServer({
    routes: {
      'POST /charges': ({ key }) => {
        charges.push(key!);
        return { status: 201, body: { id: `ch_${charges.length}` } };
      },
    },
  });
  const listening = await listenContractServer(provider);
  closeProvider = listening.close;
  apiConfig = { pg: config, provider: listening.url, port: 0, leaseTtl: 1_000 };
  await startApi();
});

test.afterAll(async () => {
  try {
    if (db && checkouts > 0) {
      // The counts for issue 28's note, over every checkout of this worker: one order, paid, and one charge each.
      const { rows } = await db.query(
        "SELECT count(*)::int AS orders, count(*) FILTER (WHERE state = 'paid')::int AS paid FROM orders",
      );
      const report = { checkouts, charges: charges.length, ...(rows[0] as { orders: number; paid: number }) };
      console.log('provider chain (browser):', JSON.stringify(report));
      expect(report).toEqual({ checkouts, charges: checkouts, orders: checkouts, paid: checkouts });
    }
  } finally {
    if (api?.alive) await api.kill();
    await db?.end().catch(() => undefined);
    await closeProvider();
    await cluster?.stop();
  }
});

const downstream = (key: string) => downstreamIntent('shop', ACCOUNT, OPERATION, key).key;

/** Opens the checkout on its own cart (its own intent) against the chain's API; returns the key. */
async function open(page: Page, site: StaticServer): Promise<string> {
  const cart = `cart_${test.info().testId}_${test.info().repeatEachIndex}`;
  await page.goto(site.pageUrl(api.url, { cart, account: ACCOUNT, maxAttempts: 60 }));
  checkouts++;
  return claimedKey(page);
}

async function ordersOf(key: string): Promise<{ state: string; charge: string | null }[]> {
  const { rows } = await db.query('SELECT state, charge FROM orders WHERE scope = $1 AND key = $2', [ACCOUNT, key]);
  return rows as { state: string; charge: string | null }[];
}

/**
 * The invariant: the page ends "paid", one order row for its key (paid, with the provider's
 * charge), one provider charge under the downstream key and none else since `before`, and
 * no drift between the provider's ledger and the API's keys.
 */
async function expectPaidOnce(page: Page, key: string, before: number): Promise<void> {
  await expectState(page, 'success', 45_000);
  await expect(page.getByTestId('status')).toContainText('Payment succeeded');
  const orders = await ordersOf(key);
  expect(orders).toHaveLength(1);
  expect(orders[0]!.state).toBe('paid');
  await expect(page.getByTestId('charge')).toContainText(orders[0]!.charge!);
  expect(charges.filter((c) => c === downstream(key))).toHaveLength(1);
  expect(provider.effects(downstream(key))).toBe(1);
  expect(charges.length - before).toBe(1);
  const invariant = await checkProviderInvariant(db, { clientScope: 'shop', operation: OPERATION, charges });
  expect(invariant.drift).toBe(0);
}

/** Waits until the provider has charged under the downstream key of `key`. */
async function charged(key: string): Promise<void> {
  await expect.poll(() => charges.includes(downstream(key)), { timeout: 20_000 }).toBe(true);
}

test('a double click: one order, one charge', async ({ page, site }) => {
  const before = charges.length;
  provider.inject({ fault: 'delay', ms: 1_000, match: { path: '/charges' } });
  const key = await open(page, site);
  const pay = page.getByTestId('pay');
  await pay.dblclick();
  await pay.click();
  await api.waitFor(`calling ${key}`);
  await pay.click();
  await expectPaidOnce(page, key, before);
  await expect(page.getByTestId('attempts')).toHaveText('1');
});

test('a reload mid-flight (the provider call under way): resumed under the same key, one charge', async ({
  page,
  site,
}) => {
  const before = charges.length;
  provider.inject({ fault: 'delay', ms: 1_500, match: { path: '/charges' } });
  const key = await open(page, site);
  await page.getByTestId('pay').click();
  await api.waitFor(`calling ${key}`);
  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  await expectPaidOnce(page, key, before);
  await expect(page.getByTestId('replayed')).toHaveText('yes'); // the answer the first request stored
  expect(provider.attempts(downstream(key))).toBe(1);
});

test('the API SIGKILLed after phase 1 (the page gets 409s meanwhile): the restarted API resumes, one charge', async ({
  page,
  site,
}) => {
  test.setTimeout(60_000);
  const before = charges.length;
  const key = await open(page, site);
  await pauseAfterPhase1();
  await page.getByTestId('pay').click();
  await api.waitFor(`phase1 ${key}`);
  expect(await ordersOf(key)).toEqual([{ state: 'pending', charge: null }]);
  expect(charges).not.toContain(downstream(key));
  // While the paused process owns the key, the page's retry (its attempt timed out at 5 s) is a 409.
  await expect(page.getByTestId('events')).toContainText('409: still in progress on the server', { timeout: 20_000 });
  await restartApi();
  await api.waitFor(`calling ${key}`, 30_000); // the new process resumed from the recorded phase
  await expectPaidOnce(page, key, before);
  expect(provider.attempts(downstream(key))).toBe(1);
});

test('the API SIGKILLed during phase 2 (charged, answer lost): the provider replays, one charge', async ({
  page,
  site,
}) => {
  test.setTimeout(60_000);
  const before = charges.length;
  provider.inject({ fault: 'delay', ms: 3_000, when: 'after-commit', match: { path: '/charges' } });
  const key = await open(page, site);
  await page.getByTestId('pay').click();
  await charged(key);
  await restartApi();
  await expectPaidOnce(page, key, before);
  // Resent under the same downstream key, after the dead call's lease: the provider replayed.
  expect(provider.attempts(downstream(key))).toBeGreaterThanOrEqual(2);
  expect(Number(await page.getByTestId('attempts').textContent())).toBeGreaterThan(1);
});

test('the API SIGKILLed after phase 1, and its successor again during phase 2: one charge', async ({ page, site }) => {
  test.setTimeout(60_000);
  const before = charges.length;
  const key = await open(page, site);
  await pauseAfterPhase1();
  await page.getByTestId('pay').click();
  await api.waitFor(`phase1 ${key}`);
  provider.inject({ fault: 'delay', ms: 3_000, when: 'after-commit', match: { path: '/charges' } });
  await restartApi();
  await api.waitFor(`calling ${key}`, 30_000);
  await charged(key);
  await restartApi();
  await expectPaidOnce(page, key, before);
  expect(provider.attempts(downstream(key))).toBeGreaterThanOrEqual(2);
});

test("the provider's answer dropped: the API's retry is replayed, one charge", async ({ page, site }) => {
  const before = charges.length;
  provider.inject({ fault: 'drop-after-commit', match: { path: '/charges' } });
  const key = await open(page, site);
  await page.getByTestId('pay').click();
  await expectPaidOnce(page, key, before);
  expect(provider.attempts(downstream(key))).toBeGreaterThanOrEqual(2);
});

test('the browser offline before the click: nothing sent; back online: one charge', async ({ page, site }) => {
  const before = charges.length;
  const key = await open(page, site);
  await page.context().setOffline(true);
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('paused')).toHaveText('yes');
  expect(await ordersOf(key)).toEqual([]);
  await page.context().setOffline(false);
  await expectPaidOnce(page, key, before);
});

test('the browser offline mid-flight (the API charges meanwhile): back online, one charge', async ({ page, site }) => {
  const before = charges.length;
  provider.inject({ fault: 'delay', ms: 1_000, match: { path: '/charges' } });
  const key = await open(page, site);
  await page.getByTestId('pay').click();
  await api.waitFor(`calling ${key}`);
  await page.context().setOffline(true);
  await expect.poll(async () => (await ordersOf(key))[0]?.state, { timeout: 20_000 }).toBe('paid');
  await page.context().setOffline(false);
  await expectPaidOnce(page, key, before);
});
