/**
 * The outbox worker: takes pending intents of a scope under a worker lease and hands each
 * to the app, which re-issues the request from its own rows (oncely stores no bodies) or,
 * for an expired one, asks the provider what happened so that it can be settled.
 * No Node built-in here: the owner id is Web Crypto's, so edge bundles of `oncely/postgres` build.
 */
import { PENDING_STATES } from '../src/store/record-rules.js';
import type { IntentRecord } from '../src/store/store.js';
import { extendPending, type PendingIntent, releasePending, takePending } from './pending.js';
import type { PostgresStore } from './postgres-store.js';
import { settleIntent } from './reconcile.js';

export interface WorkerOptions {
  store: PostgresStore;
  scope: string;
  /**
   * Re-issue one intent, e.g. `const intent = await api.intent(record.name); await
   * intent.post('payouts', { json: bodyFromMyRows })`. The engine sends it under its stored
   * key. Throwing, or leaving it pending, gives it back for a later pass.
   */
  resend(record: IntentRecord, signal: AbortSignal): Promise<unknown>;
  /**
   * For an expired intent (sent, outcome unknown, key past retention): ask the provider
   * about `record.key` and say what happened; `undefined` leaves it for a later pass.
   * Without it, expired intents are given back untouched.
   */
  reconcile?(record: IntentRecord, signal: AbortSignal): Promise<'succeeded' | 'failed' | undefined>;
  /** Worker id in the lease. @default a random UUID */
  owner?: string;
  /** Intents taken per pass (and handled concurrently). @default 16 */
  batch?: number;
  /** Worker lease (ms), extended every third of it while the handlers run. @default 30_000 */
  leaseMs?: number;
  /** See `TakePendingOptions.idleAfter`. @default 30_000 */
  idleAfter?: number;
  /** How long (ms) an intent whose handler failed or left it pending is left alone. @default 5_000 */
  retryAfter?: number;
  /** Pause (ms) between passes that found nothing. @default 1_000 */
  interval?: number;
  /** A handler or database failure (the worker carries on). @default console.error */
  onError?(error: unknown, record?: IntentRecord): void;
  /** @default Date.now */
  now?: () => number;
}

export interface DrainReport {
  taken: number;
  /** Resent and now settled, or settled by reconciliation. */
  settled: number;
  /** Given back for a later pass (failed handler, still unknown, expired without `reconcile`). */
  deferred: number;
}

/** One pass: take a batch, run the handlers concurrently, give each intent back. */
export async function drainOnce(options: WorkerOptions, signal?: AbortSignal): Promise<DrainReport> {
  const { store, scope } = options;
  const now = options.now ?? Date.now;
  const owner = options.owner ?? crypto.randomUUID();
  const leaseMs = options.leaseMs ?? 30_000;
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const taken = await takePending(store, scope, {
    owner,
    limit: options.batch ?? 16,
    leaseMs,
    idleAfter: options.idleAfter,
    now: now(),
  });
  const report: DrainReport = { taken: taken.length, settled: 0, deferred: 0 };
  if (taken.length === 0) return report;
  const lost = new AbortController();
  const abort = () => lost.abort(signal?.reason);
  signal?.addEventListener('abort', abort, { once: true });
  const held = new Set(taken.map((item) => item.record.name));
  const heartbeat = setInterval(() => {
    const asked = [...held];
    extendPending(store, scope, asked, owner, now() + leaseMs).then(
      (kept) => {
        // Our lease lapsed and another worker may have taken one over: stop the handlers.
        if (asked.some((name) => held.has(name) && !kept.includes(name))) lost.abort(new Error('worker lease lost'));
      },
      (error) => onError(error),
    );
  }, leaseMs / 3);
  try {
    await Promise.all(
      taken.map(async (item) => {
        const settled = await handle(options, item, lost.signal).catch((error) => {
          onError(error, item.record);
          return false;
        });
        held.delete(item.record.name);
        if (settled) report.settled++;
        else report.deferred++;
        await releasePending(
          store,
          scope,
          item.record.name,
          owner,
          settled ? undefined : now() + (options.retryAfter ?? 5_000),
        ).catch((error) => onError(error, item.record));
      }),
    );
  } finally {
    clearInterval(heartbeat);
    signal?.removeEventListener('abort', abort);
  }
  return report;
}

/** Runs the app's handler; true when the intent is settled afterwards. */
async function handle(options: WorkerOptions, item: PendingIntent, signal: AbortSignal): Promise<boolean> {
  const { store, scope } = options;
  const { record } = item;
  if (item.expired) {
    const outcome = await options.reconcile?.(record, signal);
    if (outcome === undefined) return false;
    const stored = await settleIntent(store, scope, record.name, { key: record.key, outcome, now: options.now?.() });
    return stored !== undefined && !PENDING_STATES.includes(stored.state) && stored.state !== 'ready';
  }
  await options.resend(record, signal);
  const after = await store.get(scope, record.name);
  return (
    after === undefined ||
    after.key !== record.key ||
    !(PENDING_STATES.includes(after.state) || after.state === 'ready')
  );
}

export interface Worker {
  /** Stops taking intents, aborts running handlers' signals and waits for the pass to end. */
  stop(): Promise<void>;
  /** Resolves after the first pass that found nothing to do (for tests and scripts). */
  idle(): Promise<void>;
}

/** Drains `scope` until stopped: passes back to back while there is work, `interval` apart when there is none. */
export function startWorker(options: WorkerOptions): Worker {
  const controller = new AbortController();
  const owner = options.owner ?? crypto.randomUUID();
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const idleWaiters: (() => void)[] = [];
  const loop = (async () => {
    while (!controller.signal.aborted) {
      const report = await drainOnce({ ...options, owner }, controller.signal).catch((error) => {
        onError(error);
        return undefined;
      });
      if (report?.taken) continue;
      if (report) for (const resolve of idleWaiters.splice(0)) resolve();
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, options.interval ?? 1_000);
        controller.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve(undefined);
          },
          { once: true },
        );
      });
    }
  })();
  return {
    stop: async () => {
      controller.abort(new Error('worker stopped'));
      await loop;
    },
    idle: () => new Promise<void>((resolve) => idleWaiters.push(resolve)),
  };
}
