/**
 * The framework-free core of every UI binding (`oncely/react`, and the Vue, Svelte and Solid
 * recipes in docs/bindings.md): one observer holds the mutation state of one intent — claim
 * on subscribe, single flight, resume after a reload, other tabs' progress — as a reducer
 * over named actions, like TanStack Query's `mutation.ts`. A binding subscribes and renders
 * `getState()`.
 */
import type { Client } from '../client.js';
import { OncelyError, OutcomeUnknownError } from '../errors.js';
import type { Intent } from '../intent/intent.js';
import type { IntentRecord } from '../store/store.js';
import { isGone, sendReclaiming } from './reclaim.js';
import {
  initialMutationState,
  type MutationAction,
  type MutationState,
  type MutationStatus,
  reduceMutation,
  STATUS_OF,
} from './reduce-mutation.js';

interface BaseOptions<T, V> {
  /**
   * The oncely client whose store and coordinator hold the intent. Keep it stable (module
   * level or context): a new client is a new observer, as a new intent name is.
   */
  client: Client;
  /**
   * The intent name: one name per user operation, e.g. `checkout:${cartId}`. Claimed on
   * mount, so the key is durable before the first click.
   * @example `checkout:${cart.id}`
   */
  intent: string;
  /** Called when a call of this hook succeeds (auto-resume included). Not for outcomes read from the store. */
  onSuccess?: (data: T, variables: V | undefined) => void;
  /** Called when a call of this hook fails or ends with an unknown outcome. */
  onError?: (error: unknown, variables: V | undefined) => void;
  /**
   * What to do with an intent found `in_flight` (its sender died) or `unknown` on mount.
   * `'auto'` sends it again with the same key, calling `request(intent, undefined)`: the
   * request must be derivable from component state, since oncely stores no bodies.
   * `'manual'` shows status `'unknown'` and waits for `mutate()`.
   * @default 'auto'
   */
  resume?: 'auto' | 'manual';
  /**
   * Abort the call in flight when the component unmounts (hiding under `<Activity>`
   * counts too). The intent then stays `unknown` if an attempt was sent.
   * @default false
   */
  abortOnUnmount?: boolean;
}

/** What `request` gets after the variables: the claimed intent and the call's signal. */
export interface RequestContext {
  intent: Intent;
  /** Aborted by `abortOnUnmount`, or by `forget({ force: true })`. Pass it on to the request. */
  signal: AbortSignal;
}

/** What `request` resolves with: an `IntentResponse`, or `{ data }` from `run()` or another transport. */
export interface MutationResult<T> {
  data: T;
  /** The server answered from its stored result. */
  replayed?: boolean;
  /** Attempts of this call. @default those the observer saw */
  attempts?: number;
}

/** Sends the request through an `Intent` (its key on every attempt). */
export interface IdempotentMutationOptions<T, V = void> extends BaseOptions<T, V> {
  /**
   * `(variables, context)`, in TanStack's order. `variables` is `undefined` on auto-resume.
   * Another transport goes through `run()`: `async (vars, { intent, signal }) => ({ data: await run(intent, ({ key }) => …, { signal }) })`.
   * @example request: (_vars, { intent, signal }) => intent.post('payments', { json: cart, schema: Payment, signal })
   */
  request: (variables: V | undefined, context: RequestContext) => Promise<MutationResult<T>>;
}

const noop = () => {};

/** Holds one intent's mutation state; subscribe to it from any UI framework. */
export class IdempotentMutationObserver<T = unknown, V = void> {
  #options: IdempotentMutationOptions<T, V>;
  #state: MutationState<T> = initialMutationState;
  readonly #listeners = new Set<() => void>();
  #claim: Promise<Intent> | undefined;
  /** What `#claim` resolved with, while it is the current claim. */
  #claimed: Intent | undefined;
  #current: Promise<T> | undefined;
  #controller: AbortController | undefined;
  #watching = false;
  #resumeOnLoad = true;
  #offs: (() => void)[] = [];
  /** The intent whose lock this observer keeps while subscribed (`intent.hold()`). */
  #held: { intent: Intent; release: () => void } | undefined;
  /** Subscribers are to be told in the next frame (`#dispatch(action, true)`). */
  #notifying = false;
  /** The current call's outcome could not be stored (an `unsaved` event): its StoreError. */
  #unsaved: unknown;
  /** The AbortController of the next call, made before its click. */
  #spare: AbortController | undefined;

