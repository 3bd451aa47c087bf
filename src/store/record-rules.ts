import { InvalidArgumentError } from '../errors.js';
import type { IntentRecord, IntentState } from './store.js';

/**
 * No lone surrogates: SQLite and PostgreSQL keep names as UTF-8, where two different lone
 * surrogates would both become U+FFFD, one name for two intents.
 */
export const wellFormed = (text: string): boolean =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

/** For a store that keeps names as UTF-8 (SQLite, PostgreSQL): refuses a scope or name two intents could share. */
export function checkStorable(scope: string, name?: string): void {
  if (wellFormed(scope) && (name === undefined || wellFormed(name))) return;
  throw new InvalidArgumentError(
    'An intent scope or name with a lone surrogate (not well-formed Unicode) cannot be stored: as UTF-8 it would be the same as another. Use well-formed strings (String.prototype.toWellFormed()).',
    { scope, ...(name !== undefined && { intent: name }) },
  );
}

/** The retention of a record written before records carried their own `ttl`. */
export const DEFAULT_RECORD_TTL = 24 * 60 * 60 * 1000;

/** States in which a record may be swept once old. */
export const SWEEPABLE_STATES: readonly IntentState[] = ['succeeded', 'failed', 'ready'];
/** States `client.pending()` reports: the outcome is not known yet. */
export const PENDING_STATES: readonly IntentState[] = ['in_flight', 'unknown'];
/** States in which a request has gone out at least once: its fingerprint is fixed forever. */
export const SENT_STATES: readonly IntentState[] = ['in_flight', 'succeeded', 'failed', 'unknown'];

/**
 * True when forgetting the record could lose an effect: its request is on the wire or went
 * unanswered (`in_flight`, `unknown`), or a call holds a lease live at `now` (a succeeded
 * intent sent again). Never removed by `reset()` or `clear()` without `force`.
 */
export const isPending = (record: IntentRecord, now: number): boolean =>
  PENDING_STATES.includes(record.state) || (record.lease !== undefined && record.lease.until > now);

/** The record's own retention (ms). */
export const recordTtl = (record: IntentRecord): number => record.ttl ?? DEFAULT_RECORD_TTL;

/**
 * The retention horizon of a sent record (ms): the stricter of the `ttl` it formed under and
 * the client's current `keyTtl` (a client that learnt the server keeps keys less long).
 */
export const horizon = (record: IntentRecord, keyTtl: number): number => Math.min(record.ttl ?? keyTtl, keyTtl);

/** True when a sent record's key is past its retention horizon at `now`: the server may have forgotten it. */
export const pastRetention = (record: IntentRecord, now: number, keyTtl: number): boolean =>
  now - record.createdAt > horizon(record, keyTtl);

/** True when a sweep at `now` may remove the record: a settled or never-sent one, idle past its own ttl. */
export const isSweepable = (record: IntentRecord, now: number): boolean =>
  SWEEPABLE_STATES.includes(record.state) && record.updatedAt + recordTtl(record) < now;

let lastId: { scope: string; name: string; id: string } | undefined;

/** One string id per (scope, name), for maps and locks. The last one is kept: a call asks for it several times. */
export function intentId(scope: string, name: string): string {
  if (lastId?.scope !== scope || lastId.name !== name) lastId = { scope, name, id: JSON.stringify([scope, name]) };
  return lastId.id;
}
