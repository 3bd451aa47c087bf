import {
  CancelledError,
  type ErrorContext,
  InProgressError,
  NotSentError,
  type OncelyError,
  OutcomeUnknownError,
  RedirectError,
  type ServerAnswer,
} from '../errors.js';
import type { RedirectAnswer } from '../http/attempt.js';
import type { LoopEnd } from '../retry/loop.js';
import type { IntentHandle } from './call.js';
import type { ClientContext } from './context.js';
import type { Verdict } from './decide.js';

/** How a call ends for the app: the events it emits and the error of every verdict that is not a value. */

type Emitted = Parameters<ClientContext['hub']['emit']>[0];
type EventBody = Emitted extends infer E
  ? E extends { key: string }
    ? Omit<E, 'scope' | 'intent' | 'key'>
    : never
  : never;

export function emit(h: IntentHandle, event: EventBody): void {
  const { hub } = h.ctx;
  // Heard by nobody, an event only moves the counters: no copy with the intent's names.
  hub.emit((hub.listens(event.type) ? { ...event, scope: h.scope, intent: h.name, key: h.key } : event) as Emitted);
}

/** The events that tell how a call ended. */
export function announce(h: IntentHandle, verdict: Verdict, end: LoopEnd<unknown>): void {
  const { status, replayed } = end.last;
  const attempts = end.attempts;
  const withStatus = status ? { status } : {};
  switch (verdict.result) {
    case 'ok':
      if (replayed) emit(h, { type: 'replay', status: status ?? 200 });
      emit(h, { type: 'success', ...withStatus, replayed, attempts });
      return;
    case 'http_error':
      emit(h, { type: 'failure', code: 'HTTP_ERROR', ...withStatus, attempts });
      return;
    case 'key_reused':
      emit(h, { type: 'mismatch', source: 'server', ...withStatus });
      return;
    case 'not_sent':
      emit(h, { type: 'failure', code: 'NOT_SENT', attempts });
      return;
    case 'cancelled':
      if (verdict.state === 'unknown') emit(h, { type: 'unknown', attempts });
      else emit(h, { type: 'failure', code: 'CANCELLED', attempts });
      return;
    default:
      if (verdict.state === 'unknown') emit(h, { type: 'unknown', attempts });
  }
}

/** The last server answer, as errors carry it. */
export function lastAnswer(end: LoopEnd<unknown>): ServerAnswer | undefined {
  const value = end.last.value as Partial<ServerAnswer> | undefined;
  if (value && typeof value === 'object' && value.headers instanceof Headers && typeof value.status === 'number')
    return { status: value.status, headers: value.headers, body: value.body };
  return end.last.status !== undefined
    ? { status: end.last.status, headers: end.last.headers ?? new Headers(), body: undefined }
    : undefined;
}

/** The error of every verdict that is not the caller's value. */
export function errorFor(verdict: Verdict, end: LoopEnd<unknown>, context: ErrorContext): OncelyError {
  const answer = lastAnswer(end);
  const cause = end.last.error;
  const withCause = cause === undefined ? context : { ...context, cause };
  switch (verdict.result) {
    case 'in_progress':
      return new InProgressError({ ...context, ...(answer ? { lastAnswer: answer } : {}) });
    case 'redirect':
      return new RedirectError(end.last.value as RedirectAnswer, context);
    case 'cancelled':
      return new CancelledError({ ...withCause, sent: end.sent > 0 });
    case 'not_sent':
      return new NotSentError(withCause);
    default:
      return new OutcomeUnknownError({ ...withCause, ...(answer ? { lastAnswer: answer } : {}) });
  }
}
