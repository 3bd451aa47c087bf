import pRetry from 'p-retry';
import { type LastOutcome, leavesDoubt, retries } from '../intent/decide.js';
import type { RetryBudget } from './policy.js';

/** What one attempt of any transport reports to the loop. */
export interface AttemptReport<V> {
  outcome: LastOutcome;
  replayed: boolean;
  /** The attempt may have reached a server. False only when it provably did not. */
  sent: boolean;
  status?: number;
  /** Response headers (Retry-After), when there was an answer. */
  headers?: Headers;
  /**
   * Not retried, whatever the outcome: a transport that threw what no one can read, an
   * attempt whose request carries no key.
   */
  final?: boolean;
  /** Go again at once, to this URL (a 307/308 to the same origin): not a failure, no wait. */
  follow?: string;
  /** The answer, the returned value or the thrown error, for the caller to finish with. */
  value?: V;
  error?: unknown;
}

/** How the attempt sequence ended. */
export interface LoopEnd<V> {
  last: AttemptReport<V>;
  /** Attempts made, sent or not. */
  attempts: number;
  /** Attempts that may have reached a server. */
  sent: number;
  unansweredBefore: boolean;
}

export interface LoopHooks {
  /** Before attempt `n` (1-based) goes out. */
  onAttempt?(n: number): void;
  /** A retry of attempt `n` is scheduled in `delay` ms. */
  onRetry?(n: number, delay: number, report: AttemptReport<unknown>): void;
}

/** Thrown to p-retry for an attempt worth another try; carries the report. */
class TryAgain extends Error {
  constructor(readonly report: AttemptReport<unknown>) {
    super('try again');
  }
}

/** A TryAgain without a stack trace: nobody reads it, and capturing one is most of its cost per retry. */
function tryAgain(report: AttemptReport<unknown>): TryAgain {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new TryAgain(report);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The one retry loop of every transport (p-retry): runs `attempt(n)` until an attempt
 * ends the call, the budget runs out or `signal` aborts. Owns the attempt counter and
 * the waits; never throws for an attempt's failure, only reports how the sequence ended.
 */
export async function retryLoop<V>(
  attempt: (n: number) => Promise<AttemptReport<V>>,
  budget: RetryBudget,
  signal: AbortSignal | undefined,
  hooks: LoopHooks = {},
): Promise<LoopEnd<V>> {
  let last: AttemptReport<V> | undefined;
  let attempts = 0;
  let sent = 0;
  let unansweredBefore = false;
  const run = async (n: number) => {
    if (last && leavesDoubt(last.outcome, last.replayed, last.sent)) unansweredBefore = true;
    attempts = n;
    hooks.onAttempt?.(n);
    last = await attempt(n);
    if (last.sent) sent++;
    if (last.follow || (!last.final && retries(last.outcome, last.replayed))) throw tryAgain(last);
    return last;
  };
  try {
    await pRetry(run, {
      retries: budget.options.maxAttempts - 1,
      minTimeout: 0,
      signal,
      shouldRetry: async ({ error, attemptNumber }) => {
        if (!(error instanceof TryAgain)) return false;
        const { report } = error;
        const delay = report.follow
          ? 0
          : budget.delayAfter(attemptNumber, { headers: report.headers, inProgress: report.outcome === 'in_progress' });
        if (!budget.allows(attemptNumber, delay)) return false;
        hooks.onRetry?.(attemptNumber, delay, report);
        await sleep(delay, signal);
        return true;
      },
    });
  } catch (error) {
    // Aborted before the first attempt left: nothing was sent.
    if (!last && signal?.aborted)
      return {
        last: { outcome: 'cancelled', replayed: false, sent: false, error: signal.reason },
        attempts: 0,
        sent: 0,
        unansweredBefore,
      };
    if (!last) throw error;
    if (signal?.aborted) last = { ...last, outcome: 'cancelled', error: signal.reason };
    else if (!(error instanceof TryAgain)) throw error;
  }
  return { last: last as AttemptReport<V>, attempts, sent, unansweredBefore };
}
