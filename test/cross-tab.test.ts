import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebLocksCoordinator, type WebLocksCoordinatorOptions } from '../browser/cross-tab.js';
import type { IntentRecord } from '../src/store/store.js';

const made: WebLocksCoordinator[] = [];
afterEach(() => {
  for (const coordinator of made.splice(0)) coordinator.close();
  vi.unstubAllGlobals();
});

function coordinator(options: WebLocksCoordinatorOptions = {}): WebLocksCoordinator {
  const c = new WebLocksCoordinator(options);
  made.push(c);
  return c;
}

const record = (name: string, extra: Partial<IntentRecord> = {}): IntentRecord => ({
  v: 1,
  scope: 'u1',
  name,
  key: `k-${name}`,
  state: 'in_flight',
  attempts: 1,
  createdAt: 1,
  updatedAt: 2,
  ...extra,
});

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let channels = 0;
const uniqueChannel = () => `oncely-test-${process.pid}-${channels++}`;

/** Runs overlapping `exclusive` calls and returns the order in which they entered and left. */
async function trace(calls: [WebLocksCoordinator, string][]): Promise<string[]> {
  const log: string[] = [];
  await Promise.all(
    calls.map(([c, name], i) =>
      c.exclusive('u1', name, async () => {
        log.push(`in${i}`);
        await delay(15);
        log.push(`out${i}`);
      }),
    ),
  );
  return log;
}

describe('WebLocksCoordinator.exclusive', () => {
  it('uses navigator.locks: one holder per intent across tabs, other intents run alongside', async () => {
    expect(globalThis.navigator?.locks).toBeDefined(); // Node 24 implements Web Locks
    const [tabA, tabB] = [coordinator(), coordinator()];
    expect(tabA.crossTab).toBe(true);
    expect(
      await trace([
        [tabA, 'pay'],
        [tabB, 'pay'],
      ]),
    ).toEqual(['in0', 'out0', 'in1', 'out1']);
    const parallel = await trace([
      [tabA, 'pay'],
      [tabB, 'other'],
    ]);
    expect(parallel.slice(0, 2).sort()).toEqual(['in0', 'in1']);
  });

  it('requests a lock named after the intent and passes the signal', async () => {
    const request = vi.fn((_name: string, _options: LockOptions, fn: () => unknown) => Promise.resolve(fn()));
    const c = coordinator({ locks: { request } as unknown as LockManager, lockPrefix: 'app:' });
    const signal = new AbortController().signal;
    expect(await c.exclusive('u1', 'checkout:42', async () => 'done', signal)).toBe('done');
    expect(request).toHaveBeenCalledWith('app:["u1","checkout:42"]', { signal }, expect.any(Function));
  });

  it('an aborted wait rejects with the reason and never runs fn', async () => {
    const c = coordinator();
    const fn = vi.fn(async () => 'ran');
    const held = c.exclusive('u1', 'pay', () => delay(30));
    const controller = new AbortController();
    const waiting = c.exclusive('u1', 'pay', fn, controller.signal);
    controller.abort(new Error('user left'));
    await expect(waiting).rejects.toThrow('user left');
    await held;
    expect(fn).not.toHaveBeenCalled();
  });

  for (const how of ['navigator.locks missing', 'locks: undefined'] as const) {
    it(`falls back to page-local locking when ${how}`, async () => {
      if (how === 'navigator.locks missing') vi.stubGlobal('navigator', {});
      const c = coordinator(how === 'locks: undefined' ? { locks: undefined } : {});
      expect(c.crossTab).toBe(false);
      expect(
        await trace([
          [c, 'pay'],
          [c, 'pay'],
        ]),
      ).toEqual(['in0', 'out0', 'in1', 'out1']);

      const fn = vi.fn(async () => 'ran');
      const held = c.exclusive('u1', 'pay', () => delay(30));
      const controller = new AbortController();
      const waiting = c.exclusive('u1', 'pay', fn, controller.signal);
      controller.abort(new Error('gone'));
      await expect(waiting).rejects.toThrow('gone');
      await held;
      await delay(0);
      expect(fn).not.toHaveBeenCalled();
      expect(await c.exclusive('u1', 'pay', async () => 'next')).toBe('next');
    });
  }

  it('page-local locking: abort after the lock is granted lets fn finish', async () => {
    const c = coordinator({ locks: undefined });
    const controller = new AbortController();
    const result = c.exclusive(
      'u1',
      'pay',
      async () => {
        controller.abort();
        await delay(5);
        return 'finished';
      },
      controller.signal,
    );
    expect(await result).toBe('finished');
  });
});

describe('WebLocksCoordinator publish/subscribe', () => {
  function nextRecords(c: WebLocksCoordinator, count: number): Promise<IntentRecord[]> {
    const got: IntentRecord[] = [];
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`received ${got.length} of ${count}`)), 2000);
      c.subscribe((r) => {
        got.push(r);
        if (got.length === count) {
          clearTimeout(timer);
          resolve(got);
        }
      });
    });
  }

  it('tells the other tabs, not its own listeners', async () => {
    const channel = uniqueChannel();
    const [tabA, tabB] = [coordinator({ channel }), coordinator({ channel })];
    const own = vi.fn();
    tabA.subscribe(own);
    const received = nextRecords(tabB, 2);
    tabA.publish(record('pay'));
    tabA.publish(record('ship', { state: 'succeeded', status: 201 }));
    expect(await received).toEqual([record('pay'), record('ship', { state: 'succeeded', status: 201 })]);
    await delay(10);
    expect(own).not.toHaveBeenCalled();
  });

  it('ignores junk on the channel', async () => {
    const channel = uniqueChannel();
    const listener = coordinator({ channel });
    const received = nextRecords(listener, 1);
    const raw = new BroadcastChannel(channel);
    for (const junk of ['hello', null, 42, { type: 'ping' }, { ...record('bad'), state: 'nope' }, [record('x')]]) {
      raw.postMessage(junk);
    }
    raw.postMessage(record('good'));
    expect(await received).toEqual([record('good')]);
    raw.close();
  });

  it('stops hearing after unsubscribe and close', async () => {
    const channel = uniqueChannel();
    const [tabA, tabB] = [coordinator({ channel }), coordinator({ channel })];
    const dropped = vi.fn();
    const unsubscribe = tabB.subscribe(dropped);
    unsubscribe();
    const received = nextRecords(tabB, 1);
    tabA.publish(record('one'));
    await received;
    tabB.close();
    tabA.publish(record('two'));
    await delay(20);
    expect(dropped).not.toHaveBeenCalled();
  });

  it('does nothing, without throwing, where BroadcastChannel is missing', () => {
    vi.stubGlobal('BroadcastChannel', undefined);
    const c = coordinator({ channel: uniqueChannel() });
    const unsubscribe = c.subscribe(() => {});
    expect(() => c.publish(record('pay'))).not.toThrow();
    unsubscribe();
  });
});
