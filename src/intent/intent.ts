import type { KyInstance } from 'ky';
import pRetry from 'p-retry';
import type { IntentCoordinator } from '../coordinator/coordinator.js';
import {
  HttpError,
  InProgressError,
  IntentExpiredError,
  IntentMismatchError,
  InvalidArgumentError,
  KeyReusedError,
  OncelyError,
  OutcomeUnknownError,
  ResponseValidationError,
  type ServerAnswer,
} from '../errors.js';
import type { EventHub } from '../events.js';
import { type InferOutput, type StandardSchemaV1, validate } from '../http/schema.js';
import { type ClassifiedAnswer, sendWithKy } from '../http/send.js';
import { classifyThrown, type RunClassifier } from '../http/thrown.js';
import type { Outcome, Profile } from '../profiles/profiles.js';
import { type ResolvedRetryOptions, RetryBudget } from '../retry/policy.js';
import type { IntentRecord, IntentState, Store } from '../store/store.js';
import { canonicalJson, fingerprint } from './fingerprint.js';
import { newRecord, SENT_STATES, toInFlight, toSettled, toUnsent } from './transitions.js';

/** What an intent shares with the client that made it. */
export interface ClientContext {
  scope: string;
  store: Store;
  profile: Profile;
  hub: EventHub;
  coordinator: IntentCoordinator;
  retry: ResolvedRetryOptions;
  keyTtl: number;
  ky: KyInstance;
  /** The client's ky options may read bodies: ky gets them (see `kySeesBodies` in http-send). */
  kySeesBodies: boolean;
  /** Per-call headers from the client options (e.g. a fresh Authorization). */
  headers: (() => HeadersInit) | undefined;
  fetch: typeof globalThis.fetch;
  baseUrl: string;
  now: () => number;
  random: () => number;
  /** Calls in flight in this client, per intent: a second identical call joins the first. */
  inflight: Map<string, { fingerprint: string; promise: Promise<unknown> }>;
}

export interface RequestOptions<S extends StandardSchemaV1 | undefined = undefined> {
  /** JSON body, serialized canonically (sorted keys) into the fingerprint. */
  json?: unknown;
  /** A raw string body, when the API does not take JSON. */
  body?: string;
  /** Validates and types `res.data` (any Standard Schema: zod, valibot…). */
  schema?: S;
  /** Extra headers for this request (not part of the fingerprint). */
  headers?: HeadersInit;
  /** Cancels the call, its attempts and its waits. */
  signal?: AbortSignal;
  /**
   * Send the idempotency key with this request. POST and PATCH (the profile's
   * `keyedMethods`) always do; set it for PUT, DELETE or others.
   */
  sendKey?: boolean;
}

/** A settled request: the typed body and how it came about. */
export interface IntentResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  /** The server answered from its stored result (`Idempotent-Replayed: true`): no new effect. */
  replayed: boolean;
  key: string;
  intent: string;
  /** Attempts this call sent (the stored record counts all calls). */
  attempts: number;
}

export type DataOf<S> = S extends StandardSchemaV1 ? InferOutput<S> : unknown;

export interface RunContext {
  key: string;
  /** 1 for the first attempt. */
  attempt: number;
  signal: AbortSignal | undefined;
}

export interface RunOptions {
  signal?: AbortSignal;
  /**
   * What binds this run to its intent, like a request body (JSON). A later run of the
   * same intent with a different `request` is an `IntentMismatchError`.
   */
  request?: unknown;
  /** Maps an error thrown by your function to an outcome. Default: by its HTTP status. */
  classify?: RunClassifier;
}

type Settle = { state: 'succeeded' | 'failed' | 'unknown'; attempts: number; status?: number };

/**
 * One user intent (a checkout, a payout) and its idempotency key. Get it from
 * `client.intent(name)`; every request it sends carries the same key.
 */
export class Intent {
  #record: IntentRecord;

  constructor(
    private readonly ctx: ClientContext,
    record: IntentRecord,
  ) {
    this.#record = record;
  }

