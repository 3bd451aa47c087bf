import type { LockSection } from '../coordinator/coordinator.js';
import {
  type ErrorContext,
  InProgressError,
  IntentExpiredError,
  IntentGoneError,
  IntentMismatchError,
} from '../errors.js';
import { untilOnline } from '../http/network.js';
import type { Profile } from '../profiles/profiles.js';
import { type AttemptReport, type LoopEnd, retryLoop, sleep } from '../retry/loop.js';
import { parseRetryAfter, RetryBudget } from '../retry/policy.js';
import { horizon, intentId, pastRetention, SENT_STATES } from '../store/record-rules.js';
import type { IntentLease, IntentRecord } from '../store/store.js';
import type { ClientContext } from './context.js';
import { type CallEnd, decide, type Verdict } from './decide.js';
import { announce, emit, errorFor } from './ending.js';
import { changedParts } from './fingerprint.js';
import { mintKey } from './keys.js';
import { every, storeCall } from './store-call.js';
import { renewLease, toInFlight, toInFlightOver, toSettled, toUnsent, withMoreAttempts } from './transitions.js';

/** A creation time this far in the future is a clock that jumped, not skew between machines. */
const CLOCK_SKEW = 5 * 60 * 1000;
/** What a call may take past its deadline to write its outcome (a store slower than that fails it). */
export const SETTLE_GRACE = 1_000;

/** `client.send()` found the intent formed before: it sends under the stored key instead. */
class FormedElsewhere extends Error {}
export const isFormedElsewhere = (error: unknown): boolean => error instanceof FormedElsewhere;

/** What a call of `request()`, `run()` or `fetch()` brings to the engine. */
export interface CallPlan<V, T> {
  fingerprint: string;
  signal: AbortSignal | undefined;
  /** For `attempt` events. */
  method: string;
  url: string;
  /**
   * The server keys this request (see {@link keyedBy}). One that is not keyed is not
   * idempotent there: the engine sends it once, never retried (a redirect is still followed).
   */
  keyed: boolean;
  /** Sends attempt `n` under `key`, within `timeout` ms; never throws. */
  attempt(n: number, timeout: number, signal: AbortSignal | undefined): Promise<AttemptReport<V>>;
  /**
   * The caller's value for a call the table ended with `ok` (or `http_error`, for `fetch()`),
   * within `left` ms.
   */
  finish(verdict: Verdict, end: LoopEnd<V>, context: ErrorContext, left: number): T | Promise<T>;
}

/** The live object's view of its intent, which the engine reads and moves on. */
export interface IntentHandle {
  readonly ctx: ClientContext;
  readonly scope: string;
  readonly name: string;
  readonly key: string;
  record: IntentRecord;
  /**
   * The lock section in which `record` was last read or written, while this client kept
   * the lock since ({@link LockSection.after}): then no other client can have sent it.
   */
  section?: number | undefined;
  /** Formed inside the app's transaction: a record not found may not have committed yet. */
  readonly inTransaction?: boolean;
  /** `record` is not stored yet (`client.send`): the `in_flight` write stores it, claim and send in one. */
  unstored?: boolean;
  /** The key as the profile's header carries it, once encoded (`keyHeader`). */
  keyHeader?: string;
}

/**
 * The one rule of which requests the server keys, for every transport: the methods the
 * profile keys (ietf: POST and PATCH; stripe: POST), or any with `sendKey: true`.
 */
export const keyedBy = (profile: Profile, method: string, sendKey?: boolean): boolean =>
  sendKey === true || profile.keyedMethods.includes(method);

/**
 * This process's id, from the crypto source at its first call: an id made at module load
 * would be the same in every process started from one snapshot.
 */
let processId: string | undefined;
/** Calls of this process so far: with the process's random id, an owner no other call has. */
let calls = 0;
/** A lease owner unique to this call, across processes and machines. */
function newOwner(): string {
  processId ??= mintKey('v4', '', '');
  return `${processId}:${++calls}`;
}
/** Calls running in this process: a lease of this process whose call is gone is taken over at once. */
const liveOwners = new Set<string>();

const isStale = (lease: IntentLease | undefined, now: number) =>
  !lease ||
  lease.until <= now ||
  (processId !== undefined && lease.owner.startsWith(`${processId}:`) && !liveOwners.has(lease.owner));

