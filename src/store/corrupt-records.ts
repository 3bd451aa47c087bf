import { CorruptRecordError } from '../errors.js';
import { intentId } from './record-rules.js';
import { isStoredKey, parseRecord } from './record-schema.js';
import type { IntentRecord } from './store.js';

/**
 * What oncely does with a stored value that is not a valid record of its slot.
 *
 * The bad value is always moved aside (quarantined) and reported, never thrown away and
 * never allowed to crash the app. What then stands in the slot is decided here, with one
 * rule: **a corrupt record never turns into a new key silently**, because the key it held
 * may already have been sent, and a new key would let the server run the request again.
 *
 * - **Salvaged**: the value still names this intent (`scope` and `name` match) and holds
 *   a usable `key`. The slot gets a valid record with that key in state `unknown`, the
 *   safest state: the client resumes with the same key and the server deduplicates.
 *   Fields that cannot be trusted take their most careful value: `createdAt` that is not
 *   a past timestamp becomes `0`, so the key counts as expired and is reconciled by hand
 *   rather than resent after the server may have forgotten it.
 * - **Blocked**: no usable key, or the value belongs to another intent (reusing another
 *   intent's key could replay that intent's response as this one's). The slot gets a
 *   {@link QuarantineMarker}; reading or claiming the intent throws `CorruptRecordError`
 *   until the app reconciles and deletes the intent.
 */
export type SlotState =
  | { kind: 'empty' }
  | { kind: 'record'; record: IntentRecord }
  | { kind: 'blocked'; marker: QuarantineMarker }
  | { kind: 'corrupt'; reason: string; salvaged: IntentRecord | undefined };

/** Stands in the slot of an intent whose record was quarantined without a usable key. */
export interface QuarantineMarker {
  oncely: 'quarantined';
  reason: string;
  /** Where the bad record went. */
  location: string;
  at: number;
}

/** What is kept in quarantine: the bad value as it was, and why it was moved. */
export interface QuarantineEntry {
  scope: string;
  name: string;
  reason: string;
  at: number;
  /** The key of the record put in its place, when one could be salvaged. */
  salvagedKey?: string;
  /** The stored value, untouched. */
  value: unknown;
}

type Loose = Record<string, unknown>;

const isObject = (value: unknown): value is Loose => typeof value === 'object' && value !== null;

export function isQuarantineMarker(value: unknown): value is QuarantineMarker {
  return isObject(value) && value.oncely === 'quarantined' && typeof value.location === 'string';
}

/** Classifies the value stored in the slot of (scope, name). */
export function readSlot(value: unknown, scope: string, name: string, now: number): SlotState {
  if (value === undefined) return { kind: 'empty' };
  if (isQuarantineMarker(value)) return { kind: 'blocked', marker: value };
  const parsed = parseRecord(value);
  if ('record' in parsed) {
    if (parsed.record.scope === scope && parsed.record.name === name) return { kind: 'record', record: parsed.record };
    return {
      kind: 'corrupt',
      reason: `record of intent ${intentId(parsed.record.scope, parsed.record.name)} stored under ${intentId(scope, name)}`,
      salvaged: undefined,
    };
  }
  return { kind: 'corrupt', reason: parsed.reason, salvaged: salvage(value, scope, name, now) };
}

function salvage(value: unknown, scope: string, name: string, now: number): IntentRecord | undefined {
  if (!isObject(value) || value.scope !== scope || value.name !== name) return undefined;
  const { key, attempts, createdAt, fingerprint, status } = value;
  if (!isStoredKey(key)) return undefined;
  const record: IntentRecord = {
    v: 1,
    scope,
    name,
    key,
    state: 'unknown',
    attempts: Number.isSafeInteger(attempts) && (attempts as number) >= 0 ? (attempts as number) : 0,
    createdAt: typeof createdAt === 'number' && createdAt >= 0 && createdAt <= now ? createdAt : 0,
    updatedAt: now,
  };
  if (typeof fingerprint === 'string') record.fingerprint = fingerprint;
  if (Number.isSafeInteger(status)) record.status = status as number;
  const check = parseRecord(record);
  return 'record' in check ? check.record : undefined;
}

/** The error a blocked intent answers with until the app reconciles and deletes it. */
export const corruptRecordError = (scope: string, name: string, marker: QuarantineMarker) =>
  new CorruptRecordError({ scope, intent: name, reason: marker.reason, location: marker.location });
