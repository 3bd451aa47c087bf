/**
 * `keepalive` as documented (issue 32 §2). Chromium refuses a keepalive fetch when its
 * body's UTF-8 bytes plus those of the page's keepalive requests in flight pass 64 KiB;
 * oncely keeps its own to 32 KiB of UTF-8 in flight per page. A body of exactly 32 KiB goes
 * with keepalive (multi-byte text counted in bytes, not guessed), one byte more goes
 * without, and two calls at once share the 32 KiB. Chromium sends each at the first attempt.
 */
import { expect, test } from '../fixtures.ts';

interface Sent {
  bytes: number;
  keepalive: boolean;
  attempts: number;
}

test('bodies up to 32 KiB of UTF-8 go with keepalive, larger ones and the overflow of concurrent calls without', async ({
  page,
  api,
  openCheckout,
}) => {
  await openCheckout(page);
  // Each payment takes 300 ms at the server, so the two concurrent calls overlap however
  // slowly the page gets to the second one (on a loaded machine the first could be answered,
  // its keepalive bytes released, before the second is sent).
  await api.control({ delay: 300 });
  const results = await page.evaluate(async () => {
    /** Whether the request of each key asked the browser for keepalive. */
    const seen = new Map<string, boolean>();
    const fetch = window.fetch;
    window.fetch = (input, init) => {
      const request = input instanceof Request ? input : new Request(input, init);
      const key = request.headers.get('idempotency-key')?.replaceAll('"', '') ?? '';
      seen.set(key, Boolean(init?.keepalive ?? request.keepalive));
      return fetch(input, init);
    };
    const { client } = (window as unknown as { oncelyDemo: { client: import('oncely').Client } }).oncelyDemo;
    /** A payment whose JSON body is exactly `bytes` of UTF-8, padded with `filler`. */
    const bodyOf = (bytes: number, filler: string) => {
      const json = { amount: 1, currency: 'EUR', cart: { id: `ka_${bytes}_${filler}`, note: '' } };
      const size = () => new TextEncoder().encode(JSON.stringify(json)).length;
      const unit = new TextEncoder().encode(filler).length;
      json.cart.note = filler.repeat(Math.floor((bytes - size()) / unit));
      json.cart.note += 'x'.repeat(bytes - size());
      return json;
    };
    const pay = async (bytes: number, filler: string): Promise<Sent> => {
      const intent = await client.intent(`keepalive:${bytes}:${filler}`);
      const res = await intent.post('payments', { json: bodyOf(bytes, filler) });
      return { bytes, keepalive: seen.get(intent.key) ?? false, attempts: res.attempts };
    };
    return {
      ascii: [await pay(16_384, 'x'), await pay(32_768, 'x'), await pay(32_769, 'x')],
      multibyte: [await pay(32_768, 'é'), await pay(32_767, '€')],
      // Two at once: 20 KiB + 20 KiB > 32 KiB, so the second goes without.
      concurrent: await Promise.all([pay(20_480, 'x'), pay(20_481, 'x')]),
    };
  });
  expect(results.ascii).toEqual([
    { bytes: 16_384, keepalive: true, attempts: 1 },
    { bytes: 32_768, keepalive: true, attempts: 1 },
    { bytes: 32_769, keepalive: false, attempts: 1 },
  ]);
  expect(results.multibyte).toEqual([
    { bytes: 32_768, keepalive: true, attempts: 1 },
    { bytes: 32_767, keepalive: true, attempts: 1 },
  ]);
  expect(results.concurrent.map((r) => r.keepalive).sort()).toEqual([false, true]);
  expect(results.concurrent.map((r) => r.attempts)).toEqual([1, 1]);
  expect(await api.ledger()).toHaveLength(7);
});
