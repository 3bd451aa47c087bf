import {
  CancelledError,
  HttpError,
  IntentMismatchError,
  InvalidArgumentError,
  KeyReusedError,
  OncelyError,
  ResponseValidationError,
  TransportError,
} from '../errors.js';
import type { ReadAnswer } from '../http/answer.js';
import { fetchAttempt, type HttpSender, httpAttempt, withTimeout } from '../http/attempt.js';
import { type InferOutput, type StandardSchemaV1, validate } from '../http/schema.js';
import { type RunClassifier, reportThrown, reportValue } from '../http/thrown.js';
import { intentId } from '../store/record-rules.js';
import type { IntentRecord } from '../store/store.js';
import { type CallPlan, contextOf, emit, type IntentHandle, lastAnswer, sendCall, storeCall } from './call.js';
import type { ClientContext } from './context.js';
import { changedParts, fingerprint, legacyFingerprint } from './fingerprint.js';
import { mintKey } from './keys.js';
import { mergeHeaders, resolveTarget, serializeBody } from './request-spec.js';

export interface RequestOptions<S extends StandardSchemaV1 | undefined = undefined> {
  /** JSON body, sent and fingerprinted as RFC 8785 canonical JSON. */
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
   * @default false
   */
  sendKey?: boolean;
}

/** A settled request: the typed body and how it came about. */
export interface IntentResponse<T> {
  data: T;
  status: number;
  headers: Headers;
  /** The server answered from its stored result (a replay): no new effect. */
  replayed: boolean;
  key: string;
  intent: string;
  /** Attempts this call made (the stored record counts all calls). */
  attempts: number;
}

export type DataOf<S> = S extends StandardSchemaV1 ? InferOutput<S> : unknown;

export interface RunContext {
  /** The idempotency key, raw: pass it as your SDK's idempotency key option. */
  key: string;
  /** The key header as the profile sends it (name and encoded value), for raw HTTP transports. */
  headers: Record<string, string>;
  /** 1 for the first attempt. */
  attempt: number;
  /** Aborts on the caller's signal and on the per-attempt timeout: pass it to your transport. */
  signal: AbortSignal;
}

export interface RunOptions {
  signal?: AbortSignal;
  /**
   * What binds this run to its intent, like a request body (JSON). A later run of the
   * same intent with a different `request` is an `IntentMismatchError`.
   * @example { request: { amount: 1000, currency: 'eur', customer } }
   */
  request?: unknown;
  /** Maps an error thrown by your function to an outcome. Default: by its HTTP status, or network errors. */
  classify?: RunClassifier;
}

/**
 * One user intent (a checkout, a payout) and its idempotency key. Get it from
 * `client.intent(name)`; every request it sends carries the same key.
 */
export class Intent {
  readonly #h: IntentHandle;

