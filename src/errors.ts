import { redactHeaders, redactText } from './http/redact.js';

/** Machine-readable error codes, one per error class. */
export type OncelyErrorCode =
  | 'KEY_REUSED'
  | 'INTENT_MISMATCH'
  | 'IN_PROGRESS'
  | 'OUTCOME_UNKNOWN'
  | 'INTENT_EXPIRED'
  | 'INTENT_GONE'
  | 'HTTP_ERROR'
  | 'TRANSPORT_FAILED'
  | 'REDIRECT'
  | 'NOT_SENT'
  | 'CANCELLED'
  | 'RESPONSE_VALIDATION'
  | 'INVALID_KEY'
  | 'INVALID_ARGUMENT'
  | 'CORRUPT_RECORD'
  | 'INTENT_PENDING'
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
  /** An attempt of this call may have reached a server (each class has its default). */
  sent?: boolean;
  cause?: unknown;
}

/** What a server said: status, headers and the body as far as it could be read. */
export interface ServerAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON when the body was JSON, else the text (possibly empty). */
  body: unknown;
}

/** The variable parts of a message: the intent name, attempts, and one detail the class supplies. */
type Template = (intent: string, attempts: number, detail: string) => string;

/**
 * Every message in one table, so that each rule is written once and the bundle carries
 * each sentence once; each says what to do next.
 */
const NOTHING = 'Nothing was sent.';
const RESUME = 'Its key is kept (error.key); send the same request under the same intent name to resume safely.';
const MESSAGES: { [code in OncelyErrorCode]?: Template } = {
  OUTCOME_UNKNOWN: (i, n, d) =>
    `The outcome of intent "${i}" is unknown after ${n} attempt(s): the request may or may not have taken effect.${d} ${RESUME}`,
  IN_PROGRESS: (i, n, d) =>
    `The server still reports intent "${i}" as in progress after ${n} attempt(s).${d} The intent is kept as unknown; resume later with the same intent name.`,
  INTENT_MISMATCH: (i, _, d) =>
    `Intent "${i}" was already sent with a different request, so it cannot send this one under the same key. ${NOTHING} Call intent.reset() or use a new intent name for the changed request.${d}`,
  INTENT_GONE: (i, _, d) =>
    `The stored record of intent "${i}" is gone or holds another key (${d || 'reset, cleared or swept by another client'}). ${NOTHING} Call client.intent(name) to form the intent anew.`,
  NOT_SENT: (i, n, d) =>
    d
      ? `The deadline of intent "${i}" (${d} ms) ran out while its body was fingerprinted. ${NOTHING}`
      : `Nothing of intent "${i}" reached a server in ${n} attempt(s) (offline, connection refused, DNS failure, or a hook failed before sending). The intent is as it was; it is safe to send it again.`,
  KEY_REUSED: (i, _, d) =>
    `The server rejected the idempotency key of intent "${i}" (HTTP ${d}): it was already used with a different request. Use a new intent for a different request.`,
  INTENT_EXPIRED: (i, _, d) =>
    `Intent "${i}" was sent before and ${d}: the server may no longer remember it, so resending could repeat the effect. ${NOTHING} Reconcile the operation by its key (error.key), then settle or reset the intent.`,
  HTTP_ERROR: (i, _, d) => `Intent "${i}" failed with HTTP ${d}: a definitive answer, not retried.`,
  TRANSPORT_FAILED: (i, _, d) =>
    `The transport of intent "${i}" failed${d}. It was not retried; the intent is failed (see error.cause).`,
  REDIRECT: (i, _, d) =>
    `Intent "${i}" got a redirect (HTTP ${d}) that oncely does not follow: the key and body never leave the origin or change method. The server received the request, so the intent is unknown with its key kept. Point baseUrl at the final address.`,
  CANCELLED: (i, _, d) =>
    d
      ? `Intent "${i}" was cancelled after an attempt went out: the outcome is unknown. ${RESUME}`
      : `Intent "${i}" was cancelled before anything was sent. The intent is as it was.`,
  RESPONSE_VALIDATION: (i, _, d) =>
    `The response to intent "${i}" did not match the schema (HTTP ${d}). The request succeeded on the server; the intent is kept as succeeded with its key.`,
  INVALID_KEY: (_, __, d) => `Invalid idempotency key: ${d}. ${NOTHING}`,
  INTENT_PENDING: (i, _, d) =>
    `${i ? `Intent "${i}" is` : `Intents ${d} are`} in flight or of unknown outcome: a request may have taken effect under ${i ? 'its key' : 'their keys'}, so ${i ? 'it is' : 'they are'} not forgotten. Resume ${i ? 'it' : 'them'} (send the same request under the same name) or reconcile with the server, then reset; pass \`{ force: true }\` to drop ${i ? 'it' : 'them'} anyway.`,
  CORRUPT_RECORD: (i, _, d) =>
    `The stored record of intent "${i}" is corrupt (${d}), so nothing was sent and no new key was minted: the old key may already have been used. Reconcile the operation with the server, then delete the intent to form it again.`,
};

