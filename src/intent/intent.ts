import type { LockSection } from '../coordinator/coordinator.js';
import {
  CancelledError,
  IntentMismatchError,
  IntentPendingError,
  InvalidArgumentError,
  NotSentError,
  OncelyError,
} from '../errors.js';
import type { StandardSchemaV1 } from '../http/schema.js';
import { intentId, isPending } from '../store/record-rules.js';
import type { IntentRecord } from '../store/store.js';
import { applySentNote, type CallPlan, contextOf, type IntentHandle, landed, lockHeld, sendCall } from './call.js';
import type { ClientContext } from './context.js';
import { emit } from './ending.js';
import { changedParts } from './fingerprint.js';
import { mintKey } from './keys.js';
import type { DataOf, IntentResponse, RequestOptions } from './options.js';
import { keyHeader, requestPlan } from './plans.js';
import { storeCall, watch } from './store-call.js';

export type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './options.js';

/**
 * What `intent.post<T>(path)` (a ky habit) is told, as the path it would need: oncely
 * types `res.data` only from a schema it also checks, never from a bare type argument.
 */
type PassSchema<_T> =
  'oncely types res.data from the `schema` option (zod, valibot… any Standard Schema), which it also validates: pass `schema`, not a type argument';

/** The handle of each live Intent, for the calls made outside the class (`run()`, `intentFetch()`). */
const handles = new WeakMap<Intent, IntentHandle>();

/**
 * One user intent (a checkout, a payout) and its idempotency key. Get it from
 * `client.intent(name)`; every request it sends carries the same key.
 */
export class Intent {
  readonly #h: IntentHandle;