  get name(): string {
    return this.#record.name;
  }
  get scope(): string {
    return this.#record.scope;
  }
  /** The idempotency key sent on every attempt. */
  get key(): string {
    return this.#record.key;
  }
  get state(): IntentRecord['state'] {
    return this.#record.state;
  }
  /** A copy of the stored record as last seen by this object. */
  get record(): IntentRecord {
    return { ...this.#record };
  }

  post<S extends StandardSchemaV1 | undefined = undefined>(path: string, options?: RequestOptions<S>) {
    return this.request('POST', path, options);
  }
  patch<S extends StandardSchemaV1 | undefined = undefined>(path: string, options?: RequestOptions<S>) {
    return this.request('PATCH', path, options);
  }
  put<S extends StandardSchemaV1 | undefined = undefined>(path: string, options?: RequestOptions<S>) {
    return this.request('PUT', path, options);
  }
  delete<S extends StandardSchemaV1 | undefined = undefined>(path: string, options?: RequestOptions<S>) {
    return this.request('DELETE', path, options);
  }

  /** Sends the request under this intent's key, retrying within the budget. */
  async request<S extends StandardSchemaV1 | undefined = undefined>(
    method: string,
    path: string,
    options: RequestOptions<S> = {},
  ): Promise<IntentResponse<DataOf<S>>> {
    if (options.json !== undefined && options.body !== undefined)
      throw new InvalidArgumentError('Pass either `json` or `body`, not both.', this.#context());
    const upper = method.toUpperCase();
    const url = new URL(path.replace(/^\//, ''), this.ctx.baseUrl.replace(/\/?$/, '/')).href;
    const body = options.json !== undefined ? canonicalJson(options.json) : options.body;
    const fp = await fingerprint(upper, url, body);
    return this.#singleFlight(fp, options.signal, async (record) => {
      const headers = new Headers(this.ctx.headers?.());
      for (const [name, value] of new Headers(options.headers)) headers.set(name, value);
      if (options.json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      if (options.sendKey || this.ctx.profile.keyedMethods.includes(upper))
        headers.set(this.ctx.profile.header, this.ctx.profile.encodeKey(record.key));
      const budget = this.#budget();
      const result = await sendWithKy(
        this.ctx.ky,
        { method: upper, url, headers, body, signal: options.signal, kySeesBodies: this.ctx.kySeesBodies },
        this.ctx.profile,
        budget,
        {
          onAttempt: (attempt, request) =>
            this.#emit({ type: 'attempt', attempt, method: request.method, url: request.url }),
          onRetry: (delay, reason, status) =>
            this.#emit({ type: 'retry', attempt: budget.attempts, delay, reason, ...(status ? { status } : {}) }),
          onConflict: (status, retryAfter) => this.#emit({ type: 'conflict', status, retryAfter }),
        },
        this.ctx.fetch,
      );
      if (result.kind === 'no-answer') return this.#noAnswer(result.error, budget.attempts, options.signal);
      return this.#answered(result, budget.attempts, options.schema);
    });
  }

  /**
   * Runs any transport (stripe-node, GraphQL, fetch) under this intent: oncely owns the
   * key and the retries; your function gets `{ key, attempt, signal }` and must send
   * `key` as the idempotency key on every request it makes, its own retries included.
   */
  async run<T>(fn: (context: RunContext) => Promise<T>, options: RunOptions = {}): Promise<T> {
    const fp = await fingerprint('RUN', this.name, canonicalJson(options.request ?? null));
    return this.#singleFlight(fp, options.signal, async (record) => {
      const budget = this.#budget();
      let lastStatus: number | undefined;
      let lastOutcome: Outcome | undefined;
      let lastReplayed = false;
      try {
        const value = await pRetry(
          async (attempt) => {
            budget.attempts = attempt;
            this.#emit({ type: 'attempt', attempt, method: 'RUN', url: this.name });
            return fn({ key: record.key, attempt, signal: options.signal });
          },
          {
            retries: budget.options.maxAttempts - 1,
            signal: options.signal,
            minTimeout: 1,
            factor: 1,
            randomize: false,
            onFailedAttempt: async ({ error, attemptNumber: attempt }) => {
              const thrown = classifyThrown(error, this.ctx.profile, options.classify);
              lastStatus = thrown.status;
              lastOutcome = thrown.outcome;
              lastReplayed = thrown.replayed === true;
              if (thrown.outcome === 'in_progress' && thrown.status)
                this.#emit({ type: 'conflict', status: thrown.status });
              if (thrown.outcome !== 'retryable' && thrown.outcome !== 'in_progress') return;
              const delay = budget.nextDelay(thrown.headers);
              if (!budget.allows(delay)) {
                lastOutcome = thrown.outcome === 'in_progress' ? 'in_progress' : 'retryable';
                throw error;
              }
              this.#emit({
                type: 'retry',
                attempt,
                delay,
                reason: thrown.status ? 'status' : 'network',
                ...(thrown.status ? { status: thrown.status } : {}),
              });
              await sleep(delay, options.signal);
            },
            shouldRetry: ({ error }) => {
              const outcome = classifyThrown(error, this.ctx.profile, options.classify).outcome;
              return outcome === 'retryable' || outcome === 'in_progress';
            },
          },
        );
        await this.#settle({ state: 'succeeded', attempts: budget.attempts });
        this.#emit({ type: 'success', replayed: false, attempts: budget.attempts });
        return value;
      } catch (error) {
        if (options.signal?.aborted) return this.#noAnswer(options.signal.reason, budget.attempts, options.signal);
        const ctx = { ...this.#context(), attempts: budget.attempts, cause: error };
        if (lastOutcome === 'mismatch') {
          await this.#settle({ state: 'failed', attempts: budget.attempts, status: lastStatus });
          this.#emit({ type: 'mismatch', source: 'server', ...(lastStatus ? { status: lastStatus } : {}) });
          throw error;
        }
        const definitive = lastOutcome === 'failed' || lastOutcome === undefined;
        if (definitive && (budget.attempts === 1 || lastReplayed)) {
          await this.#settle({ state: 'failed', attempts: budget.attempts, status: lastStatus });
          this.#emit({
            type: 'failure',
            code: 'RUN_FAILED',
            attempts: budget.attempts,
            ...(lastStatus ? { status: lastStatus } : {}),
          });
          throw error;
        }
        await this.#settle({ state: 'unknown', attempts: budget.attempts, status: lastStatus });
        this.#emit({ type: 'unknown', attempts: budget.attempts });
        throw lastOutcome === 'in_progress' ? new InProgressError(ctx) : new OutcomeUnknownError(ctx);
      }
    });
  }

  /**
   * Forgets this intent so the next `client.intent(name)` mints a new key. Use it when
   * the app has decided on a new operation (after success, a definitive failure, or a
   * reconciled unknown). Refuses while a call of this intent is in flight here.
   */
  async reset(): Promise<void> {
    if (this.ctx.inflight.has(this.#id()))
      throw new InvalidArgumentError(
        `Intent "${this.name}" has a call in flight; wait for it before reset().`,
        this.#context(),
      );
    await this.ctx.store.delete(this.scope, this.name, this.key);
  }

  /** Re-reads the stored record (another tab or process may have moved it on). */
  async refresh(): Promise<IntentRecord> {
    const stored = await this.ctx.store.get(this.scope, this.name);
    if (stored) this.#record = stored;
    return this.record;
  }

  /**
   * Waits until no client sharing the coordinator (another tab, another process, a call
   * of this client) is sending this intent, then re-reads the stored record. An
   * `in_flight` record read this way was left by a send that died (reload, crash).
   */
  sync(signal?: AbortSignal): Promise<IntentRecord> {
    return this.ctx.coordinator.exclusive(this.scope, this.name, () => this.refresh(), signal);
  }

  #id(): string {
    return JSON.stringify([this.scope, this.name]);
  }

  #context() {
    return { key: this.key, intent: this.name, scope: this.scope };
  }

  #budget(): RetryBudget {
    return new RetryBudget(this.ctx.retry, this.ctx.now, this.ctx.random);
  }

  #emit(event: DistributiveOmit<Parameters<EventHub['emit']>[0] & { key: string }, 'scope' | 'intent' | 'key'>): void {
    this.ctx.hub.emit({ ...event, scope: this.scope, intent: this.name, key: this.key } as Parameters<
      EventHub['emit']
    >[0]);
  }

  /**
   * Stores `next(current)` if the stored record is still this intent's (same key): a
   * record another tab reset or re-formed meanwhile is left alone. Reports the change.
   */
  async #write(next: (current: IntentRecord) => IntentRecord): Promise<IntentRecord> {
    const key = this.key;
    const stored = await this.ctx.store.update(this.scope, this.name, (current) =>
      current?.key === key ? next(current) : undefined,
    );
    this.#record = stored?.key === key ? stored : next(this.#record);
    this.#report();
    return this.#record;
  }

  #report(): void {
    if (this.ctx.hub.listens('state')) this.ctx.hub.emit({ type: 'state', record: this.record, source: 'local' });
    this.ctx.coordinator.publish(this.record);
  }

  #settle({ state, attempts, status }: Settle): Promise<IntentRecord> {
    return this.#write((r) => toSettled(r, state, attempts, this.ctx.now(), status));
  }

  /**
   * Joins an identical call already in flight in this client, or runs `send` under the
   * cross-tab lock once the record says it may be sent (fingerprint, expiry) and is
   * marked `in_flight` in the store.
   */
  #singleFlight<T>(
    fp: string,
    signal: AbortSignal | undefined,
    send: (record: IntentRecord) => Promise<T>,
  ): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.#id();
    const running = this.ctx.inflight.get(id);
    if (running) {
      if (running.fingerprint !== fp) return Promise.reject(this.#mismatch());
      return running.promise as Promise<T>;
    }
    const promise = this.ctx.coordinator
      .exclusive(
        this.scope,
        this.name,
        async () => {
          const previous = await this.#beginSend(fp);
          try {
            return await send(this.#record);
          } catch (error) {
            if (this.#record.state === 'in_flight' && !(error instanceof OncelyError)) {
              // Failed before anything was sent (abort before the first attempt, a bug).
              await this.#write((r) => toUnsent(r, previous, this.ctx.now()));
            }
            throw error;
          }
        },
        signal,
      )
      .finally(() => this.ctx.inflight.delete(id));
    this.ctx.inflight.set(id, { fingerprint: fp, promise });
    return promise;
  }

  /**
   * One atomic store update before the first byte leaves: checks that the stored record
   * may be sent with this request (same fingerprint, not expired) and marks it
   * `in_flight` with the fingerprint bound. Resolves with the state it had before.
   */
  async #beginSend(fp: string): Promise<IntentState> {
    const now = this.ctx.now();
    let refusal: 'mismatch' | 'expired' | undefined;
    let previous: IntentState = 'ready';
    const stored = await this.ctx.store.update(this.scope, this.name, (current) => {
      // Missing: reset elsewhere while this object lived on; form it again with this key.
      const record = current ?? newRecord(this.scope, this.name, this.key, now);
      this.#record = record;
      if (record.fingerprint !== undefined && record.fingerprint !== fp) refusal = 'mismatch';
      else if (SENT_STATES.includes(record.state) && now - record.createdAt > this.ctx.keyTtl) refusal = 'expired';
      if (refusal) return undefined;
      previous = record.state;
      return toInFlight(record, fp, now);
    });
    if (refusal === 'mismatch') throw this.#mismatch();
    if (refusal === 'expired')
      throw new IntentExpiredError({ ...this.#context(), createdAt: this.#record.createdAt, keyTtl: this.ctx.keyTtl });
    if (stored) this.#record = stored;
    this.#report();
    return previous;
  }

  #mismatch(): IntentMismatchError {
    this.#emit({ type: 'mismatch', source: 'local' });
    return new IntentMismatchError(this.#context());
  }

  async #noAnswer(error: unknown, attempts: number, signal: AbortSignal | undefined): Promise<never> {
    if (attempts === 0) throw signal?.aborted ? signal.reason : error;
    await this.#settle({ state: 'unknown', attempts });
    this.#emit({ type: 'unknown', attempts });
    if (signal?.aborted) throw signal.reason;
    throw new OutcomeUnknownError({ ...this.#context(), attempts, cause: error });
  }

  async #answered<S extends StandardSchemaV1 | undefined>(
    result: ClassifiedAnswer,
    attempts: number,
    schema: S | undefined,
  ): Promise<IntentResponse<DataOf<S>>> {
    const { answer, outcome, replayed } = result;
    const ctx = { ...this.#context(), attempts };
    const lastAnswer: ServerAnswer = { status: answer.status, headers: answer.headers, body: answer.body };
    if (outcome === 'success') {
      await this.#settle({ state: 'succeeded', attempts, status: answer.status });
      if (replayed) this.#emit({ type: 'replay', status: answer.status });
      this.#emit({ type: 'success', status: answer.status, replayed, attempts });
      let data: unknown = answer.body;
      if (schema) {
        if (!answer.json) {
          throw new ResponseValidationError(answer, [{ message: 'the response body is not JSON' }], ctx);
        }
        const checked = await validate(schema, answer.body);
        if ('issues' in checked) throw new ResponseValidationError(answer, checked.issues as never, ctx);
        data = checked.value;
      }
      return {
        data: data as DataOf<S>,
        status: answer.status,
        headers: answer.headers,
        replayed,
        key: this.key,
        intent: this.name,
        attempts,
      };
    }
    if (outcome === 'in_progress' || outcome === 'retryable') {
      await this.#settle({ state: 'unknown', attempts, status: answer.status });
      this.#emit({ type: 'unknown', attempts });
      throw outcome === 'in_progress'
        ? new InProgressError({ ...ctx, lastAnswer })
        : new OutcomeUnknownError({ ...ctx, lastAnswer });
    }
    if (outcome === 'failed' && !replayed && attempts > 1) {
      // An earlier attempt went unanswered and may have taken effect; this error came
      // from in front of the idempotency layer (an auth proxy, a gateway). Keep the key.
      await this.#settle({ state: 'unknown', attempts, status: answer.status });
      this.#emit({ type: 'unknown', attempts });
      throw new OutcomeUnknownError({ ...ctx, lastAnswer });
    }
    await this.#settle({ state: 'failed', attempts, status: answer.status });
    if (outcome === 'mismatch') {
      this.#emit({ type: 'mismatch', source: 'server', status: answer.status });
      throw new KeyReusedError(lastAnswer, ctx);
    }
    this.#emit({ type: 'failure', code: 'HTTP_ERROR', status: answer.status, attempts });
    throw new HttpError({ ...lastAnswer, replayed }, ctx);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
