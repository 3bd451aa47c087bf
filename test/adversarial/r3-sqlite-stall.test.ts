/**
 * Round 3, SqliteStore's stall watchdog (`sqlite-thread.ts`): it gives the database thread
 * up when no message came for `stallTimeout`. But "no message came" is measured on the
 * main thread's clock while the main thread may itself have been stopped: the process
 * suspended (Ctrl-Z, a frozen container, a paused VM, a debugger) or a long synchronous
 * job. On resume the overdue watchdog runs in the timers phase, before the thread's
 * answers, already queued, are read in the poll phase: a healthy thread that answered in
 * time is killed and its committed claim reported "may or may not have been committed".
 * Here a short internal stall bound stands for the default 30 s, and a busy loop for the
 * suspension.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../node/sqlite-store.js';
import { stallTimeout } from '../../node/sqlite-thread.js';
import { tempStoreDir } from '../fixtures/store-dirs.js';
import { intentRecord } from '../store-conformance.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Holds this thread for `ms`, as a suspension of the process would. */
function stopped(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the main thread does nothing else
  }
}

describe('r3: SqliteStore stall watchdog', () => {
  it('a main thread that was held past the stall bound does not take its answering database thread for stuck', {
    timeout: 30_000,
  }, async () => {
    const { dir, remove } = await tempStoreDir();
    const store = new SqliteStore({ dir, fsync: false, [stallTimeout]: 500 } as ConstructorParameters<
      typeof SqliteStore
    >[0]);
    cleanups.push(remove, () => store.close());
    // The open itself may outlast the short bound on a loaded machine (a thread given up is
    // replaced by the next call): what is under test is the claim below.
    for (let tries = 1; ; tries++) {
      try {
        await store.open();
        break;
      } catch (error) {
        if (tries === 5) throw error;
      }
    }
    // From a check-phase callback: the next phases are timers (the watchdog), then poll (the answer).
    const claimed = await new Promise<unknown>((resolve) => {
      setImmediate(() => {
        const claim = store.claim(intentRecord('u1', 'a')).then(
          (result) => result.created,
          (error: unknown) => error,
        );
        stopped(2_500); // the thread answers within milliseconds of this
        resolve(claim);
      });
    });
    expect(claimed).toBe(true); // was: StoreError "has not answered for 1 s (a stuck disk?) … may or may not have been committed"
    expect((await store.get('u1', 'a'))?.name).toBe('a');
  });
});
