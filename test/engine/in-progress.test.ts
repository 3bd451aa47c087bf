/**
 * A first request that holds the key for 10 s while the server answers 409 without
 * Retry-After is waited out with the default budget, in virtual time, over 100 seeds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, MemoryStore } from '../../src/index.js';
import { drive, useVirtualTime } from '../chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => restore());

/** A small seeded PRNG (mulberry32), so each run draws other jitter. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

describe('409 in progress without Retry-After', () => {
  it('a first request holding the key for 10 s is waited out in at least 99 of 100 runs, never past the deadline', async () => {
    let succeeded = 0;
    for (let seed = 1; seed <= 100; seed++) {
      const start = Date.now();
      let effects = 0;
      const fetch: typeof globalThis.fetch = async () => {
        if (Date.now() - start < 10_000) return new Response('', { status: 409 });
        effects++;
        return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
      };
      const client = createClient({
        baseUrl: 'https://api.test/',
        store: new MemoryStore(),
        fetch,
        random: seeded(seed),
      });
      const intent = await drive(client.intent('pay'));
      const outcome = await drive(intent.post('payments', { json: {} })).catch((error: unknown) => error);
      const elapsed = Date.now() - start;
      expect(elapsed).toBeLessThanOrEqual(60_000);
      if ((outcome as { status?: number }).status === 201) succeeded++;
      expect(effects).toBeLessThanOrEqual(1);
    }
    expect(succeeded).toBeGreaterThanOrEqual(99);
  });
});