/** The codes whose errors always follow an attempt that may have reached a server. */
const SENT_CODES: readonly OncelyErrorCode[] = [
  'KEY_REUSED',
  'OUTCOME_UNKNOWN',
  'IN_PROGRESS',
  'HTTP_ERROR',
  'TRANSPORT_FAILED',
  'REDIRECT',
  'RESPONSE_VALIDATION',
];

/** The answers as the server sent them, for `rawAnswer()`: no property, so no serialiser or inspector finds them. */
const RAW = new WeakMap<object, ServerAnswer>();
/** The answer as an error exposes it: its headers a redacted copy. */
const redacted = (answer: ServerAnswer, key: string | undefined): ServerAnswer => ({
  ...answer,
  headers: redactHeaders(answer.headers, key),
});
/** Errors being printed by `util.inspect` (the default printer runs inside the custom one). */
const printing = new WeakSet<object>();

const message = (code: OncelyErrorCode, context: ErrorContext, detail = '') =>
  MESSAGES[code]?.(context.intent ?? '', context.attempts ?? 0, detail) ?? '';

/**
 * Base class of every error oncely throws. Switch on `code` (after `isOncelyError`) to
 * narrow to the class. The idempotency key is readable as `error.key` but never in a
 * message, `JSON.stringify(error)` or `util.inspect(error)`: it can replay a request.
 */
export class OncelyError extends Error {
  /** The class's name as `error.name` gives it, also once a minifier has renamed the class. */
  static readonly errorName: string = 'OncelyError';
  // Fields are `declare`d and set once in the constructor: no instance-field initialisers to ship.
  declare readonly code: OncelyErrorCode;
  /** The idempotency key (not enumerable, so logs and serialisers leave it out). */
  declare readonly key: string | undefined;
  declare readonly intent: string | undefined;
  declare readonly scope: string | undefined;
  declare readonly attempts: number;
  /**
   * True when an attempt of this call may have reached the server: its effect may have
   * happened, so the intent keeps its key (`in_flight`, `unknown` or settled by the answer).
   * False when nothing of this call left.
   */
  declare readonly sent: boolean;

  /**
   * `text` is the whole message; without one, the code's message from the table.
   * @param detail @internal the variable part of the table's message (subclasses)
   * @param fields @internal the subclass's own fields, set on the error
   */
  constructor(code: OncelyErrorCode, text: string, context: ErrorContext = {}, detail?: string, fields?: object) {
    super(text || message(code, context, detail), context.cause === undefined ? undefined : { cause: context.cause });
    Object.defineProperty(this, 'key', { value: context.key, enumerable: false });
    Object.assign(this, {
      // A minifier renames classes: the name is kept as a string of each class's own.
      name: Object.hasOwn(new.target, 'errorName') ? (new.target as { errorName?: string }).errorName : new.target.name,
      code,
      intent: context.intent,
      scope: context.scope,
      attempts: context.attempts ?? 0,
      sent: context.sent ?? SENT_CODES.includes(code),
      ...fields,
    });
  }

  /**
   * `error instanceof OncelyError` narrows as `isOncelyError` does (to the union that
   * `switch (error.code)` narrows); a subclass narrows to itself.
   */
  static override [Symbol.hasInstance]<C extends abstract new (...args: never) => unknown>(
    this: C,
    value: unknown,
  ): value is [Extract<AnyOncelyError, InstanceType<C>>] extends [never]
    ? InstanceType<C>
    : Extract<AnyOncelyError, InstanceType<C>> {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class on the right of instanceof, a subclass too.
    return Function.prototype[Symbol.hasInstance].call(this, value);
  }

  /** @internal A brand that survives realms and bundle duplicates, where `instanceof` does not. */
  get isOncelyError(): true {
    return true;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message, intent: this.intent, attempts: this.attempts };
  }

  /** What `util.inspect` and `console.error` print in Node: the usual form, key and credentials masked, causes included. */
  [Symbol.for('nodejs.util.inspect.custom')](
    _depth: number,
    options: object,
    inspect: (v: unknown, o: object) => string,
  ) {
    if (printing.has(this)) return this; // Node prints `this` the usual way.
    printing.add(this);
    try {
      return redactText(inspect(this, options), this.key);
    } finally {
      printing.delete(this);
    }
  }
}

