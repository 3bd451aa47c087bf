import type { Outcome } from '../profiles/profiles.js';
import type { IntentState } from '../store/store.js';

/**
 * How one call ends, as one pure decision table: from how its attempts ended to what the
 * intent becomes and what the caller gets. `request()`, `run()` and `fetch()` all end
 * here, and the retry loop asks `retries()` the same question. The table is drawn in
 * docs/engine.md and tested row by row.
 */

/** How the last attempt of a call ended. */
export type LastOutcome = Outcome | 'no_answer' | 'redirect' | 'cancelled';

export interface CallEnd {
  /** The last attempt's outcome. */
  last: LastOutcome;
  /** The last answer carried the profile's replay marker: the server's stored word. */
  replayed: boolean;
  /** An attempt before the last one went out and got no definitive answer: it may have taken effect. */
  unansweredBefore: boolean;
  /** Any attempt of this call may have reached a server (tracked per attempt, never guessed). */
  sent: boolean;
  /** The intent's state before the call (`in_flight` left by a sender that died counts as unanswered). */
  before: IntentState;
}

/** What the caller gets. */
export type CallResult =
  | 'ok'
  | 'http_error'
  | 'key_reused'
  | 'unknown'
  | 'in_progress'
  | 'redirect'
  | 'cancelled'
  | 'not_sent';

export interface Verdict {
  state: IntentState;
  result: CallResult;
}

/** True when the loop should try again after this outcome (budget permitting): a replay is final. */
export const retries = (outcome: LastOutcome, replayed: boolean): boolean =>
  !replayed && (outcome === 'retryable' || outcome === 'in_progress' || outcome === 'no_answer');

/** An attempt that went out and got no definitive answer: its effect may have happened. */
export const leavesDoubt = (outcome: LastOutcome, replayed: boolean, sent: boolean): boolean =>
  sent && retries(outcome, replayed);

export function decide(end: CallEnd): Verdict {
  const { last, replayed, before } = end;
  if (!end.sent) return { state: before, result: last === 'cancelled' ? 'cancelled' : 'not_sent' };
  // A succeeded intent stays succeeded whatever a later resend hears.
  const to = (state: IntentState, result: CallResult): Verdict => ({
    state: before === 'succeeded' ? 'succeeded' : state,
    result,
  });
  const doubt = end.unansweredBefore || before === 'in_flight' || before === 'unknown';
  if (last === 'success') return { state: 'succeeded', result: 'ok' };
  // A replayed error of any kind is the stored outcome of the first request: definitive.
  if (replayed && last !== 'redirect' && last !== 'cancelled') return to('failed', 'http_error');
  switch (last) {
    case 'failed':
      return doubt ? to('unknown', 'unknown') : to('failed', 'http_error');
    case 'mismatch':
      return doubt ? to('unknown', 'unknown') : to('failed', 'key_reused');
    case 'in_progress':
      return to('unknown', 'in_progress');
    case 'redirect':
      return to('unknown', 'redirect');
    case 'cancelled':
      return to('unknown', 'cancelled');
    default:
      return to('unknown', 'unknown');
  }
}