  constructor(options: IdempotentMutationOptions<T, V>) {
    this.#options = options;
  }

  /** The client and intent name this observer was made for (a binding makes a new one when they change). */
  get client(): Client {
    return this.#options.client;
  }
  get intent(): string {
    return this.#options.intent;
  }

  /** Takes new callbacks and request function; `client` and `intent` are fixed per observer. */
  setOptions(options: IdempotentMutationOptions<T, V>): void {
    this.#options = options;
  }

  getState = (): MutationState<T> => this.#state;

  /** The first subscriber claims the intent and re-reads its record; each later first one re-reads it. */
  subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.#connect();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#disconnect();
    };
  };

  /** Sends (or joins the call already in flight). Errors go to the state and `onError`. */
  mutate = (variables?: V): void => {
    this.mutateAsync(variables).catch(noop);
  };

  /** Sends, or returns the promise of the call already in flight: one request per double click. */
  mutateAsync = (variables?: V): Promise<T> => {
    if (!this.#current) {
      const call: Promise<T> = this.#send(variables).finally(() => {
        if (this.#current === call) this.#current = undefined;
      });
      this.#current = call;
    }
    return this.#current;
  };

  /**
   * Clears what the UI shows (data, error, status back to `idle`), as TanStack's `reset()`
   * does. The key stays: the next `mutate()` resumes the same operation, so an unknown
   * outcome is resumed and a succeeded one replayed, never paid twice. A call on its way
   * keeps showing as pending.
   */
  reset = (): void => {
    this.#dispatch({ type: 'reset' });
  };

  /**
   * Forgets the intent (`intent.reset()`) and claims a new key: a new operation, like a new
   * order after a paid one. Rejects with `OutcomeUnknownError` while the outcome is not
   * known — a call in flight here or in another tab, or an `unknown` intent — because a
   * new key would then pay twice. `force: true` aborts this observer's call, waits for it,
   * and forgets anyway: only after reconciling (e.g. you looked the payment up by `key`).
   */
  forget = async ({ force = false }: { force?: boolean } = {}): Promise<void> => {
    if (this.#current) {
      if (!force) throw this.#refusal('a call of this intent is in flight');
      this.#controller?.abort(new DOMException('forget({ force: true }) abandoned the call.', 'AbortError'));
      await this.#current.catch(noop);
    }
    const intent = await this.#intent();
    // Under the lock: what another tab is sending, or a page sent before a reload, shows.
    const { state } = await intent.sync();
    if (!force && (state === 'in_flight' || state === 'unknown'))
      throw this.#refusal(state === 'unknown' ? 'its outcome is unknown' : 'it is being sent (maybe in another tab)');
    await intent.reset({ force });
    this.#forgetClaim();
    this.#dispatch({ type: 'forgotten' });
    const next = await this.#intent();
    this.#hold(next);
    this.#dispatch({ type: 'stored', record: next.record, status: 'idle' });
  };

  #refusal(why: string): OutcomeUnknownError {
    const { client, intent } = this.#options;
    const { key, attempts } = this.#state;
    const message = `Not forgetting intent "${intent}": ${why}, and a new key could make the operation take effect twice. Resume it with mutate(), or reconcile it and call forget({ force: true }).`;
    return new OutcomeUnknownError({ intent, scope: client.scope, key, attempts }, 'OUTCOME_UNKNOWN', message);
  }

  /**
   * Moves the state on and tells the subscribers: at once, or, for what happens on a
   * request's way out (`later`), in the next animation frame, or (`'started'`) in the
   * microtask `#send` queues once its call has started. A UI rendering in between would
   * hold the request back (React renders a store change in a microtask, ahead of the ones
   * that lead to `fetch`); the frame that shows it comes no later.
   */
  #dispatch(action: MutationAction<T>, later: boolean | 'started' = false): void {
    const next = reduceMutation(this.#state, action);
    if (next === this.#state) return;
    this.#state = next;
    if (!later) this.#notify();
    else if (later === 'started') this.#notifying = true;
    else if (!this.#notifying) {
      this.#notifying = true;
      const notify = () => this.#notifying && this.#notify();
      globalThis.requestAnimationFrame?.(notify);
      setTimeout(notify, 0); // hidden pages and servers have no frames
    }
  }

  #notify(): void {
    this.#notifying = false;
    for (const listener of this.#listeners) listener();
  }

  #intent(): Promise<Intent> {
    if (!this.#claim) {
      const claim = this.#options.client.intent(this.#options.intent).then((intent) => {
        if (this.#claim === claim) this.#claimed = intent;
        this.#dispatch({ type: 'stored', record: intent.record });
        return intent;
      });
      claim.catch(() => {
        if (this.#claim === claim) this.#claim = undefined;
      });
      this.#claim = claim;
    }
    return this.#claim;
  }

  #connect(): void {
    this.#spare ??= new AbortController();
    const { client, intent: name } = this.#options;
    const mine = (event: { scope: string; intent: string }) => event.scope === client.scope && event.intent === name;
    this.#offs = [
      client.on('state', ({ record }) => {
        if (record.scope === client.scope && record.name === name) this.#onRecord(record);
      }),
      client.on(
        'attempt',
        (e) => mine(e) && this.#dispatch({ type: 'attempt', attempt: e.attempt, retry: false }, true),
      ),
      client.on('retry', (e) => mine(e) && this.#dispatch({ type: 'attempt', attempt: e.attempt, retry: true })),
      client.on('offline', (e) => mine(e) && this.#dispatch({ type: 'paused', paused: e.phase === 'paused' })),
      // Written after the call ended (the outcome write is queued): the success shown gets the warning.
      client.on('unsaved', (e) => {
        if (!mine(e)) return;
        this.#unsaved = e.error;
        const record = this.#held?.intent.key === e.key ? this.#held.intent.record : this.#state.record;
        if (record) this.#dispatch({ type: 'warning', key: e.key, warning: e.error, record });
      }),
    ];
    void this.#load();
  }

  #disconnect(): void {
    for (const off of this.#offs.splice(0)) off();
    this.#letGo();
    const controller = this.#controller;
    if (!this.#options.abortOnUnmount || !controller) return;
    // Deferred so that StrictMode's immediate resubscribe does not abort.
    setTimeout(() => {
      if (this.#listeners.size === 0) controller.abort(new DOMException('The component unmounted.', 'AbortError'));
    }, 0);
  }

  /** On (re)subscribe: read the stored record and act on it; resume at most once per observer. */
  async #load(): Promise<void> {
    let record: IntentRecord;
    try {
      const intent = await this.#intent();
      this.#hold(intent);
      record = await intent.refresh();
    } catch (error) {
      if (!this.#current) this.#dispatch({ type: 'error', error, status: 'error', attempts: 0, record: undefined });
      return;
    }
    if (this.#listeners.size === 0) return;
    const resume = this.#resumeOnLoad;
    this.#resumeOnLoad = false;
    if (resume && record.state === 'unknown' && !this.#current) this.#resume(record);
    else this.#onRecord(record, resume);
  }

  /** A stored state change (claim, refresh, this client's or another tab's write). */
  #onRecord(record: IntentRecord, resumeUnknown = false): void {
    if (this.#current) this.#dispatch({ type: 'stored', record });
    else {
      this.#dispatch({ type: 'stored', record, status: STATUS_OF[record.state] });
      if (record.state === 'in_flight') void this.#watch(resumeUnknown);
    }
  }

  /** While subscribed, keeps the intent's lock between calls: a click's request leaves at once. */
  #hold(intent: Intent): void {
    if (this.#listeners.size === 0 || this.#held?.intent === intent) return;
    this.#letGo();
    this.#held = { intent, release: intent.hold() };
  }

  /** Drops the claimed intent (and its lock): the next use claims again. */
  #forgetClaim(): void {
    this.#claim = undefined;
    this.#claimed = undefined;
    this.#letGo();
  }

  #letGo(): void {
    this.#held?.release();
    this.#held = undefined;
  }

  /** Someone is sending: wait for their lock, then show their outcome, or resume if they died. */
  async #watch(resumeUnknown: boolean): Promise<void> {
    if (this.#watching) return;
    this.#watching = true;
    try {
      const record = await (await this.#intent()).sync();
      if (this.#current || this.#listeners.size === 0) return;
      if (record.state === 'in_flight' || (resumeUnknown && record.state === 'unknown')) this.#resume(record);
      else this.#dispatch({ type: 'stored', record, status: STATUS_OF[record.state] });
    } catch (error) {
      if (!this.#current) this.#dispatch({ type: 'error', error, status: 'error', attempts: 0, record: undefined });
    } finally {
      this.#watching = false;
    }
  }

  #resume(record: IntentRecord): void {
    if (this.#options.resume === 'manual') this.#dispatch({ type: 'stored', record, status: 'unknown' });
    else this.mutate(undefined);
  }

  async #send(variables: V | undefined): Promise<T> {
    const controller = this.#spare ?? new AbortController();
    this.#spare = undefined;
    this.#controller = controller;
    this.#unsaved = undefined;
    // Told once the call has started: a held intent's request leaves in this turn, before
    // the microtask that tells (a render would run ahead of it); any other call waits anyway.
    this.#dispatch({ type: 'pending' }, 'started');
    let intent: Intent | undefined;
    let data: T;
    try {
      const { request } = this.#options;
      const { signal } = controller;
      const sending = sendReclaiming(
        () => this.#claimed ?? this.#intent(),
        (claimed) => {
          intent = claimed;
          return request(variables, { intent: claimed, signal });
        },
        async () => {
          // Another key holds the intent now (a sent one put back over this unsent one): hold that one.
          this.#forgetClaim();
          const claimed = await this.#intent();
          this.#hold(claimed);
          return claimed;
        },
      );
      queueMicrotask(() => this.#notifying && this.#notify());
      const result = await sending;
      data = result.data;
      const { replayed, attempts = this.#state.attempts } = result;
      const warning = this.#unsaved;
      this.#dispatch({ type: 'success', data, replayed, attempts, record: intent!.record, warning });
    } catch (error) {
      const record = intent?.record;
      let status: MutationStatus = error instanceof OutcomeUnknownError ? 'unknown' : 'error';
      if (controller.signal.aborted && record)
        status = record.state === 'in_flight' ? 'unknown' : STATUS_OF[record.state];
      const attempts = error instanceof OncelyError ? error.attempts : this.#state.attempts;
      this.#dispatch({ type: 'error', error, status, attempts, record });
      if (isGone(error)) {
        // Gone again (a reset elsewhere): show what the store holds now.
        this.#forgetClaim();
        if (this.#listeners.size > 0) void this.#load();
      }
      // State first, then the callback: a throwing callback cannot change the state.
      this.#options.onError?.(error, variables);
      throw error;
    } finally {
      if (this.#controller === controller) this.#controller = undefined;
      this.#spare ??= new AbortController(); // the next click's, made while nothing waits
    }
    this.#options.onSuccess?.(data, variables);
    return data;
  }
}
