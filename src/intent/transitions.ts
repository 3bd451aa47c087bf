import type { IntentLease, IntentRecord, IntentState } from '../store/store.js';

/**
 * The intent's record transitions, as pure functions from the stored record to the next.
 * Each keeps the invariants whatever another client wrote meanwhile: a `succeeded` intent
 * stays succeeded, a sent intent keeps its fingerprint, attempts only grow, and a lease
 * is released only by the call that holds it. Lifecycle: docs/engine.md.
 */

export function newRecord(scope: string, name: string, key: string, now: number, ttl: number): IntentRecord {
  return { v: 1, scope, name, key, state: 'ready', attempts: 0, createdAt: now, updatedAt: now, ttl };
}

/**
 * About to send attempt 1: bind the fingerprint (first send only), mark in flight under the
 * call's lease. A `succeeded` intent sent again (for the server's replay: no bodies are
 * stored) stays `succeeded`: a lost outcome write must not leave it in doubt.
 */
export function toInFlight(record: IntentRecord, fingerprint: string, now: number, lease: IntentLease): IntentRecord {
  return {
    ...record,
    state: record.state === 'succeeded' ? 'succeeded' : 'in_flight',
    fingerprint: record.fingerprint ?? fingerprint,
    attempts: record.attempts + 1,
    updatedAt: now,
    lease,
  };
}

/**
 * The in_flight write that goes out with the first attempt (`next`, from the record read
 * under a lock kept since): on the stored record if it is still this intent's and unsent;
 * over a deleted record, or another key's never-sent one, `next` itself (the sent intent
 * comes back). `undefined` leaves the store as it is.
 */
export function toInFlightOver(current: IntentRecord | undefined, next: IntentRecord): IntentRecord | undefined {
  if (current?.key === next.key)
    return current.state === 'ready' ? toInFlight(current, next.fingerprint!, next.updatedAt, next.lease!) : undefined;
  return !current || current.state === 'ready' ? next : undefined;
}

/** Attempt `added` more went out (retries), while the lease is still this call's. */
export function withMoreAttempts(record: IntentRecord, owner: string, added: number): IntentRecord | undefined {
  return record.lease?.owner === owner && added > 0 ? { ...record, attempts: record.attempts + added } : undefined;
}

/** Extends the call's lease. */
export function renewLease(record: IntentRecord | undefined, lease: IntentLease): IntentRecord | undefined {
  return record?.lease?.owner === lease.owner ? { ...record, lease } : undefined;
}

/**
 * The call ended having sent something: record its outcome and correct the attempt count
 * by `added` (attempts counted ahead that never left make it negative). If another client took the lease over meanwhile, only a success is recorded.
 */
export function toSettled(
  record: IntentRecord,
  state: IntentState,
  owner: string,
  added: number,
  now: number,
  status?: number,
): IntentRecord {
  const ours = record.lease === undefined || record.lease.owner === owner;
  const next: IntentRecord = { ...record, attempts: Math.max(0, record.attempts + added), updatedAt: now };
  if (record.state !== 'succeeded' && (ours || state === 'succeeded')) next.state = state;
  if (ours) delete next.lease;
  if (status !== undefined) next.status = status;
  return next;
}

/**
 * The call sent nothing (refused connections, a hook that threw, an abort before the
 * first byte): put back what this call changed, if the record is still under its lease.
 */
export function toUnsent(record: IntentRecord, before: IntentRecord, owner: string): IntentRecord | undefined {
  if (record.lease?.owner !== owner) return undefined;
  const next: IntentRecord = { ...record, state: before.state, attempts: before.attempts };
  delete next.lease;
  if (before.fingerprint === undefined) delete next.fingerprint;
  return next;
}
