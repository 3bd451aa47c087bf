/**
 * RFC 8785 (JSON Canonicalization Scheme): object members sorted by their UTF-16 code
 * units at every depth, numbers in ECMAScript's shortest form, no whitespace. Written out
 * by hand, because re-building objects reorders integer-like keys and drops own
 * `__proto__` members. Throws a `TypeError` naming the path of what JSON cannot carry.
 */
export function canonicalJson(value: unknown): string {
  const out = write(value, '$', new Set());
  if (out === undefined) throw new TypeError('$ is not a JSON value');
  return out;
}

function write(input: unknown, path: string, seen: Set<object>): string | undefined {
  let value = input;
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
    value = (value as { toJSON(key: string): unknown }).toJSON('');
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`${path} is ${value}, which JSON cannot carry`);
      return JSON.stringify(value);
    case 'bigint':
      throw new TypeError(`${path} is a BigInt, which JSON cannot carry; send it as a string`);
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  if (seen.has(object)) throw new TypeError(`${path} refers back to itself (a cycle)`);
  seen.add(object);
  let out: string;
  if (Array.isArray(object)) {
    // Array.from visits holes too: a sparse array's holes are null, as JSON.stringify writes them.
    out = `[${Array.from(object, (item, i) => write(item, `${path}[${i}]`, seen) ?? 'null').join(',')}]`;
  } else {
    const members: string[] = [];
    for (const name of Object.keys(object).sort()) {
      const member = write((object as Record<string, unknown>)[name], `${path}.${name}`, seen);
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
    }
    out = `{${members.join(',')}}`;
  }
  seen.delete(object);
  return out;
}
