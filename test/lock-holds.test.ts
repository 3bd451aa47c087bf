/**
 * `WebLocksCoordinator.hold`: a lock kept between sections, with Node 24's Web Locks and
 * BroadcastChannel standing in for the tabs' (two coordinators on one channel are two tabs).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { WebLocksCoordinator } from '../browser/cross-tab.js';
import type { LockSection } from '../src/coordinator/coordinator.js';

const made: WebLocksCoordinator[] = [];
afterEach(() => {
  for (const coordinator of made.splice(0)) coordinator.close();
});

let channels = 0;
/** Two or more "tabs" sharing a channel and a lock prefix of their own. */
function tabs(n: number): WebLocksCoordinator[] {
  const channel = `oncely-holds-${process.pid}-${channels++}`;
  return Array.from({ length: n }, () => {
    const c = new WebLocksCoordinator({ channel, lockPrefix: `${channel}:` });
    made.push(c);
    return c;
  });
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A hold whose every (re)gain is recorded, resolving once it is first held. */
function held(tab: WebLocksCoordinator, name = 'pay') {
  const gains: LockSection[] = [];
  let first!: () => void;
  const ready = new Promise<void>((resolve) => {
    first = resolve;
  });
  const release = tab.hold('u1', name, async (section) => {
    gains.push(section);
    first();
  });
  return { gains, ready, release };
}

describe('WebLocksCoordinator.hold', () => {
  it('a section under a kept lock starts at once and follows the previous one', async () => {
    const [tab] = tabs(1);
    const hold = held(tab!);
    await hold.ready;
    expect(hold.gains).toHaveLength(1);
    expect(hold.gains[0]!.after).toBeUndefined();
    let started = false;
    const first = tab!.exclusive('u1', 'pay', async (section) => {
      started = true;
      return section;
    });
    // Only microtasks between the call and the section: no task, no lock request.
    await Promise.resolve();
    for (let i = 0; i < 10 && !started; i++) await Promise.resolve();
    expect(started).toBe(true);
    const a = await first;
    expect(a?.after).toBe(hold.gains[0]!.id);
    const b = await tab!.exclusive('u1', 'pay', async (section) => section);
    expect(b?.after).toBe(a?.id);
    hold.release();
  });

  it('runHeld runs a section in the same turn under a kept, idle lock (else nothing), and a section asked for meanwhile waits for it', async () => {
    const [tab, other] = tabs(2);
    expect(tab!.runHeld('u1', 'pay', async () => 'not held')).toBeUndefined();
    const hold = held(tab!);
    await hold.ready;
    await delay(1); // the first section (the hold's read) has ended
    const log: string[] = [];
    let finish = () => {};
    const first = tab!.runHeld('u1', 'pay', async (section) => {
      log.push('first');
      await new Promise<void>((resolve) => {
        finish = resolve;
      });
      log.push('first ends');
      return section;
    });
    expect(log).toEqual(['first']); // ran in this turn
    expect(tab!.runHeld('u1', 'pay', async () => 'busy')).toBeUndefined();
    const second = tab!.exclusive('u1', 'pay', async (section) => {
      log.push('second');
      return section;
    });
    await delay(5);
    expect(log).toEqual(['first']);
    finish();
    const [a, b] = await Promise.all([first, second]);
    expect(log).toEqual(['first', 'first ends', 'second']);
    expect(a?.after).toBe(hold.gains[0]!.id);
    expect(b?.after).toBe(a?.id);
    expect(other!.runHeld('u1', 'pay', async () => 'not held here')).toBeUndefined();
    hold.release();
  });

  it('another tab asking gets the lock once no section runs, and the holder queues again', async () => {
    const [a, b] = tabs(2);
    const hold = held(a!);
    await hold.ready;
    const section = await b!.exclusive('u1', 'pay', async (s) => s);
    expect(section?.after).toBeUndefined(); // gained for this section
    // The holder gains the lock back once the other tab is done, and reads again.
    await expect.poll(() => hold.gains.length, { timeout: 5_000 }).toBe(2);
    expect(hold.gains[1]!.after).toBeUndefined();
    const mine = await a!.exclusive('u1', 'pay', async (s) => s);
    expect(mine?.after).toBe(hold.gains[1]!.id);
    hold.release();
  });

  it('waits for a running section: sections of all tabs never overlap', async () => {
    const [a, b, c] = tabs(3);
    const holds = [held(a!), held(b!)];
    await holds[0]!.ready;
    let inside = 0;
    let most = 0;
    const log: string[] = [];
    const section = (tab: WebLocksCoordinator, label: string, ms: number) =>
      tab.exclusive('u1', 'pay', async () => {
        inside++;
        most = Math.max(most, inside);
        log.push(label);
        await delay(ms);
        inside--;
      });
    await Promise.all([section(a!, 'a1', 30), section(b!, 'b1', 5), section(c!, 'c1', 5), section(a!, 'a2', 5)]);
    expect(most).toBe(1);
    expect(log.sort()).toEqual(['a1', 'a2', 'b1', 'c1']);
    for (const hold of holds) hold.release();
  });

  it('property: random sections from holding and non-holding tabs are mutually exclusive and all run', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tab: fc.nat(2), ms: fc.nat(4), gap: fc.nat(3) }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        async (steps, holding) => {
          const all = tabs(3);
          const holds = all.flatMap((tab, i) => (holding[i] ? [held(tab)] : []));
          let inside = 0;
          let overlap = false;
          let ran = 0;
          const calls: Promise<void>[] = [];
          for (const { tab, ms, gap } of steps) {
            calls.push(
              all[tab]!.exclusive('u1', 'pay', async () => {
                if (++inside > 1) overlap = true;
                await delay(ms);
                inside--;
                ran++;
              }),
            );
            await delay(gap);
          }
          await Promise.all(calls);
          for (const hold of holds) hold.release();
          for (const tab of all) tab.close();
          return !overlap && ran === steps.length;
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a released hold lets the lock go: another tab gets it without asking twice', async () => {
    const [a, b] = tabs(2);
    const hold = held(a!);
    await hold.ready;
    hold.release();
    const locks = globalThis.navigator.locks;
    await expect.poll(async () => (await locks.query()).held?.length ?? 0).toBe(0);
    expect(await b!.exclusive('u1', 'pay', async () => 'b')).toBe('b');
  });

  it('an aborted wait for a held lock rejects with the reason, and the section never runs', async () => {
    const [a, b] = tabs(2);
    const hold = held(a!);
    await hold.ready;
    let release!: () => void;
    const busy = a!.exclusive('u1', 'pay', () => new Promise<void>((resolve) => (release = resolve)));
    const controller = new AbortController();
    let ran = false;
    const waiting = b!.exclusive(
      'u1',
      'pay',
      async () => {
        ran = true;
      },
      controller.signal,
    );
    controller.abort(new Error('user left'));
    await expect(waiting).rejects.toThrow('user left');
    release();
    await busy;
    expect(ran).toBe(false);
    hold.release();
  });

  it('without Web Locks, hold does nothing and sections carry no section info', async () => {
    const c = new WebLocksCoordinator({ locks: undefined });
    made.push(c);
    const release = c.hold('u1', 'pay', async () => {
      throw new Error('never called');
    });
    expect(await c.exclusive('u1', 'pay', async (section) => section)).toBeUndefined();
    release();
  });
});

