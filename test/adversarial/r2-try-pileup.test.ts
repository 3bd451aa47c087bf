/**
 * From a second adversarial review of the kept lock (fixed: one retry pending per hold).
 *
 * browser/lock-holds.ts: every `#yield` starts a retry chain (`#later`: a `try` a second
 * later, again after each failed try). A chain ends only when it fires while the lock is held
 * here or a request is pending here. Two holding tabs that click in turn each yield once per
 * turn; the chains started while the other tab keeps the lock never end, and fire at
 * different phases, so the idle tab's `ifAvailable` requests grow with the number of turns.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../../browser/cross-tab.js';

const made: WebLocksCoordinator[] = [];
const releases: (() => void)[] = [];
afterEach(() => {
  for (const r of releases.splice(0)) r();
  for (const c of made.splice(0)) c.close();
});
const TURNS = Number(process.env.TURNS ?? 12);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

function counting() {
  const tries = { n: 0 };
  const locks = {
    request: (name: string, options: LockOptions, fn: LockGrantedCallback<unknown>) => {
      if (options.ifAvailable) tries.n++;
      return navigator.locks.request(name, options, fn);
    },
    query: () => navigator.locks.query(),
  } as unknown as LockManager;
  return { locks, tries };
}

describe('retry chains of a hold', () => {
  it('after 12 alternating clicks, the idle tab tries the busy lock about once a second, not once per turn', async () => {
    const channel = `oncely-attack2-pile-${process.pid}`;
    const a = counting();
    const b = counting();
    const ta = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined, locks: a.locks });
    const tb = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:`, notes: undefined, locks: b.locks });
    made.push(ta, tb);
    releases.push(ta.hold('u', 'pay', async () => {}));
    releases.push(tb.hold('u', 'pay', async () => {}));
    await delay(50);
    for (let i = 0; i < TURNS; i++) {
      await (i % 2 ? tb : ta).exclusive('u', 'pay', () => delay(5));
      await delay(90 + (i % 12) * 7); // turns at different phases of the one-second timers
    }
    // The last click was tb's (i = 11): tb keeps the lock, ta is idle and waits to retry.
    await delay(1_200);
    const from = a.tries.n;
    await delay(3_000);
    const perSecond = (a.tries.n - from) / 3;
    console.log('tries per second', TURNS, perSecond);
    expect(perSecond).toBeLessThanOrEqual(1.5);
  }, 30_000);
});
