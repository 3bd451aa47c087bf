import type { LockSection } from '../src/coordinator/coordinator.js';

/**
 * Web Locks kept between sections (`WebLocksCoordinator.hold`). A tab that holds an
 * intent's lock runs the next section at once: the click's request leaves in the same
 * frame, where asking the browser for the lock would wait for the next one (Chromium holds
 * lock grants that follow a click until it has drawn).
 *
 * A hold only takes a free lock (`ifAvailable`), so it never waits in the browser's queue:
 * whoever does wait there needs the lock for a section. Such a client asks over the
 * BroadcastChannel and the holder lets go as soon as no section runs; a holder also looks
 * at the queue every second, for a client that cannot ask (an older oncely in another tab
 * during a deploy). A hold that did not get the lock tries again every second.
 */

let sections = 0;
/** How often a waiting client asks again, a holder looks for waiters, a hold retries a busy lock. */
const ASK_AGAIN_MS = 200;
const CHECK_MS = 1_000;
/** A new hold retries a busy lock soon (a released one may still be letting go), then every CHECK_MS. */
const FIRST_RETRY_MS = 50;

interface Hold {
  readonly name: string;
  /** The `hold()` callers: each runs its section whenever the lock is (re)gained. */
  readonly holders: Set<{ onHeld: (section: LockSection) => Promise<void> }>;
  held: boolean;
  /** A request is with the browser: `'wait'` queued for a section, `'try'` if free. */
  asking: 'wait' | 'try' | undefined;
  /** Resolves once the lock is granted; a new one after each yield. */
  granted: Promise<void>;
  grant: () => void;
  /** Ends the lock callback: the browser passes the lock on. */
  letGo: () => void;
  /** The last section queued: sections run one after another. */
  tail: Promise<unknown>;
  /** Sections queued or running. */
  busy: number;
  /** The section that ended last under the current grant. */
  last: number | undefined;
  /** Another client asked while a section ran: yield when it ends. */
  wanted: boolean;
  /** No caller holds it any more: let go when idle. */
  closed: boolean;
  /** The pending retry of a busy lock, and how long the next one waits. */
  retry: ReturnType<typeof setTimeout> | undefined;
  delay: number;
}

const nextSection = (after: number | undefined): LockSection => ({ id: ++sections, after });