/**
 * The server says this key was already used with a different request (IETF: 422;
 * Stripe: 400 `idempotency_error`), and no earlier attempt of this intent went unanswered:
 * nothing happened. Never retried; the intent is `failed`. Use a new intent for the new request.
 */
export class KeyReusedError extends OncelyError {
  static override readonly errorName: string = 'KeyReusedError';
  declare readonly code: 'KEY_REUSED';
  declare readonly status: number;
  declare readonly body: unknown;
  constructor({ status, body }: { status: number; body: unknown }, context: ErrorContext) {
    super('KEY_REUSED', '', context, `${status}`, { status, body });
  }
}

/** Which parts of the request differ from the one first sent under this intent. */
export type RequestPart = 'method' | 'path' | 'body';

/**
 * Caught locally, before sending: this intent was already sent with a different
 * request. Nothing was sent. A changed request is a new intent.
 */
export class IntentMismatchError extends OncelyError {
  static override readonly errorName: string = 'IntentMismatchError';
  declare readonly code: 'INTENT_MISMATCH';
  /** What changed, when the stored fingerprint can tell. */
  declare readonly changed: readonly RequestPart[];
  constructor(context: ErrorContext & { changed?: readonly RequestPart[] }) {
    const changed = context.changed ?? [];
    super('INTENT_MISMATCH', '', context, changed.length ? ` Changed: ${changed.join(', ')}.` : '', { changed });
  }
}

/**
 * The outcome is not known: the budget ran out without a definitive answer, or an answer
 * short of success came after an attempt that went unanswered (the first may have taken
 * effect). The intent is `unknown` and keeps its key: resume by sending the same request
 * under the same intent name.
 */
export class OutcomeUnknownError extends OncelyError {
  static override readonly errorName: string = 'OutcomeUnknownError';
  declare readonly code: 'OUTCOME_UNKNOWN' | 'IN_PROGRESS';
  /** The last server answer, if any attempt got one; its headers redacted (see `rawAnswer()`). */
  declare readonly lastAnswer: ServerAnswer | undefined;
  constructor(
    context: ErrorContext & { lastAnswer?: ServerAnswer },
    code: 'OUTCOME_UNKNOWN' | 'IN_PROGRESS' = 'OUTCOME_UNKNOWN',
    text?: string,
    fields?: object,
  ) {
    const lastAnswer = context.lastAnswer;
    const detail = lastAnswer ? ` The last answer was HTTP ${lastAnswer.status}.` : '';
    super(code, text ?? '', context, detail, {
      lastAnswer: lastAnswer && redacted(lastAnswer, context.key),
      ...fields,
    });
    if (lastAnswer) RAW.set(this, lastAnswer);
  }

  /** The last answer with the server's headers unredacted (the key and any credential it echoed): not for logs. */
  rawAnswer(): ServerAnswer | undefined {
    return RAW.get(this);
  }
}

/**
 * The server (or another client holding the intent's lease) kept reporting the request
 * in progress until the budget ran out. The first request may still complete; the intent
 * keeps its key.
 */
export class InProgressError extends OutcomeUnknownError {
  static override readonly errorName: string = 'InProgressError';
  declare readonly code: 'IN_PROGRESS';
  /**
   * `'server'`: the server answered 409; `'client'`: another client's lease (or call in
   * this process) held the intent; `'tab'`: another tab held its lock, past this call's
   * deadline. Nothing was sent here unless `'server'`.
   */
  declare readonly holder: 'server' | 'client' | 'tab';
  constructor(context: ErrorContext & { lastAnswer?: ServerAnswer; holder?: 'server' | 'client' | 'tab' }) {
    const holder = context.holder ?? 'server';
    const text =
      holder !== 'server'
        ? `Another ${holder === 'tab' ? 'tab' : 'client (tab, process or machine)'} is sending intent "${context.intent}" and still held it at this call's deadline. ${NOTHING} Try again later with the same intent name.`
        : undefined;
    super({ sent: holder === 'server', ...context }, 'IN_PROGRESS', text, { holder });
  }
}

/**
 * A sent intent whose key is past its retention horizon (or whose creation time lies in
 * the future: a clock that jumped): the server may have forgotten the key and would run
 * the request again, so oncely refuses to resend it. Reconcile by hand (look the
 * operation up by `key`), then settle or reset the intent.
 */
