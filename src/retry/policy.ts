import { InvalidArgumentError } from '../errors.js';

export interface RetryOptions {
  /**
   * Most attempts for one call, counting the first, whoever makes them.
   * @default 5
   */
  maxAttempts?: number;
  /**
   * Most time for one call (ms), waits included, on a monotonic clock. No attempt
   * starts, and no wait is scheduled, past it; an attempt never runs past it either.
   * @default 60_000
   */
  deadline?: number;
  /**
   * Per-attempt timeout (ms) for getting a response. A timed-out attempt counts as an
   * unknown outcome and is retried with the same key. `0` for none (the deadline still holds).
   * @default 10_000
   */
  timeout?: number;
  /**
   * First backoff step (ms): after attempt n oncely waits a random time in
   * [0, min(maxDelay, baseDelay·2^(n-1))] (full jitter) when the server gave no Retry-After.
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
  /**
   * Shortest wait (ms) after a 409 "in progress" that came without `Retry-After`: the
   * first request may hold the key for seconds. Later waits grow from twice this value,
   * so with the defaults a first request holding the key for 10 s is waited out.
   * @default 1_000
   */
  inProgressDelay?: number;
}

export type ResolvedRetryOptions = Required<RetryOptions>;

export const DEFAULT_RETRY: ResolvedRetryOptions = {
  maxAttempts: 5,
  deadline: 60_000,
  timeout: 10_000,
  baseDelay: 300,
  maxDelay: 10_000,
  maxRetryAfter: 30_000,
  inProgressDelay: 1_000,
};

/** Longest delay a timer can hold: `setTimeout` fires at once beyond it. */
export const MAX_TIMER = 2 ** 31 - 1;

/** `value` when it is a number of ms a timer can hold (above 0 when `positive`), else an InvalidArgumentError naming `name`. */
export function checkMs(value: unknown, name: string, positive = false): number {
  if (typeof value !== 'number' || !(value <= MAX_TIMER && (positive ? value > 0 : value >= 0)))
    throw new InvalidArgumentError(
      `${name} must be a number of ms between ${positive ? 1 : 0} and ${MAX_TIMER}, got ${String(value)}.`,
    );
  return value;
}

export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError(`retry must be an object of options, got ${typeof options}.`);
  const given = Object.entries(options).filter(([, value]) => value !== undefined);
  const resolved: ResolvedRetryOptions = { ...DEFAULT_RETRY, ...Object.fromEntries(given) };
  for (const [name, value] of given) {
    if (!(name in DEFAULT_RETRY))
      throw new InvalidArgumentError(
        `Unknown retry option "${name}". Use one of: ${Object.keys(DEFAULT_RETRY).join(', ')}.`,
      );
    checkMs(value, `retry.${name}`);
  }
  if (!Number.isInteger(resolved.maxAttempts) || resolved.maxAttempts < 1)
    throw new InvalidArgumentError(`retry.maxAttempts must be an integer >= 1, got ${resolved.maxAttempts}.`);
  return resolved;
}

const HTTP_DATE = /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
/** RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`), the obsolete forms. */
const RFC850_DATE = /^[A-Za-z]{6,9}, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}:\d{2}:\d{2}) GMT$/;
const ASCTIME_DATE = /^[A-Za-z]{3} ([A-Za-z]{3}) ([ \d]\d) (\d{2}:\d{2}:\d{2}) (\d{4})$/;

function parseHttpDate(value: string): number {
  if (HTTP_DATE.test(value)) return Date.parse(value);
  const rfc850 = RFC850_DATE.exec(value);
  if (rfc850) {
    const yy = Number(rfc850[3]);
    return Date.parse(`${rfc850[1]} ${rfc850[2]} ${yy < 70 ? 2000 + yy : 1900 + yy} ${rfc850[4]} GMT`);
  }
  const asctime = ASCTIME_DATE.exec(value);
  if (asctime) return Date.parse(`${asctime[2]!.trim()} ${asctime[1]} ${asctime[4]} ${asctime[3]} GMT`);
  return Number.NaN;
}

/**
 * The wait a server asks for, in ms: `retry-after-ms` (milliseconds), else `Retry-After`
 * as delta-seconds or an HTTP-date (IMF-fixdate, RFC 850 or asctime). `undefined` when
 * absent or malformed (negative, fractional seconds, several values, garbage). A past date
 * means 0. Not capped here.
 */
export function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Number(ms);
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return value.length > 12 ? Number.POSITIVE_INFINITY : Number(value) * 1000;
  const date = parseHttpDate(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Full-jitter exponential backoff after attempt `n` (1 = the wait after the first attempt). */
export function backoffDelay(n: number, options: ResolvedRetryOptions, random: () => number): number {
  const ceiling = Math.min(options.maxDelay, options.baseDelay * 2 ** Math.min(n - 1, 30));
  return Math.floor(random() * ceiling);
}

/**
 * Wait after the n-th "in progress" answer without a hint: equal jitter over a ceiling that
 * starts at twice `inProgressDelay` and grows to `maxDelay` (never below twice the floor),
 * so no wait is shorter than `inProgressDelay`, whatever `maxDelay` is, and four waits sum
 * to at least 12 s with the defaults.
 */
export function inProgressBackoff(n: number, options: ResolvedRetryOptions, random: () => number): number {
  const floor = options.inProgressDelay;
  const ceiling = Math.max(2 * floor, Math.min(options.maxDelay, 2 * floor * 2 ** Math.min(n - 1, 30)));
  return Math.floor(ceiling / 2 + (random() * ceiling) / 2);
}

/** What the budget needs to know of an attempt to choose the wait after it. */
export interface WaitHint {
  headers?: Headers;
  inProgress: boolean;
}

/** The budget of one call: knows the deadline on a monotonic clock and picks each wait. */
export class RetryBudget {
  readonly #startedAt: number;
  readonly #monotonic: () => number;
  readonly #wallClock: () => number;
  readonly #random: () => number;

  constructor(
    readonly options: ResolvedRetryOptions,
    monotonic: () => number,
    wallClock: () => number,
    random: () => number,
    /** When the call began (on `monotonic`), if before the budget was made. */
    startedAt = monotonic(),
  ) {
    this.#monotonic = monotonic;
    this.#wallClock = wallClock;
    this.#random = random;
    this.#startedAt = startedAt;
  }

  /** Time left before the deadline (ms). */
  remaining(): number {
    return Math.max(0, this.#startedAt + this.options.deadline - this.#monotonic());
  }

  /** The timeout of the next attempt: the per-attempt timeout, never past the deadline. */
  attemptTimeout(): number {
    const left = Math.max(1, this.remaining());
    return this.options.timeout > 0 ? Math.min(this.options.timeout, left) : left;
  }

  /** The wait after attempt `n`: the server's hint capped by `maxRetryAfter`, else backoff. */
  delayAfter(n: number, hint: WaitHint): number {
    const asked = hint.headers && parseRetryAfter(hint.headers, this.#wallClock());
    if (asked !== undefined) return Math.min(asked, this.options.maxRetryAfter);
    return hint.inProgress
      ? inProgressBackoff(n, this.options, this.#random)
      : backoffDelay(n, this.options, this.#random);
  }

  /** True when attempt `n + 1` fits: attempts left, and the wait ends before the deadline. */
  allows(n: number, delay: number): boolean {
    return n < this.options.maxAttempts && delay < this.remaining();
  }
}
