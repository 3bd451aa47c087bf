/**
 * The hook's observer under StrictMode-like churn (subscribe / unsubscribe / subscribe in the
 * same tick, random mutate and forget), with another tab calling the same intent. Checks: the
 * other tab's calls all settle (the lock is always handed over), and once every subscriber is
 * gone no Web Lock of the channel stays held.
 */
import fc from 'fast-check';
import { afterEach, describe, it } from 'vitest';
import { IdempotentMutationObserver } from '../../src/index.js';
import { closeAll, setup } from './harness.js';

afterEach(closeAll);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('observer churn', () => {
  it('property: no leaked lock, no starved tab', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            action: fc.constantFrom('strict-mount', 'unmount', 'mutate', 'forget', 'other-call'),
            gap: fc.nat(4),
          }),
          { minLength: 1, maxLength: 14 },
        ),
        async (steps) => {
          const { channel, tab } = await setup();
          const o = new IdempotentMutationObserver({
            client: tab(),
            intent: 'checkout:1',
            request: (_v, { intent, signal }) => intent.post('pay', { json: { a: 1 }, signal }),
          });
          const other = tab();
          const offs: (() => void)[] = [];
          const waits: Promise<unknown>[] = [];
          for (const s of steps) {
            if (s.action === 'strict-mount') {
              const off = o.subscribe(() => {});
              off();
              offs.push(o.subscribe(() => {}));
            } else if (s.action === 'unmount') offs.pop()?.();
            else if (s.action === 'mutate') waits.push(o.mutateAsync().catch(() => undefined));
            else if (s.action === 'forget') waits.push(o.forget().catch(() => undefined));
            else
              waits.push(
                other
                  .intent('checkout:1')
                  .then((i) => i.post('pay', { json: { a: 1 } }))
                  .catch(() => undefined),
              );
            await delay(s.gap);
          }
          const timeout = new Promise<string>((r) => setTimeout(() => r('HANG'), 5000));
          const results = await Promise.all(waits.map((w) => Promise.race([w, timeout])));
          for (const off of offs.splice(0)) off();
          let left = -1;
          for (let i = 0; i < 60; i++) {
            const q = await navigator.locks.query();
            left = (q.held ?? []).filter((l) => l.name?.startsWith(channel)).length;
            if (left === 0) break;
            await delay(25);
          }
          const ok = !results.includes('HANG') && left === 0;
          if (!ok) console.log(JSON.stringify({ steps, hang: results.includes('HANG'), left }));
          await closeAll();
          return ok;
        },
      ),
      { numRuns: Number(process.env.RUNS ?? 40) },
    );
  }, 900_000);
});
