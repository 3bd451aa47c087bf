/**
 * Faults a test sets through `POST /__control`, applied to `POST /payments`:
 *
 * - `{ drop: n }`: the next n payment responses are never sent: the socket is destroyed
 *   after the charge committed (the client sees a network error, the effect happened).
 * - `{ conflictFor: ms }`: for `ms` from the next payment request, answer 409 with
 *   Retry-After (as if another request with the key were still running).
 * - `{ failBeforeCommit: n }`: the next n effects roll back inside their transaction and
 *   answer 503; the key claim is released, so a retry runs the effect again.
 * - `{ delay: ms }`: each effect waits `ms` after its claim, before committing.
 * - `{ hold: true }`: each effect waits after its claim until `{ release: true }`.
 * - `{ keepAlive: false }`: every API response says `Connection: close`, so no request
 *   rides a reused connection. Chromium silently resends a request that fails on a
 *   reused connection (with the same key, so harmlessly); without reuse, a dropped
 *   response reaches the page as a network error and oncely's own retry answers it.
 * - `{ reset: true }`: no faults; held requests are given up (503, nothing committed).
 */

export interface ControlRequest {
  drop?: number;
  conflictFor?: number;
  failBeforeCommit?: number;
  delay?: number;
  hold?: boolean;
  keepAlive?: boolean;
  release?: boolean;
  reset?: boolean;
}

export interface FaultSnapshot {
  drop: number;
  conflictFor: number;
  /** When the 409 window ends (ms since epoch), once a payment request opened it. */
  conflictUntil: number | null;
  failBeforeCommit: number;
  delay: number;
  hold: boolean;
  keepAlive: boolean;
  /** Requests waiting for `{ release: true }` now. */
  held: number;
}

/** Why a held request stopped waiting. */
export type HoldOutcome = 'released' | 'aborted';

const count = (value: unknown, name: string): number => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new TypeError(`${name} must be an integer >= 0, got ${JSON.stringify(value)}`);
  return value;
};

export class Faults {
  #drop = 0;
  #conflictFor = 0;
  #conflictUntil: number | null = null;
  #failBeforeCommit = 0;
  #delay = 0;
  #hold = false;
  #keepAlive = true;
  readonly #held = new Set<(outcome: HoldOutcome) => void>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Applies a control request; throws TypeError on a malformed one (before changing anything). */
  apply(request: ControlRequest): void {
    const known = new Set([
      'drop',
      'conflictFor',
      'failBeforeCommit',
      'delay',
      'hold',
      'keepAlive',
      'release',
      'reset',
    ]);
    for (const name of Object.keys(request))
      if (!known.has(name)) throw new TypeError(`unknown control field ${JSON.stringify(name)}`);
    const next = {
      drop: request.drop === undefined ? undefined : count(request.drop, 'drop'),
      conflictFor: request.conflictFor === undefined ? undefined : count(request.conflictFor, 'conflictFor'),
      failBeforeCommit:
        request.failBeforeCommit === undefined ? undefined : count(request.failBeforeCommit, 'failBeforeCommit'),
      delay: request.delay === undefined ? undefined : count(request.delay, 'delay'),
    };
    for (const name of ['hold', 'keepAlive', 'release', 'reset'] as const)
      if (request[name] !== undefined && typeof request[name] !== 'boolean')
        throw new TypeError(`${name} must be a boolean`);
    if (request.reset) this.reset();
    if (next.drop !== undefined) this.#drop = next.drop;
    if (next.conflictFor !== undefined) {
      this.#conflictFor = next.conflictFor;
      this.#conflictUntil = null;
    }
    if (next.failBeforeCommit !== undefined) this.#failBeforeCommit = next.failBeforeCommit;
    if (next.delay !== undefined) this.#delay = next.delay;
    // `release` lets the held requests go and stops holding, unless `hold: true` comes with it.
    if (request.release) this.#releaseAll('released');
    if (request.hold !== undefined) this.#hold = request.hold;
    if (request.keepAlive !== undefined) this.#keepAlive = request.keepAlive;
  }

  reset(): void {
    this.#drop = 0;
    this.#conflictFor = 0;
    this.#conflictUntil = null;
    this.#failBeforeCommit = 0;
    this.#delay = 0;
    this.#hold = false;
    this.#keepAlive = true;
    this.#releaseAll('aborted');
  }

  /** Milliseconds of 409 left for a payment request arriving now (opens the window on first use). */
  conflictRemaining(): number {
    if (this.#conflictFor === 0) return 0;
    const now = this.#now();
    this.#conflictUntil ??= now + this.#conflictFor;
    const left = this.#conflictUntil - now;
    if (left <= 0) {
      this.#conflictFor = 0;
      this.#conflictUntil = null;
      return 0;
    }
    return left;
  }

  /** Waits as the faults say between claim and commit. Resolves `aborted` when reset or closed meanwhile. */
  async beforeEffect(): Promise<HoldOutcome> {
    if (this.#delay > 0) await new Promise((resolve) => setTimeout(resolve, this.#delay));
    if (!this.#hold) return 'released';
    return new Promise<HoldOutcome>((resolve) => {
      const done = (outcome: HoldOutcome) => {
        this.#held.delete(done);
        resolve(outcome);
      };
      this.#held.add(done);
    });
  }

  /** True (and counts down) when this effect must fail before its commit. */
  takeFailBeforeCommit(): boolean {
    if (this.#failBeforeCommit === 0) return false;
    this.#failBeforeCommit--;
    return true;
  }

  /** True (and counts down) when this response must be dropped. */
  takeDrop(): boolean {
    if (this.#drop === 0) return false;
    this.#drop--;
    return true;
  }

  /** False when responses must close their connection (`{ keepAlive: false }`). */
  get keepAlive(): boolean {
    return this.#keepAlive;
  }

  /** Gives up every held request (server closing). */
  abortHeld(): void {
    this.#releaseAll('aborted');
  }

  snapshot(): FaultSnapshot {
    return {
      drop: this.#drop,
      conflictFor: this.#conflictFor,
      conflictUntil: this.#conflictUntil,
      failBeforeCommit: this.#failBeforeCommit,
      delay: this.#delay,
      hold: this.#hold,
      keepAlive: this.#keepAlive,
      held: this.#held.size,
    };
  }

  #releaseAll(outcome: HoldOutcome): void {
    if (outcome === 'released') this.#hold = false;
    for (const done of [...this.#held]) done(outcome);
  }
}
