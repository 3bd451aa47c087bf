/**
 * The checkout through TanStack Query (`?ui=tanstack`): `useMutation` with `oncely/tanstack`
 * options and the QueryClient persisted to localStorage.
 */
import { PERSIST_KEY } from '../app/tanstack-checkout.tsx';
import { claimedKey, expect, expectState, releaseAndExpectOneReplayedCharge, test } from '../fixtures.ts';

test('TanStack Query: a reload mid-flight resumes the persisted mutation with the same key, one charge', async ({
  page,
  api,
  checkoutUrl,
  shot,
}) => {
  await api.control({ hold: true });
  await page.goto(`${checkoutUrl()}&ui=tanstack`);
  const key = await claimedKey(page);
  await page.getByTestId('pay').click();
  await api.waitForHeld(1);
  await expectState(page, 'pending');
  // TanStack has written the pending mutation (with its variables) before the reload.
  await expect
    .poll(() => page.evaluate((k) => JSON.parse(localStorage.getItem(k) ?? 'null')?.clientState.mutations, PERSIST_KEY))
    .toMatchObject([{ mutationKey: ['checkout'], state: { status: 'pending' } }]);
  await shot(page, '01-in-flight');

  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  // Nobody clicks: the restored mutation is resumed, with the same key; the first is still held, so 409.
  await expect
    .poll(async () => (await api.payments()).filter((p) => p.outcome === 'in_progress').length)
    .toBeGreaterThan(0);
  await expectState(page, 'pending');
  await shot(page, '02-resumed-waiting');

  await releaseAndExpectOneReplayedCharge(page, api, key, shot);
});
