/** The changed bodies the check sends under the first key, derived from the valid one. */

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The first top-level field holding a number, if any. */
export const numberField = (body: unknown): string | undefined =>
  isObject(body) ? Object.keys(body).find((name) => typeof body[name] === 'number') : undefined;

/** Another request: a number + 1, else a string with a suffix, else an extra field. */
export function otherBody(body: unknown): unknown {
  if (!isObject(body)) return [body, 'oncely-check'];
  const number = numberField(body);
  if (number !== undefined) return { ...body, [number]: (body[number] as number) + 1 };
  const string = Object.keys(body).find((name) => typeof body[name] === 'string');
  if (string !== undefined) return { ...body, [string]: `${body[string]}-2` };
  return { ...body, oncelyCheck: 2 };
}

/** The same value with its top-level fields in reverse order: other bytes, the same JSON. */
export function reorderedText(body: unknown): string | undefined {
  if (!isObject(body) || Object.keys(body).length < 2) return undefined;
  return JSON.stringify(Object.fromEntries(Object.entries(body).reverse()));
}

/** The same body with its first number as a string (`1000` → `"1000"`). */
export function stringifiedNumber(body: unknown): unknown {
  const number = numberField(body);
  if (number === undefined) return undefined;
  return { ...(body as Record<string, unknown>), [number]: String((body as Record<string, unknown>)[number]) };
}
