import { InvalidArgumentError } from '../errors.js';
import { MAX_KEY_LENGTH } from '../intent/keys.js';
import type { IntentRecord } from './store.js';

type Check = (value: unknown) => boolean;
const num: Check = (v) => Number.isFinite(v);
const int: Check = (v) => Number.isSafeInteger(v);
const str: Check = (v) => typeof v === 'string';
const opt =
  (check: Check): Check =>
  (v) =>
    v === undefined || check(v);
const STATES = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];

/** A key a record may hold: 1 to MAX_KEY_LENGTH characters (what a caller may choose is narrower: `validateKey`). */
export const isStoredKey = (v: unknown): v is string =>
  typeof v === 'string' && v.length >= 1 && v.length <= MAX_KEY_LENGTH;

/** The record's fields in order, each with its check (a hand validator: no schema library in the bundle). */
const FIELDS: [keyof IntentRecord, Check][] = [
  ['v', (v) => v === 1],
  ['scope', str],
  ['name', str],
  ['key', isStoredKey],
  ['state', (v) => STATES.includes(v as string)],
  ['fingerprint', opt(str)],
  ['attempts', (v) => int(v) && (v as number) >= 0],
  ['createdAt', num],
  ['updatedAt', num],
  ['ttl', opt((v) => num(v) && (v as number) >= 0)],
  ['status', opt(int)],
];

/**
 * Validates a record read back from a durable store. Returns a copy holding only the
 * record's fields, or a reason string that says what is wrong with it (for quarantine reports).
 */
export function parseRecord(value: unknown): { record: IntentRecord } | { reason: string } {
  const bad = (path: string) => ({ reason: `invalid intent record: ${path}: Invalid input` });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('(root)');
  const loose = value as Record<string, unknown>;
  const record: Record<string, unknown> = {};
  for (const [field, check] of FIELDS) {
    if (!check(loose[field])) return bad(field);
    if (loose[field] !== undefined) record[field] = loose[field];
  }
  const lease = loose.lease as Record<string, unknown> | undefined;
  if (lease !== undefined) {
    if (typeof lease !== 'object' || lease === null || Array.isArray(lease)) return bad('lease');
    if (!str(lease.owner)) return bad('lease.owner');
    if (!num(lease.until)) return bad('lease.until');
    record.lease = { owner: lease.owner, until: lease.until };
  }
  return { record: record as unknown as IntentRecord };
}

/** Checks a record a store is asked to write: valid, and filed under its own scope and name. */
export function validRecord(value: unknown, scope: string, name: string): IntentRecord {
  const parsed = parseRecord(value);
  if ('reason' in parsed) {
    throw new InvalidArgumentError(`Refusing to store an ${parsed.reason}.`, { scope, intent: name });
  }
  if (parsed.record.scope !== scope || parsed.record.name !== name) {
    throw new InvalidArgumentError(
      `Refusing to store the record of intent "${parsed.record.name}" (scope "${parsed.record.scope}") under intent "${name}" (scope "${scope}").`,
      { scope, intent: name },
    );
  }
  return parsed.record;
}
