import type { IntentRecord, StoreEvent } from './store/store.js';

interface EventBase {
  scope: string;
  intent: string;
  /**
   * The idempotency key. Not enumerable, as on errors: `JSON.stringify(event)` and
   * `util.inspect(event)` leave it out, since it can replay the request.
   */
  readonly key: string;
}

/** Everything a client reports. Subscribe with `client.on(type, listener)`. */
export type OncelyEvent =
  | (EventBase & { type: 'attempt'; attempt: number; method: string; url: string })
  | (EventBase & {
      type: 'retry';
      attempt: number;
      delay: number;
      reason: 'network' | 'timeout' | 'status';
      status?: number;
    })
  | (EventBase & { type: 'replay'; status: number })
  | (EventBase & { type: 'conflict'; status: number; retryAfter?: number })
  | (EventBase & { type: 'mismatch'; source: 'local' | 'server'; status?: number })
  | (EventBase & { type: 'unknown'; attempts: number })
  | (EventBase & { type: 'success'; status?: number; replayed: boolean; attempts: number })
  | (EventBase & { type: 'failure'; code: string; status?: number; attempts: number })
  /**
   * Another client's (process's, machine's) lease holds the intent: the call starts
   * `waiting` for it, then goes on once it is `released`, or `taken_over` once it ran out
   * (its holder died). `holder` is the lease's random owner id, `until` when it runs out.
   */
  | (EventBase & { type: 'lease_wait'; phase: 'waiting' | 'released' | 'taken_over'; holder: string; until: number })
  /**
   * A call's outcome could not be stored (a full disk, the storage quota). The call ended
   * once the write was queued, so this comes after it (the caller has the server's answer);
   * the store still has the intent in flight, so a resend under its key (a reload resumes
   * it) gets the replay. `error` is the `StoreError`.
   */
  | (EventBase & { type: 'unsaved'; error: unknown })
  /** The platform is offline: the call waits for the network before its next attempt (`paused`), then goes on (`resumed`). */
  | (EventBase & { type: 'offline'; phase: 'paused' | 'resumed' })
  | { type: 'state'; record: IntentRecord; source: 'local' | 'remote' }
  | { type: 'store'; event: StoreEvent };

export type OncelyEventType = OncelyEvent['type'];
export type EventOf<T extends OncelyEventType> = Extract<OncelyEvent, { type: T }>;

/**
 * Counters since the client was created. Replay rate = `replays / successes`: how often
 * a retry found the server had already done the work.
 */
export interface ClientStats {
  attempts: number;
  retries: number;
  replays: number;
  conflicts: number;
  mismatches: number;
  unknowns: number;
  successes: number;
  failures: number;
}

const COUNTED = {
  attempt: 'attempts',
  retry: 'retries',
  replay: 'replays',
  conflict: 'conflicts',
  mismatch: 'mismatches',
  unknown: 'unknowns',
  success: 'successes',
  failure: 'failures',
} as const satisfies Partial<Record<OncelyEventType, keyof ClientStats>>;

type Listener = (event: OncelyEvent) => void;

/** `object` with its `key` kept but not enumerable: readable, yet no `JSON.stringify` or `util.inspect` of a log line prints it. */
const withKeyHidden = <T extends { key: string }>(object: T): T =>
  Object.defineProperty(object, 'key', { value: object.key, enumerable: false, writable: false });

/**
 * The event as listeners get it: the key as errors have it (`event.key`, `event.record.key`),
 * left out of serialisers and inspectors, since it can replay the request. A copy: the
 * engine's own objects (a state event's record is the store's) are left as they are.
 */
function keyHidden(event: OncelyEvent): OncelyEvent {
  if (event.type === 'store') return event;
  if (event.type === 'state') return { ...event, record: withKeyHidden({ ...event.record }) };
  return withKeyHidden({ ...event });
}

/** A tiny typed emitter that also keeps the counters. */
export class EventHub {
  readonly #listeners = new Map<OncelyEventType | '*', Set<Listener>>();
  /** Every counter at 0, in the order of `COUNTED`. */
  readonly stats: ClientStats = Object.fromEntries(Object.values(COUNTED).map((counter) => [counter, 0])) as never;

  on<T extends OncelyEventType | '*'>(
    type: T,
    listener: (event: T extends OncelyEventType ? EventOf<T> : OncelyEvent) => void,
  ): () => void {
    const set = this.#listeners.get(type) ?? new Set();
    this.#listeners.set(type, set);
    set.add(listener as Listener);
    return () => set.delete(listener as Listener);
  }

  /** True when someone hears events of `type` (directly or through '*'). */
  listens(type: OncelyEventType): boolean {
    return (this.#listeners.get(type)?.size ?? 0) > 0 || (this.#listeners.get('*')?.size ?? 0) > 0;
  }

  emit(event: OncelyEvent): void {
    const counter = COUNTED[event.type as keyof typeof COUNTED];
    if (counter) this.stats[counter]++;
    if (!this.listens(event.type)) return;
    const shown = keyHidden(event);
    this.#call(this.#listeners.get(event.type), shown);
    this.#call(this.#listeners.get('*'), shown);
  }

  #call(listeners: Set<Listener> | undefined, event: OncelyEvent): void {
    if (!listeners) return;
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        // A listener's bug must not break a payment in flight.
        console.error('oncely: an event listener threw', error);
      }
    }
  }
}