  /** @internal `unstored`: `record` is not stored yet; the first send's write stores it (`client.send`). */
  constructor(ctx: ClientContext, record: IntentRecord, inTransaction = false, unstored = false) {
    this.#h = { ctx, scope: record.scope, name: record.name, key: record.key, record, inTransaction, unstored };
    handles.set(this, this.#h);
  }

  get name(): string {
    return this.#h.name;
  }
  get scope(): string {
    return this.#h.scope;
  }
  /** The idempotency key sent on every attempt. */
  get key(): string {
    return this.#h.key;
  }
  get state(): IntentRecord['state'] {
    return this.#h.record.state;
  }
  /** A copy of the stored record as last seen by this object. */
  get record(): IntentRecord {
    return { ...this.#h.record };
  }

  /** @deprecated A type argument alone is not checked: pass `schema`, which types and validates `res.data`. */
  post<T>(path: PassSchema<T>, options?: RequestOptions): never;
  post<S extends StandardSchemaV1 | undefined = undefined>(
    path: string,
    options?: RequestOptions<S>,
  ): Promise<IntentResponse<DataOf<S>>>;
  post(path: string, options?: RequestOptions<StandardSchemaV1 | undefined>) {
    return this.request('POST', path, options);
  }
  /** @deprecated A type argument alone is not checked: pass `schema`, which types and validates `res.data`. */
  patch<T>(path: PassSchema<T>, options?: RequestOptions): never;
  patch<S extends StandardSchemaV1 | undefined = undefined>(
    path: string,
    options?: RequestOptions<S>,
  ): Promise<IntentResponse<DataOf<S>>>;
  patch(path: string, options?: RequestOptions<StandardSchemaV1 | undefined>) {
    return this.request('PATCH', path, options);
  }
  /** @deprecated A type argument alone is not checked: pass `schema`, which types and validates `res.data`. */
  put<T>(path: PassSchema<T>, options?: RequestOptions): never;
  put<S extends StandardSchemaV1 | undefined = undefined>(
    path: string,
    options?: RequestOptions<S>,
  ): Promise<IntentResponse<DataOf<S>>>;
  put(path: string, options?: RequestOptions<StandardSchemaV1 | undefined>) {
    return this.request('PUT', path, options);
  }
  /** @deprecated A type argument alone is not checked: pass `schema`, which types and validates `res.data`. */
  delete<T>(path: PassSchema<T>, options?: RequestOptions): never;
  delete<S extends StandardSchemaV1 | undefined = undefined>(
    path: string,
    options?: RequestOptions<S>,
  ): Promise<IntentResponse<DataOf<S>>>;
  delete(path: string, options?: RequestOptions<StandardSchemaV1 | undefined>) {
    return this.request('DELETE', path, options);
  }

  /** Sends the request under this intent's key, retrying within the budget. */
  async request<S extends StandardSchemaV1 | undefined = undefined>(
    method: string,
    path: string,
    options: RequestOptions<S> = {},
  ): Promise<IntentResponse<DataOf<S>>> {
    return callWith(this, (h) => requestPlan(h, method, path, options));
  }

  /**
   * Forgets this intent so the next `client.intent(name)` mints a new key. Use it when the
   * app has decided on a new operation (after success, a definitive failure, or a
   * reconciled unknown). Refuses while a call of this intent is in flight here, and for
   * derived keys (the same name always derives the same key: use a new name instead).
   * Refuses with `IntentPendingError` while its request may have taken effect unanswered
   * (`in_flight`, `unknown`, or sent right now by another client or process): resume or
   * reconcile it first, or pass `{ force: true }` once you know.
   */
  async reset(options: { force?: boolean } = {}): Promise<void> {
    const { ctx } = this.#h;
    if (ctx.inflight.has(intentId(this.scope, this.name)))
      throw new InvalidArgumentError(
        `Intent "${this.name}" has a call in flight; wait for it before reset().`,
        contextOf(this.#h),
      );
    if (typeof ctx.keys === 'object' && this.key === mintKey(ctx.keys, this.scope, this.name))
      throw new InvalidArgumentError(
        `Intent "${this.name}" has a derived key: the same name always derives the same key, so reset() cannot give it a new one. Form a new operation under a new name (e.g. with an attempt number: \`payout:\${id}:2\`).`,
        contextOf(this.#h),
      );
    const force = options.force === true;
    const context = contextOf(this.#h);
    const pending = (record: IntentRecord | undefined) =>
      !force && record?.key === this.key && isPending(record, ctx.now());
    const refuse = () => new IntentPendingError({ ...context, names: [this.name] });
    await landed(this.#h);
    // Checked first, then again inside the store's delete (another process may send in between).
    const stored = await storeCall(ctx, 'reading the intent', () => ctx.store.get(this.scope, this.name), context);
    if (pending(stored)) throw refuse();
    await storeCall(
      ctx,
      'forgetting the intent',
      () => ctx.store.delete(this.scope, this.name, this.key, force ? {} : { keepPending: ctx.now() }),
      context,
    );
    if (!force) {
      const kept = await storeCall(ctx, 'reading the intent', () => ctx.store.get(this.scope, this.name), context);
      if (kept?.key === this.key) throw refuse();
    }
    // The app decided: a note that this key was sent must not bring it back over the next one.
    const note = ctx.coordinator.sentNote?.(this.scope, this.name);
    if (note?.record.key === this.key) note.drop();
  }

  /** Re-reads the stored record (another tab or process may have moved it on). */
  refresh(): Promise<IntentRecord> {
    return this.#readIn(undefined);
  }

  /**
   * Waits until no client sharing the coordinator (another tab, another process, a call
   * of this client) is sending this intent, then re-reads the stored record. An
   * `in_flight` record read this way was left by a send that died (reload, crash).
   */
  sync(signal?: AbortSignal): Promise<IntentRecord> {
    return this.#h.ctx.coordinator.exclusive(this.scope, this.name, (section) => this.#readIn(section), signal);
  }

  /**
   * Keeps this intent's lock between calls, with its record read under it, so that the next
   * call's request leaves at once: with Web Locks a click no longer waits a frame for the
   * lock and the store, and the `in_flight` write goes out together with the first attempt.
   * Another tab that needs the intent gets the lock as soon as no call runs here. The hook
   * does this while mounted. Returns the function that lets the lock go; without a
   * coordinator that can hold (Node, no Web Locks) it does nothing.
   */
  hold(): () => void {
    const { coordinator, warmUp } = this.#h.ctx;
    const onHeld = async (section: LockSection) => {
      const seen = this.#h.record;
      const record = await this.#readIn(section);
      // What a (re)gained lock finds is news to whoever shows this intent: a tab that died
      // after its in_flight write but before telling the others left it in flight.
      if (record.state !== seen.state || record.updatedAt !== seen.updatedAt)
        this.#h.ctx.hub.emit({ type: 'state', record, source: 'local' });
      setTimeout(warmUp, 0);
      try {
        keyHeader(this.#h); // what the click's request carries, ready before the click
      } catch {
        // A key the profile cannot encode: the call says so.
      }
    };
    return coordinator.hold?.(this.scope, this.name, onHeld) ?? (() => {});
  }

  /** Re-reads the record; in a lock section, notes the section for the next call (see `hold`). */
  async #readIn(section: LockSection | undefined): Promise<IntentRecord> {
    const h = this.#h;
    await landed(h);
    if (section) {
      h.section = undefined;
      await applySentNote(h);
    }
    const stored = await storeCall(h.ctx, 'reading the intent', () => h.ctx.store.get(h.scope, h.name), contextOf(h));
    if (stored?.key === h.key) {
      h.record = stored;
      if (section) h.section = section.id;
    }
    return this.record;
  }
}

/**
 * @internal The outcome write of `intent`'s last call, queued and not landed yet (the call
 * ended without waiting for it): settles once it has landed or failed; `undefined` if none.
 */
export const queuedOutcome = (intent: Intent): Promise<void> | undefined => {
  const h = handles.get(intent);
  return h && landed(h);
};

/** @internal Sends one call of `intent` as `planOf` plans it (`request()`, `run()`, `intentFetch()`). */
export async function callWith<T>(
  intent: Intent,
  planOf: (h: IntentHandle) => CallPlan<unknown, T> | Promise<CallPlan<unknown, T>>,
): Promise<T> {
  const h = handles.get(intent);
  if (!h) throw new InvalidArgumentError('Pass an Intent from client.intent(name).');
  const started = h.ctx.monotonic(); // serialising and hashing the body count in the deadline
  const planned = planOf(h);
  // A plan made synchronously (`request()`) is sent without a wait for the microtask queue.
  const plan = planned instanceof Promise ? await planned : planned;
  const { deadline } = h.ctx.retry;
  // Not another client's lock: this call's own preparation used the deadline up.
  if (h.ctx.monotonic() - started >= deadline)
    throw new NotSentError({ ...contextOf(h), reason: 'deadline', deadline });
  return call(h, plan, started);
}

/**
 * Joins an identical call already in flight in this client, or runs the call under the
 * coordinator's lock for this intent: at once where this client keeps it idle (a click's
 * call), else once granted. The wait for the lock counts in the call's deadline.
 */
function call<V, T>(h: IntentHandle, plan: CallPlan<V, T>, started: number): Promise<T> {
  const { ctx } = h;
  const signal = plan.signal;
  const cancelled = () => new CancelledError({ ...contextOf(h), sent: false, cause: signal?.reason });
  if (signal?.aborted) return Promise.reject(cancelled());
  const id = intentId(h.scope, h.name);
  const running = ctx.inflight.get(id);
  if (running) {
    // Asked while the first call runs its way to the request (an event listener): joined once it returns.
    if (running.fingerprint === plan.fingerprint) return Promise.resolve().then(() => running.promise) as Promise<T>;
    emit(h, { type: 'mismatch', source: 'local' });
    const changed = changedParts(running.fingerprint, plan.fingerprint);
    return Promise.reject(new IntentMismatchError({ ...contextOf(h), changed }));
  }
  // In the map before the call runs: a kept lock runs it in this turn, up to its request.
  const entry: { fingerprint: string; promise: Promise<unknown> } = {
    fingerprint: plan.fingerprint,
    promise: Promise.resolve(),
  };
  ctx.inflight.set(id, entry);
  let waiting: AbortSignal | undefined;
  const send = (section?: LockSection) => sendCall(h, plan, section, started);
  const promise = (ctx.coordinator.runHeld?.(h.scope, h.name, send) ?? underLock()).catch((error: unknown) => {
    if (error instanceof OncelyError) throw error;
    if (signal?.aborted) throw cancelled();
    if (waiting?.aborted) throw lockHeld(h);
    throw error;
  });
  entry.promise = promise.finally(() => {
    if (ctx.inflight.get(id) === entry) ctx.inflight.delete(id);
  });
  return entry.promise as Promise<T>;

  /** The section once granted. The wait ends with the user's signal or the call's deadline, whichever first. */
  function underLock(): Promise<T> {
    const controller = new AbortController();
    waiting = controller.signal;
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const left = ctx.retry.deadline - (ctx.monotonic() - started);
    const unwatch = watch(left, () =>
      controller.abort(new DOMException('The call reached its deadline', 'TimeoutError')),
    );
    const granted = () => {
      unwatch();
      signal?.removeEventListener('abort', onAbort);
    };
    return ctx.coordinator
      .exclusive(
        h.scope,
        h.name,
        (section) => {
          granted();
          return send(section);
        },
        controller.signal,
      )
      .finally(granted);
  }
}
