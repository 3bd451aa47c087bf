/**
 * From a second adversarial review of the kept lock (held).
 *
 * Three tabs, all holding one intent and all clicking: no starvation, no hang, waits bounded.
 * And visibility flips mid-section (a fake document per tab).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, heldIntent, setup } from '../adversarial/harness.js';

afterEach(closeAll);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

class FakePage extends EventTarget {
  visibilityState: 'visible' | 'hidden' = 'visible';
  flip(state: 'visible' | 'hidden') {
    this.visibilityState = state;
    this.dispatchEvent(new Event('visibilitychange'));
  }
}

describe('three holding tabs', () => {
  it('each clicks 4 times, all at once: every call settles, none waits more than 1.5 s', async () => {
    const { tab } = await setup(async () => {
      await delay(5);
      return { status: 201, body: { id: 'p' } };
    });
    const tabs = await Promise.all([0, 1, 2].map(() => heldIntent(tab())));
    const waits: number[] = [];
    const results = await Promise.all(
      tabs.map(async (intent) => {
        const out: string[] = [];
        for (let i = 0; i < 4; i++) {
          const t = performance.now();
          out.push(
            await intent.post('pay', { json: { a: 1 } }).then(
              (r) => String(r.status),
              (e: Error) => e.name,
            ),
          );
          waits.push(performance.now() - t);
          await delay(Math.random() * 20);
        }
        return out;
      }),
    );
    expect(results.flat().every((r) => r === '201')).toBe(true);
    expect(Math.max(...waits)).toBeLessThan(1_500);
  }, 30_000);

  it('visibility flips mid-section in every tab: all calls settle, then no lock is left held once released', async () => {
    const pages = [new FakePage(), new FakePage(), new FakePage()];
    const { tab, channel } = await setup(async () => {
      await delay(20);
      return { status: 201, body: { id: 'p' } };
    });
    const intents = [];
    const releases: (() => void)[] = [];
    for (const page of pages) {
      (globalThis as { document?: unknown }).document = page;
      const client = tab();
      const intent = await client.intent('checkout:1');
      releases.push(intent.hold());
      await intent.sync();
      intents.push(intent);
    }
    delete (globalThis as { document?: unknown }).document;
    const calls = intents.map(async (intent, i) => {
      const out: string[] = [];
      for (let k = 0; k < 3; k++) {
        const call = intent.post('pay', { json: { a: 1 } });
        await delay(5 + i * 3);
        pages[i]!.flip(k % 2 ? 'visible' : 'hidden');
        await delay(3);
        pages[(i + 1) % 3]!.flip(k % 2 ? 'hidden' : 'visible');
        out.push(
          await Promise.race([
            call.then(
              (r) => String(r.status),
              (e: Error) => e.name,
            ),
            delay(5_000).then(() => 'HANG'),
          ]),
        );
      }
      return out;
    });
    const results = (await Promise.all(calls)).flat();
    for (const p of pages) p.flip('visible');
    await delay(1_200);
    for (const r of releases) r();
    let left = -1;
    for (let i = 0; i < 40; i++) {
      left = ((await navigator.locks.query()).held ?? []).filter((l) => l.name?.startsWith(channel)).length;
      if (left === 0) break;
      await delay(50);
    }
    expect({ results, left }).toEqual({ results: Array(9).fill('201'), left: 0 });
  }, 60_000);
});
