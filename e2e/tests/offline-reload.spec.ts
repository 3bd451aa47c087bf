/**
 * A reload while offline, then online (issue 18 §1). The page registers its service worker
 * (`?sw=1`, e2e/app/sw.ts), which keeps the shell in the Cache API, so it reloads with the
 * network off; the intent is in IndexedDB, and the hook resumes it by itself under the same
 * key. Every status the page showed, across the reload, is recorded: it never says
 * `unknown` ("may have happened") and never fails.
 */
import type { BrowserContext, Page } from '@playwright/test';
import { claimedKey, expect, expectState, test } from '../fixtures.ts';

const SEEN = 'e2e:states-seen';

/** Records every status the page shows, in sessionStorage (kept across reloads of the tab). */
async function recordStates(context: BrowserContext): Promise<void> {
  await context.addInitScript((key) => {
    const seen: string[] = JSON.parse(sessionStorage.getItem(key) ?? '[]');
    new MutationObserver(() => {
      const state = document.querySelector('[data-testid="state"]')?.textContent;
      if (!state || seen.at(-1) === state) return;
      seen.push(state);
      sessionStorage.setItem(key, JSON.stringify(seen));
    }).observe(document, { subtree: true, childList: true, characterData: true });
  }, SEEN);
}

const statesSeen = (page: Page): Promise<string[]> =>
  page.evaluate((key) => JSON.parse(sessionStorage.getItem(key) ?? '[]'), SEEN);

/** Waits until the service worker controls the page: from then on it can reload offline. */
async function untilOfflineCapable(page: Page): Promise<void> {
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
}

/** Reloads with the network off: the shell must come from the service worker's cache. */
async function reloadOffline(page: Page, key: string): Promise<void> {
  const response = await page.reload();
  expect(response?.fromServiceWorker()).toBe(true);
  expect(await claimedKey(page)).toBe(key);
}

test('offline before the click, a reload while offline, back online: the intent resumes by itself, one charge', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await recordStates(page.context());
  const key = await openCheckout(page, { sw: true });
  await untilOfflineCapable(page);
  await page.context().setOffline(true);
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('paused')).toHaveText('yes');
  // The click is durable: the intent is stored in flight (it leaves as soon as it can).
  await expect(page.getByTestId('stored-state')).toHaveText('in_flight');

  await reloadOffline(page, key);
  // Nobody clicks: the reloaded page resumes the intent, which waits for the network.
  await expectState(page, 'pending');
  await expect(page.getByTestId('paused')).toHaveText('yes');
  await shot(page, '01-reloaded-offline');
  expect(await api.payments()).toEqual([]);

  await page.context().setOffline(false);
  await expectState(page, 'success');
  await expect(page.getByTestId('paused')).toHaveText('no');
  const payments = await api.payments();
  expect(payments.map((p) => [p.outcome, p.key])).toEqual([['created', key]]);
  expect(await api.ledger()).toHaveLength(1);
  const seen = await statesSeen(page);
  expect(seen).not.toContain('unknown');
  expect(seen).not.toContain('error');
  expect(seen.at(-1)).toBe('success');
});

test('offline mid-call (the request left, no answer), a reload while offline, back online: the replay, one charge', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await recordStates(page.context());
  // The server charges once released; the answer of that first request is lost in any case.
  await api.control({ hold: true, drop: 1, keepAlive: false });
  const key = await openCheckout(page, { sw: true });
  await untilOfflineCapable(page);
  await page.getByTestId('pay').click();
  await api.waitForHeld(1);
  // The request is at the server: the page goes offline and is reloaded with it unanswered.
  await page.context().setOffline(true);
  await reloadOffline(page, key);
  await expectState(page, /pending|retrying/);
  await expect(page.getByTestId('paused')).toHaveText('yes');
  await shot(page, '01-reloaded-offline');
  // The first request commits now, while the page waits offline: its answer never arrives.
  await api.control({ release: true });
  await expect.poll(async () => (await api.ledger()).length).toBe(1);

  await page.context().setOffline(false);
  await expectState(page, 'success');
  await expect(page.getByTestId('replayed')).toHaveText('yes');
  const payments = await api.payments();
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(await api.ledger()).toHaveLength(1);
  // Sent, so "unknown" would be true; but the call never ended before its answer came.
  const seen = await statesSeen(page);
  expect(seen).not.toContain('unknown');
  expect(seen).not.toContain('error');
  expect(seen.at(-1)).toBe('success');
});
