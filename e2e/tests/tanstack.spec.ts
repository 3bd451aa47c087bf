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

test('TanStack Query, two tabs that hold the lock: the other tab asks for it and pays, the first gets the replay, one charge', async ({
  context,
  api,
  checkoutUrl,
  shot,
}) => {
  await api.control({ hold: true });
  const url = `${checkoutUrl()}&ui=tanstack`;
  const first = await context.newPage();
  await first.goto(url);
  const key = await claimedKey(first); // the first tab takes the intent's lock and keeps it
  const second = await context.newPage();
  await second.goto(url);
  expect(await claimedKey(second)).toBe(key);

  await second.getByTestId('pay').click(); // asks the first tab for the lock
  await api.waitForHeld(1);
  await first.getByTestId('pay').click(); // waits for the lock: nothing leaves while the second sends
  await expectState(first, 'pending');
  await expectState(second, 'pending');
  await shot(second, '01-second-paying');

  await api.control({ release: true });
  await expectState(second, 'success');
  await expectState(first, 'success');
  await expect(second.getByTestId('replayed')).toHaveText('no');
  await expect(first.getByTestId('replayed')).toHaveText('yes');
  // No 409 in between: the first tab's request left only once the second's was answered.
  const payments = await api.payments();
  expect(payments.map((p) => [p.outcome, p.key])).toEqual([
    ['created', key],
    ['replayed', key],
  ]);
  expect(await api.ledger()).toHaveLength(1);
});