/** The call's deadline passed while another call of the intent held its lock (another tab's, with Web Locks). */
export const lockHeld = (h: IntentHandle) =>
  new InProgressError({ ...contextOf(h), holder: h.ctx.coordinator.coversStore ? 'tab' : 'client' });

export const contextOf = (h: IntentHandle, extra: ErrorContext & { sent?: boolean } = {}) => ({
  key: h.key,
  intent: h.name,
  scope: h.scope,
  ...extra,
});

/**
 * One atomic store write before the first byte leaves: checks that the stored record may
 * be sent with this request (same intent and key, same fingerprint, not expired, not held
 * by a live lease of another client) and marks it `in_flight` under this call's lease.
 * Waits out another client's lease within the budget. Resolves with the record before.
 */
async function begin(h: IntentHandle, plan: CallPlan<unknown, unknown>, lease: () => IntentLease, budget: RetryBudget) {
  const { ctx } = h;
  const queued = landed(h);
  if (queued) await queued;
  await applySentNote(h, budget.remaining());
  let waitedOn: IntentLease | undefined;
  for (let wait = 50; ; wait = Math.min(wait * 2, 1_000)) {
    const now = ctx.now();
    let before: IntentRecord | undefined;
    let refusal: 'gone' | 'elsewhere' | 'mismatch' | 'expired' | 'clock' | 'busy' | undefined;
    const stored = await storeCall(
      ctx,
      'marking the intent in flight',
      () =>
        ctx.store.update(h.scope, h.name, (stored) => {
          // Unstored, a missing record is formed by this write; one formed before is not ours.
          const current = h.unstored && !stored ? h.record : stored;
          before = current;
          if (h.unstored && stored) refusal = 'elsewhere';
          else if (!current || current.key !== h.key) refusal = 'gone';
          else if (current.fingerprint !== undefined && changed(current.fingerprint, plan).length) refusal = 'mismatch';
          else if (SENT_STATES.includes(current.state) && current.createdAt > now + CLOCK_SKEW) refusal = 'clock';
          else if (SENT_STATES.includes(current.state) && pastRetention(current, now, ctx.keyTtl)) refusal = 'expired';
          // A live lease of another client, whatever the state (a succeeded intent sent again stays succeeded).
          else if (!ctx.coordinator.coversStore && current.lease && !isStale(current.lease, now)) refusal = 'busy';
          else refusal = undefined;
          return refusal || !current ? undefined : toInFlight(current, plan.fingerprint, now, lease());
        }),
      contextOf(h),
      budget.remaining(),
    );
    if (before?.key === h.key) h.record = before;
    const held = before?.lease;
    if (refusal === 'busy') {
      const { owner, until } = held!;
      if (!waitedOn) emit(h, { type: 'lease_wait', phase: 'waiting', holder: owner, until });
      waitedOn = held;
      if (budget.remaining() <= wait) {
        emit(h, { type: 'failure', code: 'IN_PROGRESS', attempts: 0 });
        throw new InProgressError({ ...contextOf(h), holder: 'client' });
      }
      await sleep(wait, plan.signal);
      continue;
    }
    if (refusal === 'elsewhere') throw new FormedElsewhere();
    if (refusal === 'gone')
      throw new IntentGoneError({ ...contextOf(h), reason: h.inTransaction ? 'transaction' : 'other' });
    if (refusal === 'mismatch') mismatch(h, before!.fingerprint!, plan);
    if (refusal)
      throw new IntentExpiredError({
        ...contextOf(h),
        createdAt: before!.createdAt,
        keyTtl: horizon(before!, ctx.keyTtl),
        reason: refusal,
      });
    if (stored) h.record = stored;
    h.unstored = false;
    // A lease of another call found stale was taken over; one waited on was released or ran out.
    const stale = held && held.owner !== stored?.lease?.owner ? held : undefined;
    if (stale || waitedOn) {
      const { owner, until } = (stale ?? waitedOn)!;
      emit(h, { type: 'lease_wait', phase: stale ? 'taken_over' : 'released', holder: owner, until });
    }
    report(h);
    return { before: before!, warm: false, stored: Promise.resolve(), drop: () => {} };
  }
}

