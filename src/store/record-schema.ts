import * as z from 'zod/mini';
import { InvalidArgumentError } from '../errors.js';
import type { IntentRecord } from './store.js';

const intentRecordSchema = z.object({
  v: z.literal(1),
  scope: z.string(),
  name: z.string(),
  key: z.string().check(z.minLength(1), z.maxLength(255)),
  state: z.enum(['ready', 'in_flight', 'succeeded', 'failed', 'unknown']),
  fingerprint: z.optional(z.string()),
  attempts: z.number().check(z.int(), z.gte(0)),
  createdAt: z.number(),
  updatedAt: z.number(),
  ttl: z.optional(z.number().check(z.gte(0))),
  status: z.optional(z.number().check(z.int())),
  lease: z.optional(z.object({ owner: z.string(), until: z.number() })),
});

/**
 * Validates a record read back from a durable store. Returns the record, or a reason
 * string that says what is wrong with it (for quarantine reports).
 */
export function parseRecord(value: unknown): { record: IntentRecord } | { reason: string } {
  const result = z.safeParse(intentRecordSchema, value);
  if (result.success) return { record: result.data as IntentRecord };
  const issue = result.error.issues[0];
  return {
    reason: `invalid intent record: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'unknown'}`,
  };
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