describe('WebLocksCoordinator.hold on a hidden page', () => {
  it('keeps no lock while the page is hidden, takes it for a section, and keeps it again once visible', async () => {
    const listeners = new Set<() => void>();
    const page = {
      visibilityState: 'visible' as DocumentVisibilityState,
      addEventListener: (_type: string, listener: () => void) => listeners.add(listener),
      removeEventListener: (_type: string, listener: () => void) => listeners.delete(listener),
    };
    const show = (state: DocumentVisibilityState) => {
      page.visibilityState = state;
      for (const listener of listeners) listener();
    };
    (globalThis as { document?: unknown }).document = page;
    try {
      const [tab] = tabs(1);
      const hold = held(tab!);
      await hold.ready;
      const heldLocks = async () =>
        (await navigator.locks.query()).held?.filter((l) => l.name?.includes('holds')).length;
      expect(await heldLocks()).toBe(1);
      show('hidden');
      await expect.poll(heldLocks).toBe(0);
      // A call while hidden still runs under the lock, then lets it go.
      // A call while hidden takes the lock (the record read under it first), then lets it go.
      const hiddenSection = await tab!.exclusive('u1', 'pay', async (s) => s);
      expect(hold.gains).toHaveLength(2);
      expect(hiddenSection?.after).toBe(hold.gains[1]!.id);
      await expect.poll(heldLocks).toBe(0);
      show('visible');
      await expect.poll(() => hold.gains.length).toBe(3);
      expect(await heldLocks()).toBe(1);
      const section = await tab!.exclusive('u1', 'pay', async (s) => s);
      expect(section?.after).toBeDefined();
      hold.release();
      tab!.close();
      expect(listeners.size).toBe(0);
    } finally {
      delete (globalThis as { document?: unknown }).document;
    }
  });
});