export class IntentExpiredError extends OncelyError {
  static override readonly errorName: string = 'IntentExpiredError';
  declare readonly code: 'INTENT_EXPIRED';
  declare readonly createdAt: number;
  declare readonly reason: 'expired' | 'clock';
  constructor(context: ErrorContext & { createdAt: number; keyTtl: number; reason?: 'expired' | 'clock' }) {
    const reason = context.reason ?? 'expired';
    const why =
      reason === 'clock'
        ? 'its key was minted in the future by this clock (the clock jumped, or another machine is ahead), so its age is unknown'
        : `its key is older than its retention (${context.keyTtl} ms)`;
    super('INTENT_EXPIRED', '', context, why, { createdAt: context.createdAt, reason });
  }
}

/**
 * The intent's record vanished or was re-formed with another key by another client, or it
 * was formed in a transaction that has not committed or rolled back. Nothing was sent.
 */
export class IntentGoneError extends OncelyError {
  static override readonly errorName: string = 'IntentGoneError';
  declare readonly code: 'INTENT_GONE';
  /** `'transaction'`: formed in a transaction not committed (or rolled back) when sent. */
  declare readonly reason: 'transaction' | 'other';
  constructor(context: ErrorContext & { reason?: 'transaction' | 'other' }) {
    const reason = context.reason ?? 'other';
    const detail =
      reason === 'transaction'
        ? 'it was formed in a transaction that has not committed, or rolled back: commit it before sending, or let a worker send committed intents; if it rolled back, another client may have formed it since'
        : '';
    super('INTENT_GONE', '', context, detail, { reason });
  }
}

/** A definitive error answer (4xx, or a replayed error). Not retried; the intent is `failed`. */
export class HttpError extends OncelyError {
  static override readonly errorName: string = 'HttpError';
  declare readonly code: 'HTTP_ERROR';
  declare readonly status: number;
  declare readonly headers: Headers;
  declare readonly body: unknown;
  declare readonly replayed: boolean;
  constructor({ status, headers, body, replayed }: ServerAnswer & { replayed: boolean }, context: ErrorContext) {
    const detail = `${status}${replayed ? ' (replayed by the server)' : ''}`;
    super('HTTP_ERROR', '', context, detail, { status, headers: redactHeaders(headers, context.key), body, replayed });
    RAW.set(this, { status, headers, body });
  }

  /** The answer with the server's headers unredacted (the key and any credential it echoed): not for logs. */
  rawAnswer(): ServerAnswer {
    return RAW.get(this) ?? { status: this.status, headers: this.headers, body: this.body };
  }
}

/** The function given to `intent.run()` threw an error that is not retried; it is the `cause`. */
export class TransportError extends OncelyError {
  static override readonly errorName: string = 'TransportError';
  declare readonly code: 'TRANSPORT_FAILED';
  constructor(context: ErrorContext) {
    super('TRANSPORT_FAILED', '', context, context.cause instanceof Error ? `: ${context.cause.message}` : '');
  }
}

/**
 * The server answered with a redirect oncely does not follow (301/302/303 on a keyed
 * request, or any redirect to another origin, or one a browser hides). The server did
 * receive the request, so the intent is `unknown` with its key kept.
 */
export class RedirectError extends OncelyError {
  static override readonly errorName: string = 'RedirectError';
  declare readonly code: 'REDIRECT';
  declare readonly status: number;
  /** The `Location` the server gave, when it could be read. */
  declare readonly location: string | undefined;
  constructor({ status, location }: { status: number; location: string | undefined }, context: ErrorContext) {
    super('REDIRECT', '', context, `${status}${location ? ` to ${location}` : ''}`, { status, location });
  }
}

/**
 * Nothing of the call left: every attempt provably failed before reaching a server
 * (`reason: 'unreached'`), or the call's deadline ran out while its request was prepared,
 * the body serialised and fingerprinted, before any attempt (`'deadline'`). The intent is as it was.
 */
export class NotSentError extends OncelyError {
  static override readonly errorName: string = 'NotSentError';
  declare readonly code: 'NOT_SENT';
  declare readonly reason: 'unreached' | 'deadline';
  constructor(context: ErrorContext & { reason?: 'unreached' | 'deadline'; deadline?: number }) {
    const reason = context.reason ?? 'unreached';
    super('NOT_SENT', '', context, reason === 'deadline' ? `${context.deadline}` : '', { reason });
  }
}

/** The call was aborted through its `signal` (the reason is `cause`). */
export class CancelledError extends OncelyError {
  static override readonly errorName: string = 'CancelledError';
  declare readonly code: 'CANCELLED';
  constructor(context: ErrorContext & { sent: boolean }) {
    super('CANCELLED', '', context, context.sent ? 'sent' : '');
  }
}

