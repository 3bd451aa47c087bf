/**
 * The demo checkout in real Chromium against the SQLite contract server. Every test has
 * its own server and database, and ends by reading the ledger.
 */
import {
  claimedKey,
  expect,
  expectLedgerShown,
  expectState,
  releaseAndExpectOneReplayedCharge,
  test,
} from '../fixtures.ts';

test('a double click sends one payment', async ({ page, api, openCheckout, shot }) => {
  await api.control({ hold: true });
  const key = await openCheckout(page);
  await shot(page, '01-ready');

  const pay = page.getByTestId('pay');
  await pay.dblclick();
  await pay.click();
  await api.waitForHeld(1);
  await expectState(page, 'pending');
  await pay.click();
  await shot(page, '02-paying');
  await api.control({ release: true });
  await expectState(page, 'success');
  await shot(page, '03-paid');

  const payments = await api.payments();
  expect(payments.map((p) => p.outcome)).toEqual(['created']);
  expect(payments[0]!.key).toBe(key);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});

for (const { name, keepAlive, attempts } of [
  // When the POST rode a reused connection, Chromium itself resends it (a hidden retry,
  // with the same key): the page sees one attempt. Whether the connection is reused is
  // Chromium's choice, so either count is right here.
  { name: 'a keep-alive connection', keepAlive: true, attempts: /^[12]$/ },
  // On a fresh connection the failure reaches the page, and oncely retries.
  { name: "oncely's retry", keepAlive: false, attempts: /^2$/ },
]) {
  test(`a response dropped after the commit is replayed on ${name}`, async ({ page, api, openCheckout, shot }) => {
    await api.control({ drop: 1, keepAlive });
    const key = await openCheckout(page);

    await page.getByTestId('pay').click();
    await expectState(page, 'success');
    await expect(page.getByTestId('replayed')).toHaveText('yes');
    await expect(page.getByTestId('attempts')).toHaveText(attempts);
    await shot(page, '01-replayed');

    const payments = await api.payments();
    expect(payments.map((p) => [p.outcome, p.dropped ?? false])).toEqual([
      ['created', true],
      ['replayed', false],
    ]);
    expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
    await expectLedgerShown(page, 1);
    expect(await api.ledger()).toHaveLength(1);
  });
}

test('a reload while the server holds the request resumes with the same key', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await api.control({ hold: true });
  const key = await openCheckout(page);
  await page.getByTestId('pay').click();
  await api.waitForHeld(1);
  await expectState(page, 'pending');
  await shot(page, '01-in-flight');

  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  // The resumed request reaches the server with the same key while the first is still held: 409.
  await expect
    .poll(async () => (await api.payments()).filter((p) => p.outcome === 'in_progress').length)
    .toBeGreaterThan(0);
  await expect(page.getByTestId('state')).toHaveText(/pending|retrying/);
  await shot(page, '02-resumed-waiting');

  await releaseAndExpectOneReplayedCharge(page, api, key, shot);
});

test('a reload right after the click resumes with the same key and charges once', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await api.control({ delay: 300 });
  const key = await openCheckout(page);
  // No wait between the click and the reload: the in_flight write and the request may or
  // may not have happened. Whatever did, the reloaded page holds the same key.
  await page.getByTestId('pay').click();
  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  await shot(page, '01-reloaded');
  // A never-sent intent waits for Pay; an in_flight one resumes by itself; a paid one shows success.
  await expect(page.getByTestId('state')).toHaveText(/idle|pending|retrying|success/);
  if ((await page.getByTestId('state').textContent()) === 'idle') await page.getByTestId('pay').click();
  await expectState(page, 'success');
  const payments = await api.payments();
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});

test('a reload in the same task as the click (request sent, in_flight write maybe not) resumes by itself with the same key, one charge', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await api.control({ delay: 300 });
  const key = await openCheckout(page);
  // The lock has been kept since mount: the click sends at once and the in_flight write goes
  // out with the request. Reload before either can be answered.
  await page.evaluate(() => {
    document.querySelector<HTMLButtonElement>('[data-testid="pay"]')!.click();
    location.reload();
  });
  await page.waitForLoadState('load');
  expect(await claimedKey(page)).toBe(key);
  // The click noted the intent as sent (localStorage) before the request left: the reloaded
  // page resumes it by itself, even if its IndexedDB write never landed. Never `idle`, so
  // "New order" cannot mint a second key for a payment that may have been made.
  await expect(page.getByTestId('stored-state')).toHaveText(/in_flight|succeeded/);
  await expectState(page, 'success');
  await shot(page, '01-reloaded-and-resumed');
  const payments = await api.payments();
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  expect(await api.ledger()).toHaveLength(1);
});

