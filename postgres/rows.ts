/** IntentRecord ↔ row of `oncely_intents`. */
import { CorruptRecordError } from '../src/errors.js';
import { parseRecord } from '../src/store/record-schema.js';
import type { IntentRecord } from '../src/store/store.js';

/** The columns a record is read from, in this order, plus the compare-and-set version. */
export const RECORD_COLUMNS =
  'scope, name, key, state, fingerprint, attempts, created_at, updated_at, ttl, status, lease_owner, lease_until, version';

/** The 12 values of a record, in {@link RECORD_COLUMNS} order ($1…$12). */
export function recordValues(record: IntentRecord): unknown[] {
  return [
    record.scope,
    record.name,
    record.key,
    record.state,
    record.fingerprint ?? null,
    record.attempts,
    record.createdAt,
    record.updatedAt,
    record.ttl ?? null,
    record.status ?? null,
    record.lease?.owner ?? null,
    record.lease?.until ?? null,
  ];
}

/** The compare-and-set's view of the row an updater saw: its version and identity. */
export interface Seen {
  version: string;
  key: string;
  createdAt: number;
}

/**
 * A record as a row of a group write, for `json_to_recordset` (column names as keys; a
 * compare-and-set's with the row it saw): one literal, so that every row has one shape.
 */
export function groupRow(record: IntentRecord, seen?: Seen): Record<string, unknown> {
  const row = {
    scope: record.scope,
    name: record.name,
    key: record.key,
    state: record.state,
    fingerprint: record.fingerprint ?? null,
    attempts: record.attempts,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    ttl: record.ttl ?? null,
    status: record.status ?? null,
    lease_owner: record.lease?.owner ?? null,
    lease_until: record.lease?.until ?? null,
  };
  return seen ? { ...row, seen_version: seen.version, seen_key: seen.key, seen_created_at: seen.createdAt } : row;
}

/** `bigint` columns arrive as strings unless the app set a type parser: accept both. */
const num = (value: unknown): number | undefined =>
  value === null || value === undefined ? undefined : typeof value === 'number' ? value : Number(value);

export interface StoredRecord {
  record: IntentRecord;
  version: string;
}

/**
 * A row as a validated record. The table's constraints keep rows well-formed; a row
 * edited by hand into something else is reported, never guessed at or replaced.
 */
export function fromRow(row: Record<string, unknown>): StoredRecord {
  const record: Record<string, unknown> = {
    v: 1,
    scope: row.scope,
    name: row.name,
    key: row.key,
    state: row.state,
    attempts: num(row.attempts),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
  if (row.fingerprint !== null) record.fingerprint = row.fingerprint;
  if (row.ttl !== null) record.ttl = num(row.ttl);
  if (row.status !== null) record.status = num(row.status);
  if (row.lease_owner !== null) record.lease = { owner: row.lease_owner, until: num(row.lease_until) };
  const parsed = parseRecord(record);
  if ('reason' in parsed)
    throw new CorruptRecordError({
      scope: String(row.scope),
      intent: String(row.name),
      reason: parsed.reason,
      location: `oncely_intents row (${JSON.stringify(row.scope)}, ${JSON.stringify(row.name)})`,
    });
  return { record: parsed.record, version: String(row.version) };
}