/**
 * The write before the first byte, when the coordinator has kept the intent's lock since
 * this object read the record under it, and the record was `ready`: no client that sends
 * can have touched it since, so the record in memory is the stored one and the request
 * need not wait for the store (IndexedDB answers a click's write only after the next
 * frame). The `in_flight` write goes out together with the first attempt; every later
 * write waits for it. What writes without the lock (claims, resets, `clear()`, sweeps) can
 * only have deleted the record or put another unsent one in its place: the write then
 * puts this sent intent back (a sent intent is never forgotten). Before anything, the
 * coordinator notes the sent record where a reload finds it (localStorage); without such a
 * note this path is not taken (`undefined`).
 */
function beginWarm(h: IntentHandle, plan: CallPlan<unknown, unknown>, lease: () => IntentLease, budget: RetryBudget) {
  const { ctx } = h;
  const before = h.record;
  if (before.fingerprint !== undefined && changed(before.fingerprint, plan).length)
    mismatch(h, before.fingerprint, plan);
  const next = toInFlight(before, plan.fingerprint, ctx.now(), lease());
  // Without a note that survives a reload (no localStorage) the strict path is taken.
  const drop = ctx.coordinator.noteSent?.(next);
  if (!drop) return undefined;
  h.record = next;
  // Started once the request is on its way (the call gets there in this turn, without waits).
  const stored = Promise.resolve()
    .then(() =>
      storeCall(
        ctx,
        'marking the intent in flight',
        () => ctx.store.update(h.scope, h.name, (current) => toInFlightOver(current, next)),
        contextOf(h, { sent: true }),
        budget.remaining(),
      ),
    )
    .then((record) => {
      drop();
      if (record?.key === h.key) h.record = record;
      report(h);
    });
  return { before, warm: true, stored, drop };
}

/**
 * Under the intent's lock: stores as sent an intent that a page sent and left (reload,
 * crash) before its `in_flight` write landed, from the coordinator's note (`noteSent`).
 */
export async function applySentNote(h: IntentHandle, within?: number): Promise<void> {
  const { ctx } = h;
  const note = ctx.coordinator.sentNote?.(h.scope, h.name);
  if (!note) return;
  const { record } = note;
  // A note that is not of this intent, in flight, is garbage: dropped, never stored.
  if (record.scope !== h.scope || record.name !== h.name || record.state !== 'in_flight') return note.drop();
  const stored = await storeCall(
    ctx,
    'storing an intent sent before a reload',
    () => ctx.store.update(h.scope, h.name, (current) => toInFlightOver(current, record)),
    contextOf(h, { sent: true }),
    within,
  );
  note.drop();
  if (stored?.key === h.key) {
    h.record = stored;
    report(h);
  }
}

/** Waits for this intent's outcome write queued by an earlier call, if any (read your writes). */
export function landed(h: IntentHandle): Promise<void> | undefined {
  return h.ctx.writes.landed(intentId(h.scope, h.name));
}

const warm = (h: IntentHandle, section: LockSection | undefined) =>
  h.ctx.coordinator.coversStore === true &&
  !landed(h) &&
  section?.after !== undefined &&
  section.after === h.section &&
  h.record.state === 'ready' &&
  h.record.key === h.key;

const changed = (stored: string, plan: CallPlan<unknown, unknown>) => changedParts(stored, plan.fingerprint);

/** This request is not the one the intent was sent with: the client-side 422. */
function mismatch(h: IntentHandle, stored: string, plan: CallPlan<unknown, unknown>): never {
  emit(h, { type: 'mismatch', source: 'local' });
  throw new IntentMismatchError({ ...contextOf(h), changed: changed(stored, plan) });
}

function report(h: IntentHandle): void {
  const { hub, coordinator } = h.ctx;
  if (hub.listens('state')) hub.emit({ type: 'state', record: { ...h.record }, source: 'local' });
  try {
    coordinator.publish({ ...h.record });
  } catch {
    // Telling the other clients is best effort: a coordinator's failure must not end the call.
  }
}

/** Writes `next(current)` under the key this object holds, then reports the record it sees. */
async function write(
  h: IntentHandle,
  what: string,
  next: (current: IntentRecord | undefined) => IntentRecord | undefined,
  sent: boolean,
  durability: 'strict' | 'relaxed',
  within: number,
): Promise<void> {
  const stored = await storeCall(
    h.ctx,
    what,
    () => h.ctx.store.update(h.scope, h.name, next, { durability }),
    contextOf(h, { sent }),
    within,
  );
  if (stored?.key === h.key) h.record = stored;
  report(h);
}