/**
 * The server answered with success but the body did not match the schema (or was not
 * JSON). The effect may have happened: the intent stays `succeeded` with its key.
 */
export class ResponseValidationError extends OncelyError {
  static override readonly errorName: string = 'ResponseValidationError';
  declare readonly code: 'RESPONSE_VALIDATION';
  declare readonly status: number;
  declare readonly body: unknown;
  declare readonly issues: readonly { message: string; path?: readonly unknown[] }[];
  constructor(
    { status, body }: { status: number; body: unknown },
    issues: readonly { message: string; path?: readonly unknown[] }[],
    context: ErrorContext,
  ) {
    const first = issues[0];
    super('RESPONSE_VALIDATION', '', context, `${status}${first ? `: ${first.message}` : ''}`, {
      status,
      body,
      issues,
    });
  }
}

/** A caller-supplied idempotency key that cannot be sent. Nothing was sent. */
export class InvalidKeyError extends OncelyError {
  static override readonly errorName: string = 'InvalidKeyError';
  declare readonly code: 'INVALID_KEY';
  constructor(reason: string, context: ErrorContext = {}) {
    super('INVALID_KEY', '', context, reason);
  }
}

/** A bad argument (intent name, option, body, header). Nothing was sent. */
export class InvalidArgumentError extends OncelyError {
  static override readonly errorName: string = 'InvalidArgumentError';
  declare readonly code: 'INVALID_ARGUMENT';
  constructor(text: string, context: ErrorContext = {}) {
    super('INVALID_ARGUMENT', text, context);
  }
}

/**
 * `intent.reset()` or `client.clear()` would forget an intent whose request may have taken
 * effect (`in_flight`, or `unknown`, or sent again right now under a live lease). Nothing was
 * removed. Resume or reconcile it first, or pass `{ force: true }`.
 */
export class IntentPendingError extends OncelyError {
  static override readonly errorName: string = 'IntentPendingError';
  declare readonly code: 'INTENT_PENDING';
  /** The intents that were kept. */
  declare readonly names: readonly string[];
  constructor(context: ErrorContext & { names: readonly string[] }) {
    const { names } = context;
    super('INTENT_PENDING', '', context, names.map((n) => JSON.stringify(n)).join(', '), { names });
  }
}

/**
 * The stored record of this intent is corrupt and its key cannot be recovered. oncely
 * neither sends nor mints a new key over it: the lost key may already have been sent.
 * Reconcile by hand, then remove the intent (`store.delete(scope, name)`) to form it afresh.
 */
export class CorruptRecordError extends OncelyError {
  static override readonly errorName: string = 'CorruptRecordError';
  declare readonly code: 'CORRUPT_RECORD';
  /** Where the bad record was moved (an IndexedDB key, a file path, a table). */
  declare readonly location: string;
  /** What is wrong with it. */
  declare readonly reason: string;
  constructor(context: ErrorContext & { location: string; reason: string }) {
    const { location, reason } = context;
    super('CORRUPT_RECORD', `${message('CORRUPT_RECORD', context, reason)} It was moved to ${location}.`, context, '', {
      location,
      reason,
    });
  }
}

/**
 * The store failed or did not answer in time (a full disk, a lost database connection,
 * a corrupt database file). `sent` says whether an attempt of this call had already gone
 * out: if so the intent keeps its key and stays `in_flight` or `unknown`; resume it by
 * sending the same request under the same intent name once the store works again.
 */
export class StoreError extends OncelyError {
  static override readonly errorName: string = 'StoreError';
  declare readonly code: 'STORE_FAILED';
  constructor(text: string, context: ErrorContext = {}) {
    super('STORE_FAILED', text, context);
  }
}

/**
 * Every error class oncely throws: `switch (error.code)` narrows to one of them
 * (`'OUTCOME_UNKNOWN'` to an `OutcomeUnknownError` that is not an `InProgressError`).
 */
export type AnyOncelyError =
  | KeyReusedError
  | IntentMismatchError
  | (OutcomeUnknownError & { readonly code: 'OUTCOME_UNKNOWN' })
  | InProgressError
  | IntentExpiredError
  | IntentGoneError
  | HttpError
  | TransportError
  | RedirectError
  | NotSentError
  | CancelledError
  | ResponseValidationError
  | InvalidKeyError
  | InvalidArgumentError
  | CorruptRecordError
  | IntentPendingError
  | StoreError;

/** True for any error oncely threw, even from another copy of the library or another realm. */
export function isOncelyError(error: unknown): error is AnyOncelyError {
  return error instanceof OncelyError || (error as { isOncelyError?: unknown } | null)?.isOncelyError === true;
}
