/**
 * A tab closed mid-flight still completes (issue 18 §2): small requests go with
 * `keepalive`, so one that left reaches the server even when the page goes away, and the
 * next visit resumes the intent (same key) and gets the replay. Closed at moments from 0
 * to 50 ms after the click: charged at most once while away, exactly once once back.
 */
import { expect, expectState, test } from '../fixtures.ts';

for (const delay of [0, 3, 8, 15, 25, 35, 50]) {
  test(`a tab closed ${delay} ms after the click: at most one charge, exactly one once the page is back`, async ({
    context,
    api,
    openCheckout,
  }) => {
    const first = await context.newPage();
    const key = await openCheckout(first);
    await first.getByTestId('pay').click();
    if (delay > 0) await first.waitForTimeout(delay);
    await first.close();
    await new Promise((resolve) => setTimeout(resolve, 300)); // what left arrives
    const created = async () => (await api.payments()).filter((p) => p.outcome === 'created');
    expect((await created()).length).toBeLessThanOrEqual(1);

    const again = await context.newPage();
    expect(await openCheckout(again)).toBe(key);
    // The visit resumes what was sent; what never left is still to pay.
    await expect(again.getByTestId('state')).toHaveText(/idle|pending|retrying|success/);
    if ((await again.getByTestId('state').textContent()) === 'idle') await again.getByTestId('pay').click();
    await expectState(again, 'success');
    expect(await created()).toHaveLength(1);
    expect(new Set((await api.payments()).map((p) => p.key))).toEqual(new Set([key]));
  });
}
