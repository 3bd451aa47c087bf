/**
 * Offline is a state (issue 18 §1), in real Chromium with its network switched off by the
 * browser context: nothing leaves while offline, no attempt is spent, the page says it
 * waits, and the same call goes on under the same key once the network is back.
 */
import { expect, expectState, test } from '../fixtures.ts';

test('offline before the click: waits, sends nothing; back online: one charge', async ({ page, api, openCheckout }) => {
  const key = await openCheckout(page);
  await page.context().setOffline(true);
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('paused')).toHaveText('yes');
  await expectState(page, 'pending');
  await page.waitForTimeout(1_500); // long enough for five attempts of the old behaviour
  expect(await api.payments()).toEqual([]);
  await expect(page.getByTestId('state')).not.toHaveText('unknown');

  await page.context().setOffline(false);
  await expectState(page, 'success');
  await expect(page.getByTestId('paused')).toHaveText('no');
  const payments = await api.payments();
  expect(payments.map((p) => [p.outcome, p.key])).toEqual([['created', key]]);
});

test('offline mid-call (the request left, no answer yet): back online, the retry is replayed, one charge', async ({
  page,
  api,
  openCheckout,
}) => {
  // The server charges, then its answer is lost with the connection (a fresh one: no hidden
  // resend by Chromium), while the browser has gone offline.
  await api.control({ hold: true, drop: 1, keepAlive: false });
  const key = await openCheckout(page);
  await page.getByTestId('pay').click();
  await api.waitForHeld(1);
  await page.context().setOffline(true);
  await api.control({ release: true });
  await expect(page.getByTestId('paused')).toHaveText('yes');
  await expectState(page, /pending|retrying/);

  await page.context().setOffline(false);
  await expectState(page, 'success');
  const payments = await api.payments();
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
});

test('an online event while navigator.onLine is still false sends nothing (issue 32 §4)', async ({
  page,
  api,
  openCheckout,
}) => {
  const key = await openCheckout(page);
  await page.context().setOffline(true);
  await page.getByTestId('pay').click();
  await expect(page.getByTestId('paused')).toHaveText('yes');
  // What Chromium does in a page it unloads: `online` fires while the browser is still offline.
  const onLine = await page.evaluate(() => {
    window.dispatchEvent(new Event('online'));
    return navigator.onLine;
  });
  expect(onLine).toBe(false);
  await page.waitForTimeout(300);
  await expect(page.getByTestId('attempts')).toHaveText('0');
  await expect(page.getByTestId('paused')).toHaveText('yes');

  await page.context().setOffline(false);
  await expectState(page, 'success');
  await expect(page.getByTestId('attempts')).toHaveText('1');
  expect((await api.payments()).map((p) => [p.outcome, p.key])).toEqual([['created', key]]);
});