test('two tabs pressing Pay charge once and both show success', async ({ context, api, openCheckout, shot }) => {
  await api.control({ delay: 500 });
  const first = await context.newPage();
  const second = await context.newPage();
  const key = await openCheckout(first);
  expect(await openCheckout(second)).toBe(key);

  await Promise.all([first.getByTestId('pay').click(), second.getByTestId('pay').click()]);
  await expectState(first, 'success');
  await expectState(second, 'success');
  await shot(first, '01-first-tab');
  await shot(second, '02-second-tab');

  const payments = await api.payments();
  expect(payments.filter((p) => p.outcome === 'created')).toHaveLength(1);
  // One request at a time: the second tab's request (for the replay) only left once the first was answered.
  expect(payments.filter((p) => p.outcome === 'in_progress')).toHaveLength(0);
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  await expectLedgerShown(second, 1);
  expect(await api.ledger()).toHaveLength(1);
});

test('409 in progress for 3 s: the page waits and then succeeds', async ({ page, api, openCheckout, shot }) => {
  await api.control({ conflictFor: 3000 });
  await openCheckout(page);
  const started = Date.now();

  await page.getByTestId('pay').click();
  await expectState(page, 'retrying');
  await shot(page, '01-waiting-on-409');
  await expectState(page, 'success', 15_000);
  expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
  await shot(page, '02-paid');

  const outcomes = (await api.payments()).map((p) => p.outcome);
  expect(outcomes.filter((o) => o === 'conflict_fault').length).toBeGreaterThanOrEqual(3);
  expect(outcomes.at(-1)).toBe('created');
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});

test('a cart changed after sending is a clear mismatch, and no new charge', async ({
  page,
  api,
  openCheckout,
  shot,
}) => {
  await openCheckout(page);
  await page.getByTestId('pay').click();
  await expectState(page, 'success');

  await page.getByTestId('amount').fill('50');
  await page.getByTestId('pay').click();
  await expectState(page, 'error');
  await expect(page.getByTestId('mismatch')).toContainText('The cart changed after payment was sent');
  await shot(page, '01-mismatch');

  // Caught in the browser: the changed request never left it.
  expect((await api.payments()).map((p) => p.outcome)).toEqual(['created']);
  const ledger = await api.ledger();
  expect(ledger).toHaveLength(1);
  expect(ledger[0]!.amount).toBe(42);
  await expectLedgerShown(page, 1);
});

test('a 5xx before the commit is retried and charges once', async ({ page, api, openCheckout, shot }) => {
  await api.control({ failBeforeCommit: 1 });
  await openCheckout(page);

  await page.getByTestId('pay').click();
  await expectState(page, 'success');
  await expect(page.getByTestId('replayed')).toHaveText('no');
  await expect(page.getByTestId('attempts')).toHaveText('2');
  await shot(page, '01-paid-after-503');

  expect((await api.payments()).map((p) => p.outcome)).toEqual(['failed_before_commit', 'created']);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});

test('an unknown outcome keeps its key; Pay resumes it later', async ({ page, api, openCheckout, shot }) => {
  await api.control({ failBeforeCommit: 100 });
  const key = await openCheckout(page, { maxAttempts: 3 });

  await page.getByTestId('pay').click();
  await expectState(page, 'unknown');
  await shot(page, '01-unknown');
  expect(await api.ledger()).toHaveLength(0); // nothing committed

  await api.control({ failBeforeCommit: 0 });
  await page.getByTestId('pay').click();
  await expectState(page, 'success');
  await shot(page, '02-resumed');

  const payments = await api.payments();
  expect(new Set(payments.map((p) => p.key))).toEqual(new Set([key]));
  expect(payments.map((p) => p.outcome)).toEqual([
    'failed_before_commit',
    'failed_before_commit',
    'failed_before_commit',
    'created',
  ]);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});

test('a paid checkout reloaded shows success and cannot charge again', async ({ page, api, openCheckout, shot }) => {
  const key = await openCheckout(page);
  await page.getByTestId('pay').click();
  await expectState(page, 'success');

  await page.reload();
  expect(await claimedKey(page)).toBe(key);
  await expectState(page, 'success');
  await expect(page.getByTestId('stored-state')).toHaveText('succeeded');
  await shot(page, '01-reloaded');

  await page.getByTestId('pay').click();
  await expectState(page, 'success');
  await expect(page.getByTestId('replayed')).toHaveText('yes');
  await shot(page, '02-paid-again-is-replay');

  expect((await api.payments()).map((p) => p.outcome)).toEqual(['created', 'replayed']);
  await expectLedgerShown(page, 1);
  expect(await api.ledger()).toHaveLength(1);
});
