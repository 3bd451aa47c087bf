/**
 * Playwright fixtures: a fresh API server (Express on `oncely/server`) with a fresh SQLite
 * database per test (`api`),
 * the page server once per worker (`site`), and helpers to open the checkout and read
 * what it shows.
 */
import { test as base, expect, type Page, type TestInfo } from '@playwright/test';
import { BUILD_DIR } from './app/build.ts';
import { type ApiServer, type ControlState, startApiServer } from './server/api-server.ts';
import type { ControlRequest } from './server/faults.ts';
import type { Charge } from './server/ledger.ts';
import type { RequestLogEntry } from './server/payments.ts';
import { type StaticServer, startStaticServer } from './server/static-server.ts';

export { expect };

/** The test's API server, driven over HTTP like any client would. */
export interface Api {
  readonly url: string;
  readonly server: ApiServer;
  /** `POST /__control`: set faults, `{ release: true }`, `{ reset: true }`. */
  control(request: ControlRequest): Promise<ControlState>;
  /** `GET /__control`: faults, held requests, request log. */
  state(): Promise<ControlState>;
  /** `GET /ledger`: every charge committed. */
  ledger(): Promise<Charge[]>;
  /** The logged `POST /payments` requests (answered or dropped). */
  payments(): Promise<readonly RequestLogEntry[]>;
  /** Waits until `count` requests are held by `{ hold: true }`. */
  waitForHeld(count?: number): Promise<void>;
}

export interface OpenOptions {
  cart?: string;
  maxAttempts?: number;
  /** Registers the page's service worker (`?sw=1`), so that it reloads offline. */
  sw?: boolean;
}

export interface CheckoutFixtures {
  api: Api;
  /** Opens the checkout page for this test's API, and waits for the key to be claimed. Returns the key. */
  openCheckout(page: Page, options?: OpenOptions): Promise<string>;
  /** The page URL for this test's API. */
  checkoutUrl(options?: OpenOptions): string;
  /** Saves a screenshot as a test artifact (`test-results/<test>/<name>.png`). */
  shot(page: Page, name: string): Promise<void>;
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

function makeApi(server: ApiServer): Api {
  const api: Api = {
    url: server.url,
    server,
    control: async (request) =>
      json<ControlState>(
        await fetch(`${server.url}/__control`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(request),
        }),
      ),
    state: async () => json<ControlState>(await fetch(`${server.url}/__control`)),
    ledger: async () => (await json<{ charges: Charge[] }>(await fetch(`${server.url}/ledger`))).charges,
    payments: async () => (await api.state()).requests,
    waitForHeld: async (count = 1) => {
      await expect
        .poll(async () => (await api.state()).faults.held, { message: `${count} held request(s)` })
        .toBe(count);
    },
  };
  return api;
}

export const test = base.extend<CheckoutFixtures, { site: StaticServer }>({
  site: [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright reads fixture dependencies from this pattern.
    async ({}, use) => {
      const site = await startStaticServer({ root: BUILD_DIR });
      await use(site);
      await site.close();
    },
    { scope: 'worker' },
  ],
  // biome-ignore lint/correctness/noEmptyPattern: Playwright reads fixture dependencies from this pattern.
  api: async ({}, use) => {
    const server = await startApiServer();
    await use(makeApi(server));
    await server.close();
  },
  checkoutUrl: async ({ site, api }, use) => {
    await use((options = {}) =>
      site.pageUrl(api.url, {
        ...(options.cart ? { cart: options.cart } : {}),
        ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
        ...(options.sw ? { sw: 1 } : {}),
      }),
    );
  },
  openCheckout: async ({ checkoutUrl }, use) => {
    await use(async (page, options) => {
      await page.goto(checkoutUrl(options));
      return claimedKey(page);
    });
  },
  // biome-ignore lint/correctness/noEmptyPattern: Playwright reads fixture dependencies from this pattern.
  shot: async ({}, use, testInfo: TestInfo) => {
    await use(async (page, name) => {
      await page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage: true });
    });
  },
});

/** The key the page shows once its intent is claimed (before any click). */
export async function claimedKey(page: Page): Promise<string> {
  const key = page.getByTestId('key');
  await expect(key).not.toHaveText('…');
  return (await key.textContent())!.trim();
}

/** Waits for the hook status the page shows (`idle`, `pending`, `retrying`, `success`, `error`, `unknown`). */
export async function expectState(page: Page, state: string | RegExp, timeout?: number): Promise<void> {
  await expect(page.getByTestId('state')).toHaveText(state, timeout ? { timeout } : {});
}

/** Waits for the page's own ledger panel (polled from `GET /ledger`) to show `count` charges. */
export async function expectLedgerShown(page: Page, count: number): Promise<void> {
  await expect(page.getByTestId('ledger-count')).toHaveText(String(count));
}

/**
 * Ends a held-request scenario: releases the server, expects the page to show a replayed
 * success, every request to have carried `key`, and exactly one charge.
 */
export async function releaseAndExpectOneReplayedCharge(
  page: Page,
  api: Api,
  key: string,
  shot: (page: Page, name: string) => Promise<void>,
): Promise<void> {
  await api.control({ release: true });
  await expectState(page, 'success');
  await expect(page.getByTestId('replayed')).toHaveText('yes');
  await shot(page, '03-paid');
  const payments = await api.payments();
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
}
