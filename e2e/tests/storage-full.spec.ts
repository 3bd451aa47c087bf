/**
 * Storage full after the payment (issue 32 §3): the server charges and answers 201, then
 * the store's outcome write fails on a real quota (CDP `Storage.overrideQuotaForOrigin`).
 * The page shows the success with the server's data, and the failed write as a warning;
 * the intent stays in flight in IndexedDB, so a reload resumes it under the same key and
 * gets the replay: one charge.
 */
import { claimedKey, expect, expectState, test } from '../fixtures.ts';

/** Chromium checks IndexedDB writes against space it looked up at the bucket's first write: a 10 MB quota from the start, then 1 byte. */
const QUOTA = 10_000_000;

test('a full quota at the outcome write: success with the charge shown, a warning, the intent resumable; one charge', async ({
  page,
  api,
  checkoutUrl,
}) => {
  await api.control({ hold: true });
  await page.goto('about:blank');
  const url = checkoutUrl();
  const origin = new URL(url).origin;
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: QUOTA });
  await page.goto(url);
  const key = await claimedKey(page);
  await page.getByTestId('pay').click();
  await api.waitForHeld(1);
  await expect(page.getByTestId('stored-state')).toHaveText('in_flight');

  // The disk fills up: the quota drops, and another write of the page (a cache) finds it full,
  // so IndexedDB refuses every write of the origin from now on (QuotaExceededError).
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 1 });
  const filler = await page.evaluate(
    (size) =>
      new Promise<string>((resolve) => {
        const open = indexedDB.open('app-cache');
        open.onupgradeneeded = () => open.result.createObjectStore('files');
        open.onsuccess = () => {
          const tx = open.result.transaction('files', 'readwrite');
          tx.objectStore('files').put('x'.repeat(size), 'video');
          tx.oncomplete = () => resolve('stored');
          tx.onabort = () => resolve(String(tx.error?.name));
        };
      }),
    QUOTA + 1_000_000,
  );
  expect(filler).toBe('QuotaExceededError');

  await api.control({ release: true });
  await expectState(page, 'success');
  await expect(page.getByTestId('charge')).toHaveText(/\(42 EUR\)$/);
  await expect(page.getByTestId('warning')).toContainText('QuotaExceededError');
  await expect(page.getByTestId('stored-state')).toHaveText('in_flight');
  expect(await api.ledger()).toHaveLength(1);

  await cdp.send('Storage.overrideQuotaForOrigin', { origin }); // space again
  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  await expectState(page, 'success'); // resumed by itself under the same key: the replay
  await expect(page.getByTestId('replayed')).toHaveText('yes');
  await expect(page.getByTestId('stored-state')).toHaveText('succeeded');
  const payments = await api.payments();
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(await api.ledger()).toHaveLength(1);
});
