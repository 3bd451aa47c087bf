/**
 * Virtual time for chaos tests: vitest's fake timers (setTimeout, Date, performance)
 * driven by a loop that advances the clock only when nothing else can run. Together
 * with a synchronous SHA-256 (Web Crypto's digest runs on the thread pool, which would
 * make "nothing else can run" undecidable), every run is deterministic and a wait of
 * 30 s costs nothing.
 */
import { createHash } from 'node:crypto';
import { vi } from 'vitest';

const realSetImmediate = globalThis.setImmediate;
const realSetTimeout = globalThis.setTimeout;
/** Real milliseconds (performance.now and Date are faked). */
const realNow = () => Number(process.hrtime.bigint() / 1_000_000n);
/** One turn of the real event loop: every queued microtask and nextTick has run. */
export const tick = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));

/** Starts virtual time at `epoch` and makes `crypto.subtle.digest('SHA-256')` settle in a microtask. */
export function useVirtualTime(epoch = Date.parse('2026-11-30T12:00:00Z')): () => void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  vi.setSystemTime(epoch);
  const subtle = globalThis.crypto.subtle;
  const original = subtle.digest.bind(subtle);
  const spy = vi.spyOn(subtle, 'digest').mockImplementation(async (algorithm, data) => {
    const name = typeof algorithm === 'string' ? algorithm : algorithm.name;
    if (name.toUpperCase() !== 'SHA-256') return original(algorithm, data);
    const bytes =
      data instanceof ArrayBuffer
        ? new Uint8Array(data)
        : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const digest = createHash('sha256').update(bytes).digest();
    return digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength) as ArrayBuffer;
  });
  return () => {
    spy.mockRestore();
    vi.useRealTimers();
  };
}

export class Stuck extends Error {}

/**
 * With no timer pending, only real I/O (a file store's reads and writes) can move things
 * on. Waits for it, in real time, up to `ms`: true as soon as `done()` holds or a timer
 * appears, false if nothing happened (then nothing ever will).
 */
async function realWork(done: () => boolean, ms = 5_000): Promise<boolean> {
  const until = realNow() + ms;
  while (realNow() < until) {
    await new Promise((resolve) => realSetTimeout(resolve, 1));
    if (done() || vi.getTimerCount() > 0) return true;
  }
  return false;
}

/**
 * Runs `promise` to completion in virtual time: lets every microtask run, then fires the
 * next timer, and so on. Throws `Stuck` when the promise can never settle (no timer left:
 * something waits forever) or when more than `maxTimers` timers fire (a retry loop that
 * does not end).
 */
export async function drive<T>(promise: Promise<T>, maxTimers = 20_000): Promise<T> {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let fired = 0; ; fired++) {
    await tick();
    if (settled) return promise;
    if (vi.getTimerCount() === 0 && !(await realWork(() => settled))) {
      throw new Stuck('nothing left to run, yet the call has not settled: it waits forever');
    }
    if (settled) return promise;
    if (fired >= maxTimers) throw new Stuck(`${maxTimers} timers fired and the call has not settled: an endless loop`);
    vi.advanceTimersToNextTimer();
  }
}

/** Fires every remaining timer (background work the test did not wait for), within a bound. */
export async function drain(maxTimers = 20_000): Promise<void> {
  for (let fired = 0; ; fired++) {
    await tick();
    if (vi.getTimerCount() === 0) return;
    if (fired >= maxTimers) throw new Stuck(`${maxTimers} timers fired and background work is still going`);
    vi.advanceTimersToNextTimer();
  }
}
