/**
 * Fault injection: a queue of faults, each consumed by the next request(s) it matches.
 *
 * @example
 * server.inject({ fault: 'drop-after-commit', match: { method: 'POST', path: '/payments' } });
 * server.inject({ fault: 'fail-before-commit', status: 503, retryAfter: 2, times: 2 });
 */
import { compilePath, type PathMatcher } from './routes.js';

/** Answer normally. Useful to let a request through before a later fault in the queue. */
export interface RespondFault {
  fault: 'respond';
}

/**
 * The effect commits and the response is stored, then the connection dies: the client
 * sees a network error (`Response.error()`; the node adapter destroys the socket). A
 * retry with the same key gets the stored response, replayed.
 */
export interface DropAfterCommitFault {
  fault: 'drop-after-commit';
}

/**
 * Answer a 5xx before the idempotency layer: no effect, no record, so a retry runs for
 * real.
 */
export interface FailBeforeCommitFault {
  fault: 'fail-before-commit';
  /** @default 503 */
  status?: number;
  /** `Retry-After` in seconds; no header when omitted. */
  retryAfter?: number;
}

/** Wait `ms` before answering. */
export interface DelayFault {
  fault: 'delay';
  ms: number;
  /**
   * `'before-commit'`: the key is held (in progress) during the wait, then the effect
   * runs — concurrent requests with the key get 409. `'after-commit'`: the effect ran
   * and the response is stored; only the answer is late.
   * @default 'before-commit'
   */
  when?: 'before-commit' | 'after-commit';
}

/**
 * Never answer. The key stays in progress until the request's signal aborts (the
 * client gave up; the node adapter aborts when the socket closes) or `server.reset()`;
 * then the record is released as if the server died before commit: no effect, and a
 * retry runs for real.
 */
export interface HangFault {
  fault: 'hang';
}

/**
 * Answer 409 + `Retry-After` for this request's key during `ms`, as if another request
 * held it, without running the effect. Matches only requests that carry a key. Measured
 * with the server's `now()` clock.
 */
export interface InProgressFault {
  fault: 'in-progress';
  ms: number;
  /** `Retry-After` seconds on those 409s. @default the server's `retryAfter` */
  retryAfter?: number;
}

/**
 * Answer `status` without running the effect (e.g. 429 from a rate limiter, a 500).
 * With `store: false` the answer comes from in front of the idempotency layer and no
 * record is kept. With `store: true` it stands for the route's outcome: the record
 * completes with it (whatever `storeResponses` says) and retries get it replayed.
 */
export interface StatusFault {
  fault: 'status';
  status: number;
  /** A string is sent as text, anything else as JSON. No body when omitted. */
  body?: unknown;
  headers?: HeadersInit;
  /** @default false */
  store?: boolean;
}

export type Fault =
  | RespondFault
  | DropAfterCommitFault
  | FailBeforeCommitFault
  | DelayFault
  | HangFault
  | InProgressFault
  | StatusFault;

/** Which requests a fault applies to. Every given field must match; none = any request. */
export interface FaultMatch {
  /** HTTP method, case-insensitive. */
  method?: string;
  /** Path pattern, route syntax: `/payments`, `/payments/:id`, `/payments/*`. */
  path?: string;
  /** The decoded idempotency key. */
  key?: string;
}

/** A fault plus how many requests it applies to and which. */
export type FaultSpec = Fault & {
  /** How many matching requests consume this fault. @default 1 */
  times?: number;
  match?: FaultMatch;
};

/** What the queue needs to know about a request to pick a fault. */
export interface FaultTarget {
  method: string;
  pathname: string;
  key: string | undefined;
}

interface QueuedFault {
  fault: Fault;
  remaining: number;
  method: string | undefined;
  path: PathMatcher | undefined;
  key: string | undefined;
}

/** Faults waiting for requests, first in first out. */
export class FaultQueue {
  #queue: QueuedFault[] = [];

  add(spec: FaultSpec): void {
    const { times = 1, match = {}, ...fault } = spec;
    if (!(times >= 1) || (!Number.isInteger(times) && times !== Number.POSITIVE_INFINITY)) {
      throw new TypeError(`Fault "${spec.fault}": times must be a positive integer or Infinity, got ${times}.`);
    }
    if ('ms' in fault && !(fault.ms >= 0)) {
      throw new TypeError(`Fault "${spec.fault}": ms must be a number >= 0, got ${fault.ms}.`);
    }
    this.#queue.push({
      fault: fault as Fault,
      remaining: times,
      method: match.method?.toUpperCase(),
      path: match.path === undefined ? undefined : compilePath(match.path),
      key: match.key,
    });
  }

  /** Consume and return the first fault that matches `target`, if any. */
  take(target: FaultTarget): Fault | undefined {
    const index = this.#queue.findIndex(
      (entry) =>
        (entry.method === undefined || entry.method === target.method) &&
        (entry.path === undefined || entry.path(target.pathname) !== undefined) &&
        (entry.key === undefined || entry.key === target.key) &&
        (entry.fault.fault !== 'in-progress' || target.key !== undefined),
    );
    const entry = this.#queue[index];
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.#queue.splice(index, 1);
    return entry.fault;
  }

  /** Faults still waiting (each counted once, whatever its remaining `times`). */
  get size(): number {
    return this.#queue.length;
  }

  clear(): void {
    this.#queue = [];
  }
}