/** The platform does not say it is offline: an attempt may leave without waiting for the network. */
function online(h: IntentHandle): boolean {
  try {
    return h.ctx.network?.online !== false;
  } catch {
    return false; // the loop's wait reports what the app's `online` threw
  }
}

/**
 * While the platform is offline no attempt leaves: wait for the network within the deadline
 * and `offlineWait`. Resolves `undefined` to go on, or the report of an attempt that never
 * left (not retried: the wait used what the call had). The `network` option is the app's
 * code: an `online` or `onOnline()` that throws ends the call as an attempt that never left,
 * the throw as its cause (rejects only with the signal's reason).
 */
async function waitForNetwork(
  h: IntentHandle,
  budget: RetryBudget,
  signal: AbortSignal | undefined,
): Promise<AttemptReport<never> | undefined> {
  const { network, offlineWait } = h.ctx;
  if (!network) return undefined;
  let error: unknown;
  try {
    if (network.online !== false) return undefined;
    emit(h, { type: 'offline', phase: 'paused' });
    if (await untilOnline(network, Math.min(budget.remaining(), offlineWait), signal)) {
      emit(h, { type: 'offline', phase: 'resumed' });
      return undefined;
    }
    error = new DOMException('The network stayed offline', 'NetworkError');
  } catch (thrown) {
    if (signal?.aborted && thrown === signal.reason) throw thrown;
    error = thrown;
  }
  return { outcome: 'no_answer', replayed: false, sent: false, final: true, error };
}

/** An attempt whose transport or callback threw: it may have sent; not retried, the outcome unknown. */
async function attemptSafely<V>(run: () => Promise<AttemptReport<V>>): Promise<AttemptReport<V>> {
  try {
    return await run();
  } catch (error) {
    return { outcome: 'no_answer', replayed: false, sent: true, final: true, error };
  }
}

/**
 * Sends one call of an intent: the write before the first byte, the one retry loop, the
 * decision table, the write of its verdict, the events, and the caller's value or error.
 * Runs under the coordinator's lock for the intent (one call in flight per intent). The
 * call's deadline runs from `startedAt` (the caller's call, hashing and lock wait included)
 * and bounds every store call in it; the outcome write gets {@link SETTLE_GRACE} past it.
 */
