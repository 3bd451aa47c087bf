/** Machine-readable error codes, one per error class. */
export type OncelyErrorCode =
  | 'KEY_REUSED'
  | 'INTENT_MISMATCH'
  | 'IN_PROGRESS'
  | 'OUTCOME_UNKNOWN'
  | 'INTENT_EXPIRED'
  | 'HTTP_ERROR'
  | 'RESPONSE_VALIDATION'
  | 'INVALID_KEY'
  | 'INVALID_ARGUMENT'
  | 'CORRUPT_RECORD'
  | 'STORE_FAILED';

/** What every oncely error says about the intent it concerns. */
export interface ErrorContext {
  /** The idempotency key, when one exists yet. */
  key?: string;
  /** The intent name. */
  intent?: string;
  scope?: string;
  /** Attempts sent for this call before the error. */
  attempts?: number;
  cause?: unknown;
}

/**
 * Base class of every error oncely throws. Switch on `code`. Messages never contain the
 * idempotency key (it can replay a request, so it stays out of logs); read `error.key`.
 */
export class OncelyError extends Error {
  readonly code: OncelyErrorCode;
  readonly key: string | undefined;
  readonly intent: string | undefined;
  readonly scope: string | undefined;
  readonly attempts: number;

  constructor(code: OncelyErrorCode, message: string, context: ErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = new.target.name;
    this.code = code;
    this.key = context.key;
    this.intent = context.intent;
    this.scope = context.scope;
    this.attempts = context.attempts ?? 0;
  }
}

/** What a server said: status, headers and the body as far as it could be read. */
export interface ServerAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON when the body was JSON, else the text (possibly empty). */
  body: unknown;
}

/**
 * The server says this key was already used with a different request (IETF: 422;
 * Stripe: 400 `idempotency_error`). Never retried; the intent is `failed`. Form a new
 * intent (new name, or `intent.reset()`) for the new request.
 */
export class KeyReusedError extends OncelyError {
  readonly status: number;
  readonly body: unknown;
  constructor(answer: ServerAnswer, context: ErrorContext) {
    super(
      'KEY_REUSED',
      `The server rejected the idempotency key of intent "${context.intent}": it was already used with a different request (HTTP ${answer.status}). Nothing was retried. Use a new intent for a different request.`,
      context,
    );
    this.status = answer.status;
    this.body = answer.body;
  }
}

/**
 * Caught locally, before sending: this intent was already sent with a different
 * request (method, URL or body). Nothing was sent. A changed request is a new intent.
 */
export class IntentMismatchError extends OncelyError {
  constructor(context: ErrorContext) {
    super(
      'INTENT_MISMATCH',
      `Intent "${context.intent}" was already sent with a different request, so it cannot send this one under the same key. Nothing was sent. Call intent.reset() or use a new intent name for the changed request.`,
      context,
    );
  }
}

/**
 * The outcome is not known: the retry budget ran out without a definitive answer
 * (network errors, timeouts, 5xx). The intent is `unknown` and keeps its key: resume
 * later by sending the same request under the same intent name.
 */
export class OutcomeUnknownError extends OncelyError {
  /** The last server answer, if any attempt got one. */
  readonly lastAnswer: ServerAnswer | undefined;
  constructor(
    context: ErrorContext & { lastAnswer?: ServerAnswer },
    code: OncelyErrorCode = 'OUTCOME_UNKNOWN',
    message?: string,
  ) {
    super(
      code,
      message ??
        `The outcome of intent "${context.intent}" is unknown after ${context.attempts ?? 0} attempt(s): the request may or may not have taken effect. Its key is kept (error.key); send the same request under the same intent name to resume safely.`,
      context,
    );
    this.lastAnswer = context.lastAnswer;
  }
}

/**
 * The server kept answering "still in progress" (409) until the budget ran out. The
 * first request may still complete; the intent is `unknown` with its key kept.
 */
export class InProgressError extends OutcomeUnknownError {
  constructor(context: ErrorContext & { lastAnswer?: ServerAnswer }) {
    super(
      context,
      'IN_PROGRESS',
      `The server still reports intent "${context.intent}" as in progress after ${context.attempts ?? 0} attempt(s). The intent is kept as unknown; resume later with the same intent name.`,
    );
  }
}

