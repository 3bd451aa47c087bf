import { type ErrorContext, OncelyError, StoreError } from '../errors.js';
import type { ClientContext } from './context.js';

/**
 * One watchdog for every store call and lease in the process: a call past its bound is
 * rejected, a lease due is renewed. One timer ticks while anything is watched, instead of
 * a timer per call. It is taken when the module loads: fake timers installed later by
 * tests drive the logical waits (backoff) and must not fire an I/O bound early.
 */
const io = {
  setInterval: globalThis.setInterval.bind(globalThis),
  clearInterval: globalThis.clearInterval.bind(globalThis),
  now: globalThis.performance.now.bind(globalThis.performance),
};
const TICK = 100;
const watched = new Set<{ due: number; fire: () => void }>();
let ticking: ReturnType<typeof setInterval> | undefined;

function tick(): void {
  const now = io.now();
  for (const entry of watched) if (entry.due <= now) entry.fire();
  if (watched.size === 0) {
    io.clearInterval(ticking);
    ticking = undefined;
  }
}

/** Calls `fire` once `ms` have passed (within a tick) unless the returned function is called first. */
export function watch(ms: number, fire: () => void): () => void {
  const entry = { due: io.now() + ms, fire };
  watched.add(entry);
  if (!ticking) {
    ticking = io.setInterval(tick, TICK);
    (ticking as { unref?: () => void }).unref?.();
  }
  return () => watched.delete(entry);
}

/** Calls `renew` every `ms` until stopped (a call's lease on its intent). */
export function every(ms: number, renew: () => void): () => void {
  let stop = () => {};
  const arm = () => {
    stop = watch(ms, () => {
      stop();
      renew();
      arm();
    });
  };
  arm();
  return () => stop();
}

/** Runs a store call with the client's time bound, turning any failure into a `StoreError`. */
export async function storeCall<T>(
  ctx: ClientContext,
  what: string,
  run: () => Promise<T>,
  context: ErrorContext & { sent?: boolean },
): Promise<T> {
  let unwatch = () => {};
  try {
    return await new Promise<T>((resolve, reject) => {
      unwatch = watch(ctx.storeTimeout, () => {
        unwatch();
        reject(new StoreError(`The store did not answer within ${ctx.storeTimeout} ms (${what}).`, context));
      });
      run().then(resolve, reject);
    });
  } catch (error) {
    if (error instanceof OncelyError) throw error;
    const sent = context.sent
      ? ' An attempt had gone out: the intent keeps its key and stays in flight; send the same request again once the store works.'
      : ' Nothing was sent.';
    throw new StoreError(`The store failed (${what}): ${(error as Error)?.message ?? String(error)}.${sent}`, {
      ...context,
      cause: error,
    });
  } finally {
    unwatch();
  }
}
