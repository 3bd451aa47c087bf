/**
 * One retry budget for every layer that retries a request: ky's retry, `intent.run()`'s
 * p-retry loop, and 409 waits. Attempts and elapsed time are counted once.
 */

export interface RetryOptions {
  /**
   * Most attempts for one call, counting the first, whoever makes them.
   * @default 5
   */
  maxAttempts?: number;
  /**
   * Most time for one call, waits included (ms). No attempt starts, and no wait is
   * scheduled, past it.
   * @default 60_000
   */
  deadline?: number;
  /**
   * Per-attempt timeout (ms) for getting a response. A timed-out attempt counts as an
   * unknown outcome and is retried with the same key.
   * @default 10_000
   */
  timeout?: number;
  /**
   * First backoff step (ms): attempt n waits a random time in [0, min(maxDelay, baseDelay·2^(n-1))]
   * (full jitter) when the server gave no Retry-After.
   * @default 300
   */
  baseDelay?: number;
  /**
   * Cap of one backoff wait (ms).
   * @default 10_000
   */
  maxDelay?: number;
  /**
   * Cap of one server-requested wait (`Retry-After`, `retry-after-ms`) in ms. Longer hints
   * are shortened to this.
   * @default 30_000
   */
  maxRetryAfter?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export const DEFAULT_RETRY: ResolvedRetryOptions = {
  maxAttempts: 5,
  deadline: 60_000,
  timeout: 10_000,
  baseDelay: 300,
  maxDelay: 10_000,
  maxRetryAfter: 30_000,
};

const nonNegative = (value: number, name: string) => {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`retry.${name} must be a finite number >= 0, got ${value}`);
  return value;
};

export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  const resolved = { ...DEFAULT_RETRY, ...options };
  for (const [name, value] of Object.entries(resolved)) nonNegative(value, name);
  if (!Number.isInteger(resolved.maxAttempts) || resolved.maxAttempts < 1)
    throw new RangeError(`retry.maxAttempts must be an integer >= 1, got ${resolved.maxAttempts}`);
  return resolved;
}

/**
 * The wait a server asks for, in ms: `retry-after-ms` (milliseconds), else `Retry-After`
 * as delta-seconds or an HTTP-date. `undefined` when absent or malformed (negative,
 * fractional, several values, garbage). A past date means 0. Not capped here.
 */
export function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Number(ms);
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP-date names a weekday and GMT; anything else Date.parse might accept is not one.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Full-jitter exponential backoff for attempt `n` (1 = the wait after the first attempt). */
export function backoffDelay(n: number, options: ResolvedRetryOptions, random: () => number): number {
  const ceiling = Math.min(options.maxDelay, options.baseDelay * 2 ** Math.min(n - 1, 30));
  return Math.floor(random() * ceiling);
}

/** The budget of one call: counts attempts, knows the deadline, picks each wait. */
export class RetryBudget {
  attempts = 0;
  readonly startedAt: number;

  constructor(
    readonly options: ResolvedRetryOptions,
    private readonly now: () => number,
    private readonly random: () => number,
  ) {
    this.startedAt = now();
  }

  /** Time left before the deadline (ms). */
  remaining(): number {
    return Math.max(0, this.startedAt + this.options.deadline - this.now());
  }

  /** The wait before the next attempt: the server's hint capped by `maxRetryAfter`, else backoff. */
  nextDelay(headers?: Headers): number {
    const hint = headers && parseRetryAfter(headers, this.now());
    if (hint !== undefined) return Math.min(hint, this.options.maxRetryAfter);
    return backoffDelay(Math.max(1, this.attempts), this.options, this.random);
  }

  /** True when another attempt fits: attempts left, and the wait ends before the deadline. */
  allows(delay: number): boolean {
    return this.attempts < this.options.maxAttempts && delay < this.remaining();
  }
}
