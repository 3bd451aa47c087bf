/**
 * The few assertions the conformance suite needs, so it runs under any test runner (vitest,
 * node:test, bun test, Deno.test, or none, inside a Worker). A failure throws a
 * `ConformanceError` whose message says what was expected and what the store did.
 */
export class ConformanceError extends Error {
  override name = 'ConformanceError';
}

const show = (value: unknown): string => {
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
};

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Structural equality of plain data; a property holding `undefined` counts as absent (as a JSON store would keep it). */
export function same(actual: unknown, expected: unknown): boolean {
  if (Object.is(actual, expected)) return true;
  if (!isObject(actual) || !isObject(expected)) return false;
  if (Array.isArray(actual) !== Array.isArray(expected)) return false;
  if (Array.isArray(actual) && Array.isArray(expected))
    return actual.length === expected.length && actual.every((item, i) => same(item, expected[i]));
  const keys = (object: Record<string, unknown>) => Object.keys(object).filter((key) => object[key] !== undefined);
  const mine = keys(actual);
  return mine.length === keys(expected).length && mine.every((key) => same(actual[key], expected[key]));
}

/** True when every property `partial` names has the same value in `actual` (deeply, for nested objects). */
function matches(actual: unknown, partial: unknown): boolean {
  if (!isObject(partial) || Array.isArray(partial)) return same(actual, partial);
  return isObject(actual) && Object.entries(partial).every(([key, value]) => matches(actual[key], value));
}

export function equal(actual: unknown, expected: unknown, what: string): void {
  if (!same(actual, expected))
    throw new ConformanceError(`${what}: expected ${show(expected)}, the store gave ${show(actual)}`);
}

export function match(actual: unknown, partial: unknown, what: string): void {
  if (!matches(actual, partial))
    throw new ConformanceError(`${what}: expected ${show(actual)} to have ${show(partial)}`);
}

export function ok(condition: boolean, what: string): void {
  if (!condition) throw new ConformanceError(what);
}

/** Resolves when `promise` rejects with an error of `code` (an oncely error code, e.g. `INVALID_ARGUMENT`). */
export async function rejects(promise: Promise<unknown>, code: string, what: string): Promise<void> {
  let outcome: string;
  try {
    outcome = `resolved ${show(await promise)}`;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === code) return;
    outcome = `rejected with ${String(error)}`;
  }
  throw new ConformanceError(`${what}: expected a rejection with code ${code}, the store ${outcome}`);
}

/** Names, sorted: what a listing holds, in no particular order. */
export const byName = (records: readonly { name: string }[]): string[] => records.map((record) => record.name).sort();
