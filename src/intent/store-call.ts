import { type ErrorContext, OncelyError, StoreError } from '../errors.js';
import { StoreAnswerError } from '../store/checked-store.js';
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

const RESEND = '; send the same request under the same intent name once the store works.';
const SENT = ` An attempt had gone out, so the request may have taken effect: the intent keeps its key and stays in flight${RESEND}`;
const NOT_SENT = ' Nothing was sent.';
const IN_FLIGHT = ` No request was sent, but the intent may stay in flight${RESEND}`;

/**
 * What an unsent write may still do when the store did not answer in time (it can commit
 * after the timeout), and what the app does then, by the call's `what`.
 */
const LATE: Record<string, string> = {
  'forming the intent':
    ' No request was sent, but the intent may be formed anyway: call intent() with the same name again; it finds it or forms it.',
  'marking the intent in flight': IN_FLIGHT,
  'undoing an unsent call': IN_FLIGHT,
  'forgetting the intent': ' It may be done anyway: call reset() again.',
  'clearing the scope': ' It may be done anyway: call clear() again.',
};

/**
 * Runs a store call within the client's `storeTimeout` (and `within` ms, what the call's
 * deadline leaves), turning any failure into a `StoreError` that says whether anything was
 * sent; an unsent write that timed out says what it may still have done (`LATE`).
 */
export async function storeCall<T>(
  ctx: ClientContext,
  what: string,
  run: () => Promise<T>,
  context: ErrorContext,
  within = Number.POSITIVE_INFINITY,
): Promise<T> {
  const bound = Math.max(0, Math.min(ctx.storeTimeout, within));
  const sent = context.sent ? SENT : NOT_SENT;
  let unwatch = () => {};
  try {
    return await new Promise<T>((resolve, reject) => {
      unwatch = watch(bound, () => {
        unwatch();
        const then = context.sent ? SENT : (LATE[what] ?? NOT_SENT);
        reject(new StoreError(`The store did not answer within ${Math.round(bound)} ms (${what}).${then}`, context));
      });
      Promise.resolve().then(run).then(resolve, reject);
    });
  } catch (error) {
    // Ours already (a corrupt record), unless it would say nothing left when something did.
    if (error instanceof OncelyError && (error.sent || !context.sent)) throw error;
    // A DOMException may have no message (Chromium's QuotaExceededError): its name says it.
    const reason = String((error as Error)?.message || (error as Error)?.name || error).replace(/\.$/, '');
    // An in_flight write answered wrongly may have landed anyway, as one answered late.
    const then = error instanceof StoreAnswerError && !context.sent && LATE[what] === IN_FLIGHT ? IN_FLIGHT : sent;
    throw new StoreError(`The store failed (${what}): ${reason}.${then}`, {
      ...context,
      cause: error,
    });
  } finally {
    unwatch();
  }
}
