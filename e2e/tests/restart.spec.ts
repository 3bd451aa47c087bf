/**
 * A browser closed while the payment is in flight, and started again on the same
 * profile: the key in IndexedDB survives, and the payment resumes under it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from '@playwright/test';
import { chromiumLaunchOptions } from '../chromium.ts';
import { claimedKey, expect, expectState, releaseAndExpectOneReplayedCharge, test } from '../fixtures.ts';

const launch = (userDataDir: string): Promise<BrowserContext> =>
  chromium.launchPersistentContext(userDataDir, { ...chromiumLaunchOptions, headless: true });

const firstPage = async (context: BrowserContext) => context.pages()[0] ?? (await context.newPage());

test('a browser restarted mid-flight resumes with the same key', async ({ api, checkoutUrl, shot }) => {
  const userDataDir = mkdtempSync(join(tmpdir(), 'oncely-profile-'));
  let context: BrowserContext | undefined;
  try {
    await api.control({ hold: true });
    context = await launch(userDataDir);
    let page = await firstPage(context);
    await page.goto(checkoutUrl());
    const key = await claimedKey(page);
    await page.getByTestId('pay').click();
    await api.waitForHeld(1);
    await expectState(page, 'pending');
    await shot(page, '01-in-flight-before-close');
    await context.close();

    context = await launch(userDataDir);
    page = await firstPage(context);
    await page.goto(checkoutUrl());
    expect(await claimedKey(page)).toBe(key);
    await expect
      .poll(async () => (await api.payments()).filter((p) => p.outcome === 'in_progress').length)
      .toBeGreaterThan(0);
    await shot(page, '02-resumed-after-restart');

    await releaseAndExpectOneReplayedCharge(page, api, key, shot);
  } finally {
    await context?.close();
    rmSync(userDataDir, { recursive: true, force: true });
  }
});
