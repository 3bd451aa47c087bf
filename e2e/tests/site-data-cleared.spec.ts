/**
 * Site data cleared mid-payment (issue 32 §1): the user (or a privacy extension) clears the
 * origin's IndexedDB and localStorage while a checkout's request is before, on or past the
 * wire. The page that is still open puts back the intents it knew (a sent key is a fact at
 * the server), so a reload finds the same key and a second click gets the replay: one
 * charge, on the fast path and on the strict (slow) one — another tab holding the lock, a
 * hidden tab, localStorage refusing writes.
 */
import type { Page } from '@playwright/test';
import { type Api, claimedKey, expect, expectState, test } from '../fixtures.ts';

type Moment = 'before the send' | 'in flight' | 'after the answer' | 'at a random moment';
/** A reload this long after the clear (a person takes seconds). */
const REACTION_MS = 250;
const MOMENTS: Moment[] = ['before the send', 'in flight', 'after the answer', 'at a random moment'];
/** On the strict path (where every recorded double charge was), the two moments a sent key can be lost at. */
const STRICT_MOMENTS: Moment[] = ['in flight', 'after the answer'];

/** `Storage.clearDataForOrigin`, what "Clear site data" does: IndexedDB, localStorage and the rest. */
async function clearSiteData(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Storage.clearDataForOrigin', { origin: new URL(page.url()).origin, storageTypes: 'all' });
  await cdp.detach();
}

/** How a variant makes the click take its path: what it prepares before the page opens, and how it clicks. */
type Variant = {
  name: string;
  /** `prepare` again for each checkout (a holder tab), not once per page. */
  perCheckout?: boolean;
  /** The moments tried (each a checkout of its own cart); all of them by default. */
  moments?: Moment[];
  /** Set up before the checkout opens (init scripts, a holder tab). */
  prepare?: (page: Page, open: (page: Page) => Promise<string>) => Promise<void>;
  click: (page: Page) => Promise<void>;
};

const clickPay = (page: Page) => page.getByTestId('pay').click();

const VARIANTS: Variant[] = [
  { name: 'the fast path (kept lock, note in localStorage)', click: clickPay },
  {
    name: 'the strict path: another tab holds the lock',
    moments: STRICT_MOMENTS,
    perCheckout: true,
    prepare: async (page, open) => {
      const holder = await page.context().newPage();
      await open(holder); // mounted first: its hook keeps the intent's Web Lock
    },
    click: clickPay,
  },
  {
    name: 'the strict path: a hidden tab',
    moments: STRICT_MOMENTS,
    click: (page) =>
      page.evaluate(() => {
        // A background tab keeps no lock between calls (browser/lock-holds.ts).
        Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
        document.dispatchEvent(new Event('visibilitychange'));
        document.querySelector<HTMLButtonElement>('[data-testid="pay"]')!.click();
      }),
  },
  {
    name: 'the strict path: localStorage refusing writes',
    moments: STRICT_MOMENTS,
    prepare: async (page) => {
      await page.addInitScript(() => {
        Storage.prototype.setItem = () => {
          throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        };
      });
    },
    click: clickPay,
  },
];

/** One checkout (its own cart): click, clear at `moment`, let the call end, reload, click again. */
async function payThroughAClear(page: Page, api: Api, variant: Variant, moment: Moment): Promise<string> {
  const key = await claimedKey(page);
  const hold = moment === 'in flight';
  if (hold) await api.control({ hold: true });
  if (moment === 'before the send') await clearSiteData(page);
  await variant.click(page);
  if (hold) {
    await api.waitForHeld(1);
    await clearSiteData(page);
    await api.control({ release: true });
  }
  if (moment === 'at a random moment') {
    await page.waitForTimeout(Math.floor(Math.random() * 60));
    await clearSiteData(page);
  }
  await expectState(page, 'success');
  if (moment === 'after the answer') await clearSiteData(page);
  // A person reloads a while after clearing; the open page puts its intents back within a few ms.
  await page.waitForTimeout(REACTION_MS);
  await page.reload();
  const again = await claimedKey(page);
  await expect(page.getByTestId('state')).toHaveText(/idle|pending|retrying|success/);
  await clickPay(page);
  await expectState(page, 'success');
  return again === key ? 'same key' : `new key ${again}`;
}

for (const variant of VARIANTS) {
  const moments = variant.moments ?? MOMENTS;
  test(`site data cleared ${moments.join(', ')}, then reload and Pay again: one charge each, on ${variant.name}`, async ({
    page,
    api,
    checkoutUrl,
  }) => {
    test.setTimeout(60_000);
    let charges = 0;
    let prepared = false;
    for (const [i, moment] of moments.entries()) {
      const cart = `cart_${i + 1}`;
      const open = async (p: Page) => {
        await p.goto(checkoutUrl({ cart }));
        return claimedKey(p);
      };
      // Prepared once per page (init scripts stay); a holder tab per checkout.
      if (!prepared || variant.perCheckout) await variant.prepare?.(page, open);
      prepared = true;
      await open(page);
      const keyAfterReload = await payThroughAClear(page, api, variant, moment);
      charges++;
      const ledger = await api.ledger();
      expect({ moment, charges: ledger.length }).toEqual({ moment, charges });
      // Cleared before the send, the key never left: a new one is fine. Otherwise the same key came back.
      if (moment !== 'before the send' && moment !== 'at a random moment')
        expect({ moment, keyAfterReload }).toEqual({ moment, keyAfterReload: 'same key' });
      for (const p of page.context().pages()) if (p !== page) await p.close();
    }
  });
}
