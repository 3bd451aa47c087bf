import type { IntentRecord, IntentState } from '../store/store.js';

/**
 * The intent state machine, as pure functions from a stored record to the next one.
 *
 *   ready ──send──> in_flight ──2xx / definitive 4xx──> succeeded | failed
 *                       └──budget exhausted, no definitive answer──> unknown ──resume──> in_flight
 *
 * Each result is written to the store before the client acts on it.
 */

/** States in which the request has been sent at least once, so its fingerprint is fixed. */
export const SENT_STATES: readonly IntentState[] = ['in_flight', 'succeeded', 'failed', 'unknown'];

export function newRecord(scope: string, name: string, key: string, now: number): IntentRecord {
  return { v: 1, scope, name, key, state: 'ready', attempts: 0, createdAt: now, updatedAt: now };
}

/** About to send: bind the fingerprint (first send only; the caller refuses another) and mark in flight. */
export function toInFlight(record: IntentRecord, fingerprint: string, now: number): IntentRecord {
  return { ...record, state: 'in_flight', fingerprint: record.fingerprint ?? fingerprint, updatedAt: now };
}

/** The call ended: record the outcome and add the attempts it made. */
export function toSettled(
  record: IntentRecord,
  state: 'succeeded' | 'failed' | 'unknown',
  attempts: number,
  now: number,
  status?: number,
): IntentRecord {
  const next: IntentRecord = { ...record, state, attempts: record.attempts + attempts, updatedAt: now };
  if (status !== undefined) next.status = status;
  return next;
}

/** An aborted call that sent nothing leaves the intent as it was before the call. */
export function toUnsent(record: IntentRecord, previous: IntentState, now: number): IntentRecord {
  const next: IntentRecord = { ...record, state: previous, updatedAt: now };
  if (previous === 'ready') delete next.fingerprint;
  return next;
}
