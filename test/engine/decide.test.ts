/**
 * The decision table, row by row, and the invariants it must hold over every input.
 * docs/engine.md draws the same table.
 */
import { describe, expect, it } from 'vitest';
import { type CallEnd, decide, type LastOutcome, leavesDoubt, retries } from '../../src/intent/decide.js';
import type { IntentState } from '../../src/store/store.js';

const row = (last: LastOutcome, replayed: boolean, unansweredBefore: boolean, sent: boolean, before: IntentState) =>
  ({ last, replayed, unansweredBefore, sent, before }) satisfies CallEnd;

describe('the decision table', () => {
  it.each([
    // last, replayed, unanswered before, sent, state before → state, result
    ['success', false, false, true, 'ready', 'succeeded', 'ok'],
    ['success', true, true, true, 'unknown', 'succeeded', 'ok'],
    ['success', false, false, true, 'failed', 'succeeded', 'ok'],
    ['failed', false, false, true, 'ready', 'failed', 'http_error'],
    ['failed', false, true, true, 'ready', 'unknown', 'unknown'],
    ['failed', false, false, true, 'unknown', 'unknown', 'unknown'],
    ['failed', false, false, true, 'in_flight', 'unknown', 'unknown'],
    ['failed', true, true, true, 'ready', 'failed', 'http_error'],
    ['failed', false, false, true, 'succeeded', 'succeeded', 'http_error'],
    ['mismatch', false, false, true, 'ready', 'failed', 'key_reused'],
    ['mismatch', false, true, true, 'ready', 'unknown', 'unknown'],
    ['mismatch', false, false, true, 'unknown', 'unknown', 'unknown'],
    ['mismatch', false, false, true, 'succeeded', 'succeeded', 'key_reused'],
    ['retryable', false, false, true, 'ready', 'unknown', 'unknown'],
    ['retryable', true, false, true, 'ready', 'failed', 'http_error'],
    ['retryable', true, true, true, 'unknown', 'failed', 'http_error'],
    ['in_progress', false, false, true, 'ready', 'unknown', 'in_progress'],
    ['in_progress', true, false, true, 'ready', 'failed', 'http_error'],
    ['no_answer', false, false, true, 'ready', 'unknown', 'unknown'],
    ['no_answer', false, false, true, 'succeeded', 'succeeded', 'unknown'],
    ['redirect', false, false, true, 'ready', 'unknown', 'redirect'],
    ['redirect', false, false, true, 'succeeded', 'succeeded', 'redirect'],
    ['cancelled', false, false, true, 'ready', 'unknown', 'cancelled'],
    ['cancelled', false, false, false, 'ready', 'ready', 'cancelled'],
    ['cancelled', false, false, false, 'unknown', 'unknown', 'cancelled'],
    ['no_answer', false, false, false, 'ready', 'ready', 'not_sent'],
    ['no_answer', false, true, false, 'unknown', 'unknown', 'not_sent'],
    ['failed', false, false, false, 'failed', 'failed', 'not_sent'],
  ] as const)(
    '%s (replayed %s, unanswered before %s, sent %s) from %s → %s, %s',
    (last, replayed, before, sent, state, next, result) => {
      expect(decide(row(last, replayed, before, sent, state))).toEqual({ state: next, result });
    },
  );
});

const outcomes: LastOutcome[] = [
  'success',
  'in_progress',
  'mismatch',
  'retryable',
  'failed',
  'no_answer',
  'redirect',
  'cancelled',
];
const states: IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];
const every: CallEnd[] = outcomes.flatMap((last) =>
  [false, true].flatMap((replayed) =>
    [false, true].flatMap((unansweredBefore) =>
      [false, true].flatMap((sent) => states.map((before) => row(last, replayed, unansweredBefore, sent, before))),
    ),
  ),
);

describe('invariants over all 320 inputs', () => {
  it('a succeeded intent never becomes failed, ready or anything but succeeded', () => {
    for (const end of every.filter((e) => e.before === 'succeeded')) expect(decide(end).state).toBe('succeeded');
  });

  it('a call that sent something never leaves the intent ready (its fingerprint is kept)', () => {
    for (const end of every.filter((e) => e.sent)) expect(decide(end).state).not.toBe('ready');
  });

  it('a call that sent nothing leaves the state as it was', () => {
    for (const end of every.filter((e) => !e.sent)) expect(decide(end).state).toBe(end.before);
  });

  it('after an unanswered attempt (in this call or before it) only a success or a replay ends failed', () => {
    const doubtful = every.filter(
      (e) => e.sent && (e.unansweredBefore || e.before === 'unknown' || e.before === 'in_flight'),
    );
    for (const end of doubtful)
      if (decide(end).state === 'failed') expect(end.replayed, JSON.stringify(end)).toBe(true);
  });

  it('the caller gets a value only with a succeeded intent', () => {
    for (const end of every) if (decide(end).result === 'ok') expect(decide(end).state).toBe('succeeded');
  });

  it('the loop retries exactly what the table would call unknown, never a replay', () => {
    for (const outcome of outcomes) {
      expect(retries(outcome, true)).toBe(false);
      expect(retries(outcome, false)).toBe(['retryable', 'in_progress', 'no_answer'].includes(outcome));
      expect(leavesDoubt(outcome, false, false)).toBe(false);
    }
  });
});
