import type { InferOutput, StandardSchemaV1 } from '../http/schema.js';
import type { RunClassifier } from '../http/thrown.js';

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
  /**
   * The client's `fetch` for this attempt: the key header and `signal` added. Use it rather
   * than the global `fetch` when your function returns a parsed body: oncely then still sees
   * the status (a 503 whose body you parsed is retried, not stored as a success).
   * @example intent.run(async ({ fetch }) => (await fetch('https://api.example.com/pay', { method: 'POST', body })).json())
   */
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
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