export async function sendCall<V, T>(
  h: IntentHandle,
  plan: CallPlan<V, T>,
  section?: LockSection,
  startedAt?: number,
): Promise<T> {
  const { ctx } = h;
  const owner = newOwner();
  const lease = (): IntentLease => ({ owner, until: ctx.now() + ctx.leaseTtl });
  const budget = new RetryBudget(ctx.retry, ctx.monotonic, ctx.now, ctx.random, startedAt);
  const afterLoop = () => budget.remaining() + SETTLE_GRACE;
  // The wait for the lock used the whole deadline: another call of this intent still runs.
  if (budget.remaining() <= 0) throw lockHeld(h);
  liveOwners.add(owner);
  let stopRenewal = () => {};
  try {
    const untyped = plan as CallPlan<unknown, unknown>;
    const {
      before,
      warm: sentWarm,
      stored,
      drop,
    } = (warm(h, section) && beginWarm(h, untyped, lease, budget)) || (await begin(h, untyped, lease, budget));
    const sending = h.record;
    h.section = undefined;
    let counted = 1; // the in_flight write counted attempt 1
    /** Hands attempt `n` to the transport now, then tells it went out: no listener runs ahead of it. */
    const send = (n: number): Promise<AttemptReport<V>> => {
      const attempting = attemptSafely(() => plan.attempt(n, budget.attemptTimeout(), plan.signal));
      emit(h, { type: 'attempt', attempt: n, method: plan.method, url: plan.url });
      return attempting.then((r) => {
        if (!plan.keyed && !r.follow) r.final = true;
        if (r.outcome === 'in_progress' && r.status) {
          const hint = r.headers && parseRetryAfter(r.headers, ctx.now());
          emit(h, { type: 'conflict', status: r.status, ...(hint !== undefined ? { retryAfter: hint } : {}) });
        }
        return r;
      });
    };
    // Under a kept lock the first attempt leaves at once: the loop and the lease's renewal are set up after it.
    const first = sentWarm && online(h) ? send(1) : undefined;
    // Later writes wait for the in_flight one; its failure is the settle write's to report.
    const landed = stored.catch(() => undefined);
    stopRenewal = every(ctx.leaseTtl / 3, () => {
      // A call past its deadline keeps no lease alive: it is only writing its outcome.
      if (budget.remaining() <= 0) return;
      void landed.then(() =>
        ctx.store
          .update(h.scope, h.name, (c) => renewLease(c, lease()), { durability: 'relaxed' })
          .catch(() => undefined),
      );
    });
    const end = await retryLoop(
      async (n) => {
        if (n === 1 && first) return first;
        if (n > counted) {
          // So that pending() elsewhere sees the attempts made; a lost count is harmless.
          await landed;
          await storeCall(
            ctx,
            'counting attempts',
            () =>
              ctx.store.update(h.scope, h.name, (c) => c && withMoreAttempts(c, owner, n - counted), {
                durability: 'relaxed',
              }),
            contextOf(h, { sent: true }),
            budget.remaining(),
          ).then(
            () => {
              counted = n;
            },
            () => undefined,
          );
        }
        const offline = online(h) ? undefined : await waitForNetwork(h, budget, plan.signal);
        if (offline) return offline;
        return send(n);
      },
      budget,
      plan.signal,
      {
        onRetry: (n, delay, r) => {
          const reason = r.status ? 'status' : (r.error as Error)?.name === 'TimeoutError' ? 'timeout' : 'network';
          emit(h, { type: 'retry', attempt: n, delay, reason, ...(r.status ? { status: r.status } : {}) });
        },
      },
    );
    const sent = end.sent > 0;
    const callEnd: CallEnd = {
      last: end.last.outcome,
      replayed: end.last.replayed,
      unansweredBefore: end.unansweredBefore,
      sent,
      before: before.state,
    };
    const verdict = decide(callEnd);
    stopRenewal();
    await landed;
    if (sent) {
      const delta = end.sent - counted;
      const status = end.last.status;
      // Over the record as the in_flight write left it. A call started under a kept lock
      // (whose in_flight write may not have landed) also goes over a record deleted or
      // replaced by an unsent one meanwhile, putting the sent intent back; a strict call's
      // record was stored sent before the first byte, and nothing outside a call forgets a
      // sent intent without `force` (then whoever forced it is not overruled).
      const settle = (c: IntentRecord | undefined) => {
        const own = c?.key === h.key ? c : undefined;
        const base = (sentWarm && toInFlightOver(c, sending)) || own;
        return base && toSettled(base, verdict.state, owner, delta, ctx.now(), status);
      };
      // The call ends once its outcome write is queued: the key and the in_flight record are
      // durable already, so a crash before this write lands leaves the intent in flight, resumed
      // under its key (the server replays). This object sees the outcome at once; reads through
      // the clients of this store wait for the write (`QueuedWrites.landed`). A write that fails
      // (a full disk, a quota) is an `unsaved` event, and the intent stays in flight (and the
      // note stays), so a resend under its key gets the replay.
      const inFlight = h.record;
      const expected = settle(inFlight);
      if (expected) h.record = expected;
      const within = afterLoop();
      ctx.writes.queue(intentId(h.scope, h.name), () =>
        write(h, 'recording the outcome', settle, true, 'relaxed', within).then(drop, (error: unknown) => {
          if (h.record === expected) h.record = inFlight;
          emit(h, { type: 'unsaved', error });
        }),
      );
    } else {
      drop(); // nothing left: a note saying otherwise would mark a never-sent intent in flight
      await write(
        h,
        'undoing an unsent call',
        (c) => (c?.key === h.key ? toUnsent(c, before, owner) : undefined),
        false,
        'strict',
        afterLoop(),
      );
    }
    h.section = section?.id;
    const context = contextOf(h, { attempts: end.attempts });
    announce(h, verdict, end);
    if (verdict.result === 'ok' || verdict.result === 'http_error' || verdict.result === 'key_reused')
      return await plan.finish(verdict, end, context, afterLoop());
    throw errorFor(verdict, end, context);
  } finally {
    stopRenewal();
    liveOwners.delete(owner);
  }
}