/**
 * An intent whose outcome is unknown is older than `keyTtl`: the server may have
 * forgotten the key and would run the request again, so oncely refuses to resend it.
 * Reconcile by hand (look the operation up by `key`), then `intent.reset()`.
 */
export class IntentExpiredError extends OncelyError {
  readonly createdAt: number;
  constructor(context: ErrorContext & { createdAt: number; keyTtl: number }) {
    super(
      'INTENT_EXPIRED',
      `Intent "${context.intent}" has an unknown outcome and its key is older than keyTtl (${context.keyTtl} ms): the server may no longer remember it, so resending could repeat the effect. Reconcile the operation by its key (error.key), then call intent.reset().`,
      context,
    );
    this.createdAt = context.createdAt;
  }
}

/** A definitive error answer (4xx, or a replayed 5xx). Not retried; the intent is `failed`. */
export class HttpError extends OncelyError {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
  readonly replayed: boolean;
  constructor(answer: ServerAnswer & { replayed: boolean }, context: ErrorContext) {
    super(
      'HTTP_ERROR',
      `Intent "${context.intent}" failed with HTTP ${answer.status}${answer.replayed ? ' (replayed by the server)' : ''}. This is a definitive answer; it was not retried.`,
      context,
    );
    this.status = answer.status;
    this.headers = answer.headers;
    this.body = answer.body;
    this.replayed = answer.replayed;
  }
}

/**
 * The server answered with success but the body did not match the schema (or was not
 * JSON). The effect may have happened: the intent stays `succeeded` with its key.
 */
export class ResponseValidationError extends OncelyError {
  readonly status: number;
  readonly body: unknown;
  readonly issues: readonly { message: string; path?: readonly unknown[] }[];
  constructor(
    answer: { status: number; body: unknown },
    issues: readonly { message: string; path?: readonly unknown[] }[],
    context: ErrorContext,
  ) {
    const first = issues[0];
    super(
      'RESPONSE_VALIDATION',
      `The response to intent "${context.intent}" (HTTP ${answer.status}) did not match the schema${first ? `: ${first.message}` : ''}. The request succeeded on the server; the intent is kept as succeeded with its key.`,
      context,
    );
    this.status = answer.status;
    this.body = answer.body;
    this.issues = issues;
  }
}

/** A caller-supplied idempotency key that cannot be sent. Nothing was sent. */
export class InvalidKeyError extends OncelyError {
  constructor(reason: string, context: ErrorContext = {}) {
    super('INVALID_KEY', `Invalid idempotency key: ${reason}. Nothing was sent.`, context);
  }
}

/** A bad argument (intent name, option). Nothing was sent. */
export class InvalidArgumentError extends OncelyError {
  constructor(message: string, context: ErrorContext = {}) {
    super('INVALID_ARGUMENT', message, context);
  }
}

/**
 * The stored record of this intent is corrupt and its key cannot be recovered. oncely
 * neither sends nor mints a new key over it: the lost key may already have been sent,
 * and a new one could repeat the effect. The bad record was moved aside to `location`.
 * Reconcile by hand (ask the server whether the operation happened), then remove the
 * intent (`store.delete(scope, name)`) to form it afresh.
 */
export class CorruptRecordError extends OncelyError {
  /** Where the bad record was moved (an IndexedDB key, a file path). */
  readonly location: string;
  /** What is wrong with it. */
  readonly reason: string;
  constructor(context: ErrorContext & { location: string; reason: string }) {
    super(
      'CORRUPT_RECORD',
      `The stored record of intent "${context.intent}" is corrupt (${context.reason}) and its idempotency key cannot be recovered, so nothing was sent and no new key was minted: the old key may already have been used. The record was moved to ${context.location}. Reconcile the operation with the server, then delete the intent to form it again.`,
      context,
    );
    this.location = context.location;
    this.reason = context.reason;
  }
}

/**
 * The store failed or did not answer in time (a full disk, a lost database connection,
 * a corrupt database file). `sent` says whether an attempt of this call had already gone
 * out: if so the intent keeps its key and stays `in_flight` or `unknown`; resume it by
 * sending the same request under the same intent name once the store works again.
 */
export class StoreError extends OncelyError {
  /** True when an attempt of this call may have reached the server before the store failed. */
  readonly sent: boolean;
  constructor(message: string, context: ErrorContext & { sent?: boolean } = {}) {
    super('STORE_FAILED', message, context);
    this.sent = context.sent ?? false;
  }
}
