/**
 * Stress of browser/lock-holds.ts with real Node Web Locks: random holds, releases, sections,
 * aborted waits across 3 "tabs". Checks: no two sections overlap, every non-aborted section
 * runs (no hang), and once every hold is released no lock stays held.
 */
import fc from 'fast-check';
import { afterEach, describe, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';

const made: WebLocksCoordinator[] = [];
afterEach(() => {
  for (const c of made.splice(0)) c.close();
});
let channels = 0;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

const op = fc.oneof(
  fc.record({ kind: fc.constant('hold' as const), tab: fc.nat(2) }),
  fc.record({ kind: fc.constant('release' as const), tab: fc.nat(2) }),
  fc.record({ kind: fc.constant('section' as const), tab: fc.nat(2), ms: fc.nat(5), abortAfter: fc.option(fc.nat(6)) }),
  fc.record({ kind: fc.constant('gap' as const), ms: fc.nat(4) }),
);

describe('lock holds under random holds, releases and aborts', () => {
  it('property: exclusive, no hang, nothing left held', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const channel = `oncely-attack-stress-${process.pid}-${channels++}`;
        const tabs = [0, 1, 2].map(() => {
          const c = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined });
          made.push(c);
          return c;
        });
        const releases: (() => void)[][] = [[], [], []];
        let inside = 0;
        let overlap = false;
        const runs: Promise<string>[] = [];
        for (const o of ops) {
          if (o.kind === 'gap') await delay(o.ms);
          else if (o.kind === 'hold') {
            releases[o.tab]!.push(
              tabs[o.tab]!.hold('u', 'pay', async () => {
                if (++inside > 1) overlap = true;
                await delay(1);
                inside--;
              }),
            );
          } else if (o.kind === 'release') releases[o.tab]!.shift()?.();
          else {
            const controller = new AbortController();
            if (o.abortAfter !== null) setTimeout(() => controller.abort(new Error('aborted')), o.abortAfter);
            runs.push(
              tabs[o.tab]!.exclusive(
                'u',
                'pay',
                async () => {
                  if (++inside > 1) overlap = true;
                  await delay(o.ms);
                  inside--;
                },
                controller.signal,
              ).then(
                () => 'ran',
                (e: Error) => (e.message === 'aborted' ? 'aborted' : `error ${e.message}`),
              ),
            );
          }
        }
        const timeout = new Promise<string>((r) => setTimeout(() => r('HANG'), 4000));
        const results = await Promise.all(runs.map((r) => Promise.race([r, timeout])));
        for (const list of releases) for (const release of list.splice(0)) release();
        let left = -1;
        for (let i = 0; i < 40; i++) {
          const q = await navigator.locks.query();
          left = (q.held ?? []).filter((l) => l.name?.startsWith(channel)).length;
          if (left === 0) break;
          await delay(25);
        }
        const ok = !overlap && !results.includes('HANG') && left === 0 && !results.some((r) => r.startsWith('error'));
        if (!ok) console.log(JSON.stringify({ ops, results, overlap, left }));
        return ok;
      }),
      { numRuns: 60 },
    );
  }, 300_000);
});
