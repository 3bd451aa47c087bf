/**
 * RFC 8785 (JSON Canonicalization Scheme): object members sorted by their UTF-16 code
 * units at every depth, numbers in ECMAScript's shortest form, no whitespace. Written out
 * by hand, because re-building objects reorders integer-like keys and drops own
 * `__proto__` members. Throws a `TypeError` naming the path of what JSON cannot carry.
 */
export function canonicalJson(value: unknown): string {
  let out: string | undefined;
  try {
    out = write(value, new Set());
  } catch (error) {
    if (!(error instanceof Unsendable)) throw error;
    const path = error.at.map((step) => (typeof step === 'number' ? `[${step}]` : `.${step}`)).join('');
    throw new TypeError(`$${path} ${error.what}`);
  }
  if (out === undefined) throw new TypeError('$ is not a JSON value');
  return out;
}

/** What JSON cannot carry; its path is filled in on the way out (built only when thrown). */
class Unsendable {
  readonly at: (string | number)[] = [];
  constructor(readonly what: string) {}
}

/** `error`, with `at` put in front of its path if it is Unsendable: thrown on by each level it passes. */
function within(error: unknown, at: string | number): unknown {
  if (error instanceof Unsendable) error.at.unshift(at);
  return error;
}

function write(input: unknown, seen: Set<object>): string | undefined {
  let value = input;
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
    value = (value as { toJSON(key: string): unknown }).toJSON('');
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Unsendable(`is ${value}, which JSON cannot carry`);
      return JSON.stringify(value);
    case 'bigint':
      throw new Unsendable('is a BigInt, which JSON cannot carry; send it as a string');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  if (seen.has(object)) throw new Unsendable('refers back to itself (a cycle)');
  seen.add(object);
  let out: string;
  if (Array.isArray(object)) {
    // Holes too: a sparse array's holes are null, as JSON.stringify writes them.
    const items: string[] = [];
    for (let i = 0; i < object.length; i++) {
      try {
        items.push(write(object[i], seen) ?? 'null');
      } catch (error) {
        throw within(error, i);
      }
    }
    out = `[${items.join(',')}]`;
  } else {
    const members: string[] = [];
    for (const name of Object.keys(object).sort()) {
      let member: string | undefined;
      try {
        member = write((object as Record<string, unknown>)[name], seen);
      } catch (error) {
        throw within(error, name);
      }
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
    }
    out = `{${members.join(',')}}`;
  }
  seen.delete(object);
  return out;
}
