/**
 * The key layout of oncely's IndexedDB object store.
 *
 * - An intent lives at the array key `[scope, name]`. Arrays compare element by
 *   element and a string sorts before an array, so `[scope, '']` … `[scope, []]`
 *   selects exactly one scope, and no scope's range reaches into another's.
 * - A quarantined record lives at `[['quarantine'], scope, name, at, nonce]`. Its first
 *   element is an array, so it sorts after every intent key and no intent range ever
 *   reads it; `[['quarantine'], scope]` … `[['quarantine'], scope, []]` selects one
 *   scope's quarantine.
 */

/** A fresh `['quarantine']` (IndexedDB keys are copied, but each key gets its own array). */
const quarantine = (): string[] => ['quarantine'];

/** The key of the intent (scope, name). */
export const recordKey = (scope: string, name: string): IDBValidKey => [scope, name];

/** Every intent key of one scope (and nothing else). */
export const scopeRange = (scope: string): IDBKeyRange => IDBKeyRange.bound([scope, ''], [scope, []], false, true);

/** The intent keys of one scope that sort after `after`. */
export const scopeRangeAfter = (scope: string, after: IDBValidKey): IDBKeyRange =>
  IDBKeyRange.bound(after, [scope, []], true, true);

/** A fresh key to quarantine a bad record of (scope, name) under. */
export const quarantineKey = (scope: string, name: string, at: number): IDBValidKey => [
  quarantine(),
  scope,
  name,
  at,
  Math.random().toString(36).slice(2),
];

/** Every quarantined record of one scope. */
export const quarantineScopeRange = (scope: string): IDBKeyRange =>
  IDBKeyRange.bound([quarantine(), scope], [quarantine(), scope, []], false, true);

/** Every quarantined record. */
export const allQuarantineRange = (): IDBKeyRange => IDBKeyRange.bound([quarantine()], [quarantine(), []], false, true);

/** The (scope, name) an intent key stands for; `undefined` for keys oncely did not write. */
export function parseRecordKey(key: IDBValidKey): { scope: string; name: string } | undefined {
  if (!Array.isArray(key) || key.length !== 2) return undefined;
  const [scope, name] = key;
  return typeof scope === 'string' && typeof name === 'string' ? { scope, name } : undefined;
}

/** A key outside every range above, written and removed again to check that writes work. */
export const probeKey = (): IDBValidKey => [['probe']];
