/**
 * The request bodies the check sends, as JSON (`--json`) or as a form (`--form`, Stripe's
 * style): the valid one and the changed ones it sends under the first key.
 */

export interface CheckBody {
  contentType: string;
  /** The valid request, as sent. */
  text: string;
  /** Another request: a number + 1, else a string with a suffix, else an extra field. */
  other: string;
  /** The same request with its top-level fields in reverse order; absent with fewer than two fields. */
  reordered: string | undefined;
  /** The same request with its first number as a string (`1000` → `"1000"`); JSON only: a form has no types. */
  loose: { field: string; text: string } | undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The first top-level field holding a number, if any. */
const numberField = (body: unknown): string | undefined =>
  isObject(body) ? Object.keys(body).find((name) => typeof body[name] === 'number') : undefined;

function otherJson(body: unknown): unknown {
  if (!isObject(body)) return [body, 'oncely-check'];
  const number = numberField(body);
  if (number !== undefined) return { ...body, [number]: (body[number] as number) + 1 };
  const string = Object.keys(body).find((name) => typeof body[name] === 'string');
  if (string !== undefined) return { ...body, [string]: `${body[string]}-2` };
  return { ...body, oncelyCheck: 2 };
}

export function jsonBody(value: unknown): CheckBody {
  const field = numberField(value);
  const reorderable = isObject(value) && Object.keys(value).length >= 2;
  return {
    contentType: 'application/json',
    text: JSON.stringify(value),
    other: JSON.stringify(otherJson(value)),
    reordered: reorderable ? JSON.stringify(Object.fromEntries(Object.entries(value).reverse())) : undefined,
    loose:
      field === undefined
        ? undefined
        : {
            field,
            text: JSON.stringify({ ...(value as object), [field]: String((value as Record<string, unknown>)[field]) }),
          },
  };
}

const NUMBER = /^-?\d+(\.\d+)?$/;

export function formBody(text: string): CheckBody {
  const fields = [...new URLSearchParams(text)];
  const encode = (pairs: [string, string][]) => new URLSearchParams(pairs).toString();
  const number = fields.findIndex(([, value]) => NUMBER.test(value));
  const other: [string, string][] =
    number >= 0
      ? fields.map(([name, value], i) => [name, i === number ? String(Number(value) + 1) : value])
      : fields.length > 0
        ? fields.map(([name, value], i) => [name, i === 0 ? `${value}-2` : value])
        : [['oncely_check', '2']];
  const reversed = encode([...fields].reverse());
  return {
    contentType: 'application/x-www-form-urlencoded',
    text,
    other: encode(other),
    reordered: fields.length >= 2 && reversed !== encode(fields) ? reversed : undefined,
    loose: undefined,
  };
}
