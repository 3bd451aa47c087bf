import { type ErrorContext, OncelyError, StoreError } from '../errors.js';
import type { ClientContext } from './context.js';

/**
 * Timers that bound real I/O (a store call, the lease renewal), taken when the module
 * loads: fake timers installed later by tests drive the logical waits (backoff), and
 * must not fire an I/O bound before the I/O had a chance to finish.
 */
export const io = {
  setTimeout: globalThis.setTimeout.bind(globalThis),
  clearTimeout: globalThis.clearTimeout.bind(globalThis),
  setInterval: globalThis.setInterval.bind(globalThis),
  clearInterval: globalThis.clearInterval.bind(globalThis),
};

/** Runs a store call with the client's time bound, turning any failure into a `StoreError`. */
export async function storeCall<T>(
  ctx: ClientContext,
  what: string,
  run: () => Promise<T>,
  context: ErrorContext & { sent?: boolean },
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = io.setTimeout(
      () => reject(new StoreError(`The store did not answer within ${ctx.storeTimeout} ms (${what}).`, context)),
      ctx.storeTimeout,
    );
  });
  try {
    return await Promise.race([run(), timeout]);
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
    io.clearTimeout(timer);
  }
}