/** Rejects with the signal's reason if it aborts before `started()` turns true. */
function abortable<T>(run: Promise<T>, signal: AbortSignal | undefined, started: () => boolean): Promise<T> {
  if (!signal) return run;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      if (!started()) reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    run.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

const unref = (timer: unknown) => (timer as { unref?: () => void }).unref?.();

export class LockHolds {
  readonly #holds = new Map<string, Hold>();
  /**
   * The page is hidden: no lock is kept between sections. A background tab may be frozen
   * and could not answer another tab's ask; clicks come to visible pages.
   */
  #hidden = false;
  #unwatch = () => {};
  #checking: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly locks: LockManager,
    /** Tells the other tabs that this one waits for `name`. */
    private readonly ask: (name: string) => void,
    /** How often to retry a busy lock and look for waiters; `0`: never (tests in virtual time). */
    private readonly checkMs = CHECK_MS,
  ) {
    const page = (globalThis as { document?: Document }).document;
    if (!page?.addEventListener) return;
    const onVisibility = () => this.#setHidden(page.visibilityState === 'hidden');
    page.addEventListener('visibilitychange', onVisibility);
    this.#unwatch = () => page.removeEventListener('visibilitychange', onVisibility);
    onVisibility();
  }

  hold(name: string, onHeld: (section: LockSection) => Promise<void>): () => void {
    let h = this.#holds.get(name);
    if (!h) {
      h = {
        name,
        holders: new Set(),
        held: false,
        asking: undefined,
        granted: Promise.resolve(),
        grant: () => {},
        letGo: () => {},
        tail: Promise.resolve(),
        busy: 0,
        last: undefined,
        wanted: false,
        closed: false,
        retry: undefined,
        delay: FIRST_RETRY_MS,
      };
      h.granted = new Promise((resolve) => {
        h!.grant = resolve;
      });
      this.#holds.set(name, h);
      this.#request(h, 'try');
      this.#check();
    }
    const holder = { onHeld };
    h.holders.add(holder);
    if (h.held) this.#section(h, onHeld).catch(() => undefined);
    const hold = h;
    return () => {
      if (!hold.holders.delete(holder) || hold.holders.size > 0) return;
      hold.closed = true;
      if (this.#holds.get(name) === hold) this.#holds.delete(name);
      if (hold.busy === 0) this.#yield(hold);
    };
  }

  /**
   * Runs `fn` under the lock: at once when held here and idle, else after the sections
   * before it or once the lock is gained (asking the holder). Without a hold, one request.
   */
  run<T>(name: string, fn: (section: LockSection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const h = this.#holds.get(name);
    if (h) return this.#section(h, fn, signal);
    let started = false;
    const stop = this.#asking(name, () => started);
    const run = this.locks.request(name, signal ? { signal } : {}, () => {
      started = true;
      stop();
      return fn(nextSection(undefined));
    }) as Promise<T>;
    run.catch(stop);
    return run;
  }

  /**
   * Runs `fn` now, synchronously, when `name` is held here and idle (no section runs or
   * waits: none can be ahead of it); else `undefined`.
   */
  runHeld<T>(name: string, fn: (section: LockSection) => Promise<T>): Promise<T> | undefined {
    const h = this.#holds.get(name);
    if (!h?.held || h.busy > 0) return undefined;
    h.busy++;
    let settle: (ran: Promise<T>) => void = () => {};
    const run = new Promise<T>((resolve) => {
      settle = resolve;
    });
    // Queued before `fn` runs: a section asked for meanwhile waits for this one.
    h.tail = run.then(
      () => this.#ended(h),
      () => this.#ended(h),
    );
    const section = nextSection(h.last);
    h.last = undefined;
    let ran: Promise<T>;
    try {
      ran = fn(section);
    } catch (error) {
      ran = Promise.reject(error);
    }
    settle(
      ran.finally(() => {
        h.last = section.id;
      }),
    );
    return run;
  }

  /** Another tab asked for `name`: let it go now if idle, else when the sections end. */
  wanted(name: string): void {
    const h = this.#holds.get(name);
    if (!h?.held) return;
    if (h.busy === 0) this.#yield(h);
    else h.wanted = true;
  }

  close(): void {
    this.#unwatch();
    for (const h of this.#holds.values()) {
      h.closed = true;
      if (h.busy === 0) this.#yield(h);
    }
    this.#holds.clear();
  }

  #setHidden(hidden: boolean): void {
    this.#hidden = hidden;
    for (const h of this.#holds.values()) {
      if (hidden && h.held && h.busy === 0) this.#yield(h);
      else if (!hidden) this.#request(h, 'try');
    }
  }

  #section<T>(h: Hold, fn: (section: LockSection) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    h.busy++;
    this.#request(h, 'wait');
    let started = false;
    const stop = h.held ? () => {} : this.#asking(h.name, () => started || h.held);
    const run = h.tail
      .then(() => h.granted)
      .then(() => {
        stop();
        if (signal?.aborted) throw signal.reason;
        started = true;
        const section = nextSection(h.last);
        h.last = undefined;
        return fn(section).finally(() => {
          h.last = section.id;
        });
      });
    const done = () => {
      stop();
      this.#ended(h);
    };
    h.tail = run.then(done, done);
    return abortable(run, signal, () => started);
  }

  /** A section ended: with none left, the lock goes if it is not to be kept. */
  #ended(h: Hold): void {
    if (--h.busy > 0) return;
    if (h.closed || h.wanted || this.#hidden) this.#yield(h);
  }

  /** Asks the holder for `name` now and every ASK_AGAIN_MS until `granted()`. Returns the stop. */
  #asking(name: string, granted: () => boolean): () => void {
    this.ask(name);
    const timer = setInterval(() => (granted() ? clearInterval(timer) : this.ask(name)), ASK_AGAIN_MS);
    unref(timer);
    return () => clearInterval(timer);
  }

  /**
   * Asks the browser for the lock, unless held or already asked: `'wait'` queues (a section
   * needs it), `'try'` takes it only if free and otherwise tries again in CHECK_MS.
   */
  #request(h: Hold, how: 'wait' | 'try'): void {
    if (h.held || h.closed || h.asking === 'wait' || (how === 'try' && (h.asking || this.#hidden))) return;
    h.asking = how;
    this.locks
      .request(h.name, how === 'try' ? { ifAvailable: true } : {}, (lock) => {
        if (h.asking === how) h.asking = undefined;
        if (!lock) {
          // Busy: a section waiting here queues; an idle hold tries again later.
          if (h.busy > 0) this.#request(h, 'wait');
          else this.#later(h);
          return;
        }
        if (h.held) return; // already gained through the other request: pass this grant on
        return new Promise<void>((letGo) => {
          h.letGo = letGo;
          h.held = true;
          h.delay = FIRST_RETRY_MS;
          h.last = undefined;
          h.grant();
          if ((h.closed || this.#hidden) && h.busy === 0) return this.#yield(h);
          for (const { onHeld } of h.holders) this.#section(h, onHeld).catch(() => undefined);
        });
      })
      .catch(() => {
        // The request failed (the page is closing): nothing is held.
        if (h.asking === how) h.asking = undefined;
      });
  }

  /** Lets the lock go (the next in line gets it); a hold still wanted tries to take it again later. */
  #yield(h: Hold): void {
    h.wanted = false;
    if (h.held) {
      h.held = false;
      h.granted = new Promise((resolve) => {
        h.grant = resolve;
      });
      h.letGo();
    }
    if (!h.closed && !this.#hidden) this.#later(h);
  }

  /** Tries a busy or given-up lock again in a while: one retry pending per hold, waits doubling up to checkMs. */
  #later(h: Hold): void {
    if (this.checkMs <= 0 || h.retry) return;
    const delay = Math.min(h.delay, this.checkMs);
    h.delay = delay * 2;
    h.retry = setTimeout(() => {
      h.retry = undefined;
      this.#request(h, 'try');
    }, delay);
    unref(h.retry);
  }

  /**
   * Every CHECK_MS while holds exist: a lock held idle that someone waits for in the
   * browser's queue (holds never wait there) is let go, even if its waiter never asked.
   */
  #check(): void {
    if (this.#checking || this.checkMs <= 0 || typeof this.locks.query !== 'function') return;
    this.#checking = setInterval(() => {
      if (this.#holds.size === 0) {
        clearInterval(this.#checking);
        this.#checking = undefined;
        return;
      }
      this.locks.query().then(
        (snapshot) => {
          const waited = new Set((snapshot.pending ?? []).map((lock) => lock.name));
          for (const h of this.#holds.values()) if (h.held && h.busy === 0 && waited.has(h.name)) this.#yield(h);
        },
        () => undefined,
      );
    }, this.checkMs);
    unref(this.#checking);
  }
}