  constructor(ctx: ClientContext, record: IntentRecord) {
    this.#h = { ctx, scope: record.scope, name: record.name, key: record.key, record };
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
    const { ctx } = this.#h;
    const where = { intent: this.name, scope: this.scope };
    const upper = checkMethod(method, where);
    const target = resolveTarget(ctx.baseUrl, path, where);
    const body = serializeBody(options.json, options.body, where);
    const headers = mergeHeaders([ctx.headers?.(), options.headers], where);
    if (options.json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
    if (options.sendKey || ctx.profile.keyedMethods.includes(upper))
      headers.set(ctx.profile.header, ctx.profile.encodeKey(this.key));
    const http = { method: upper, url: target.url, headers, body };
    const sender: HttpSender = ctx;
    return this.#call<ReadAnswer, IntentResponse<DataOf<S>>>({
      fingerprint: await fingerprint({ method: upper, path: target.path, body: body ?? null }),
      legacyFingerprint: await this.#legacy(() => legacyFingerprint(upper, target.url, options.json, options.body)),
      signal: options.signal,
      method: upper,
      url: target.url,
      attempt: async (_n, timeout, signal) => {
        const report = await httpAttempt(sender, http, timeout, signal);
        if (report.follow) http.url = report.follow;
        return report as Awaited<ReturnType<CallPlan<ReadAnswer, unknown>['attempt']>>;
      },
      finish: async (verdict, end, context) => {
        const answer = end.last.value as ReadAnswer;
        const { replayed } = end.last;
        if (verdict.result === 'key_reused') throw new KeyReusedError(answer, context);
        if (verdict.result === 'http_error') throw new HttpError({ ...answer, replayed }, context);
        let data: unknown = answer.body;
        if (options.schema) {
          if (!answer.json)
            throw new ResponseValidationError(answer, [{ message: 'the response body is not JSON' }], context);
          const checked = await validate(options.schema, answer.body);
          if ('issues' in checked) throw new ResponseValidationError(answer, checked.issues as never, context);
          data = checked.value;
        }
        const { status, headers } = answer;
        return {
          data: data as DataOf<S>,
          status,
          headers,
          replayed,
          key: this.key,
          intent: this.name,
          attempts: end.attempts,
        };
      },
    });
  }

  /**
   * Runs any transport (stripe-node, GraphQL, your fetch) under this intent: oncely owns
   * the key and the retries; your function gets `{ key, headers, attempt, signal }` and
   * must send the key on every request it makes. Turn its own retries off (stripe-node:
   * `maxNetworkRetries: 0`), or each of oncely's attempts multiplies them.
   */
  async run<T>(fn: (context: RunContext) => Promise<T>, options: RunOptions = {}): Promise<T> {
    const { ctx } = this.#h;
    const where = { intent: this.name, scope: this.scope };
    if (typeof fn !== 'function')
      throw new InvalidArgumentError('run() needs a function that sends the request.', where);
    const request = serializeBody(options.request ?? null, undefined, where)!;
    const headers = { [ctx.profile.header]: ctx.profile.encodeKey(this.key) };
    return this.#call<T, T>({
      fingerprint: await fingerprint({ method: 'RUN', path: this.name, body: request }),
      legacyFingerprint: await this.#legacy(() =>
        legacyFingerprint('RUN', this.name, options.request ?? null, undefined),
      ),
      signal: options.signal,
      method: 'RUN',
      url: this.name,
      attempt: async (attempt, timeout, parent) => {
        const bounded = withTimeout(parent, timeout);
        const aborted = new Promise<never>((_, reject) =>
          bounded.signal.addEventListener('abort', () => reject(bounded.signal.reason), { once: true }),
        );
        try {
          const value = await Promise.race([
            fn({ key: this.key, headers: { ...headers }, attempt, signal: bounded.signal }),
            aborted,
          ]);
          return await reportValue(value, ctx.profile);
        } catch (error) {
          if (bounded.signal.aborted)
            return { outcome: 'no_answer', replayed: false, sent: true, error: bounded.signal.reason };
          return reportThrown(error, ctx.profile, options.classify);
        } finally {
          bounded.clear();
          aborted.catch(() => undefined);
        }
      },
      finish: (verdict, end, context) => {
        const { error } = end.last;
        if (verdict.result === 'ok') return end.last.value as T;
        const answer = lastAnswer(end);
        if (verdict.result === 'key_reused')
          throw new KeyReusedError(answer ?? { status: 0, body: undefined }, { ...context, cause: error });
        if (answer) throw new HttpError({ ...answer, replayed: end.last.replayed }, { ...context, cause: error });
        throw new TransportError({ ...context, cause: error });
      },
    });
  }

  /**
   * A `fetch` bound to this intent: the key header on every attempt, the client's budget,
   * retries and classification, and the intent's state kept. Resolves with the final
   * `Response` (a definitive error answer too, as `fetch` does, with the intent `failed`);
   * rejects with an oncely error when the outcome is unknown or the key was reused.
   */
  async fetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
    const { ctx } = this.#h;
    const where = { intent: this.name, scope: this.scope };
    const upper = checkMethod(init.method ?? 'GET', where);
    const target = resolveTarget(ctx.baseUrl, String(input), where);
    const body = serializeBody(undefined, init.body ?? undefined, where);
    const headers = mergeHeaders([ctx.headers?.(), init.headers], where);
    headers.set(ctx.profile.header, ctx.profile.encodeKey(this.key));
    const http = { method: upper, url: target.url, headers, body };
    const { signal, ...rest } = init;
    return this.#call<Response, Response>({
      fingerprint: await fingerprint({ method: upper, path: target.path, body: body ?? null }),
      signal: signal ?? undefined,
      method: upper,
      url: target.url,
      attempt: async (_n, timeout, attemptSignal) => {
        const report = await fetchAttempt(ctx, http, rest, timeout, attemptSignal);
        if (report.follow) http.url = report.follow;
        return report;
      },
      finish: (verdict, end, context) => {
        const response = end.last.value as Response;
        if (verdict.result === 'key_reused')
          throw new KeyReusedError({ status: response.status, body: undefined }, context);
        return response;
      },
    });
  }

  /**
   * Forgets this intent so the next `client.intent(name)` mints a new key. Use it when the
   * app has decided on a new operation (after success, a definitive failure, or a
   * reconciled unknown). Refuses while a call of this intent is in flight here, and for
   * derived keys (the same name always derives the same key: use a new name instead).
   */
  async reset(): Promise<void> {
    const { ctx } = this.#h;
    if (ctx.inflight.has(this.#id()))
      throw new InvalidArgumentError(
        `Intent "${this.name}" has a call in flight; wait for it before reset().`,
        contextOf(this.#h),
      );
    if (ctx.keys === 'derived' && this.key === mintKey('derived', this.scope, this.name))
      throw new InvalidArgumentError(
        `Intent "${this.name}" has a derived key: the same name always derives the same key, so reset() cannot give it a new one. Form a new operation under a new name (e.g. with an attempt number: \`payout:\${id}:2\`).`,
        contextOf(this.#h),
      );
    await storeCall(
      ctx,
      'forgetting the intent',
      () => ctx.store.delete(this.scope, this.name, this.key),
      contextOf(this.#h),
    );
  }

  /** Re-reads the stored record (another tab or process may have moved it on). */
  async refresh(): Promise<IntentRecord> {
    const { ctx } = this.#h;
    const stored = await storeCall(
      ctx,
      'reading the intent',
      () => ctx.store.get(this.scope, this.name),
      contextOf(this.#h),
    );
    if (stored?.key === this.key) this.#h.record = stored;
    return this.record;
  }

  /**
   * Waits until no client sharing the coordinator (another tab, another process, a call
   * of this client) is sending this intent, then re-reads the stored record. An
   * `in_flight` record read this way was left by a send that died (reload, crash).
   */
  sync(signal?: AbortSignal): Promise<IntentRecord> {
    return this.#h.ctx.coordinator.exclusive(this.scope, this.name, () => this.refresh(), signal);
  }

  #id(): string {
    return intentId(this.scope, this.name);
  }

  /** The 0.1.0 fingerprint, computed only when the record last seen carries one. */
  async #legacy(compute: () => Promise<string>): Promise<string | undefined> {
    const stored = this.#h.record.fingerprint;
    return stored !== undefined && !stored.startsWith('v2.') ? compute() : undefined;
  }

  /**
   * Joins an identical call already in flight in this client, or runs the call under the
   * coordinator's lock for this intent.
   */
  #call<V, T>(plan: CallPlan<V, T>): Promise<T> {
    const { ctx } = this.#h;
    const signal = plan.signal;
    const cancelled = () => new CancelledError({ ...contextOf(this.#h), sent: false, cause: signal?.reason });
    if (signal?.aborted) return Promise.reject(cancelled());
    const id = this.#id();
    const running = ctx.inflight.get(id);
    if (running) {
      if (running.fingerprint === plan.fingerprint) return running.promise as Promise<T>;
      emit(this.#h, { type: 'mismatch', source: 'local' });
      const changed = changedParts(running.fingerprint, plan.fingerprint);
      return Promise.reject(new IntentMismatchError({ ...contextOf(this.#h), changed }));
    }
    const promise = ctx.coordinator
      .exclusive(this.scope, this.name, () => sendCall(this.#h, plan), signal)
      .catch((error: unknown) => {
        throw error instanceof OncelyError || !signal?.aborted ? error : cancelled();
      })
      .finally(() => ctx.inflight.delete(id));
    ctx.inflight.set(id, { fingerprint: plan.fingerprint, promise });
    return promise;
  }
}

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkMethod(method: unknown, where: { intent: string; scope: string }): string {
  if (typeof method !== 'string' || !METHOD.test(method))
    throw new InvalidArgumentError(
      `A request method must be an HTTP token such as "POST", got ${JSON.stringify(method)}.`,
      where,
    );
  return method.toUpperCase();
}
