/**
 * Structured Field strings (RFC 9651 §3.3.3), the encoding the IETF draft prescribes
 * for `Idempotency-Key`: `"…"` with `"` and `\` escaped, characters %x20-7E only.
 */

/** True for a string a Structured Field string can carry: printable ASCII (%x20-7E). */
export const isPrintableAscii = (value: string): boolean => /^[\x20-\x7e]*$/.test(value);

/** Serializes `value` as a Structured Field string. Throws on non-printable-ASCII input. */
export function serializeSfString(value: string): string {
  if (!isPrintableAscii(value)) throw new TypeError('A Structured Field string holds printable ASCII only');
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * Parses a Structured Field string (surrounding whitespace allowed). Returns the value,
 * or `undefined` when `header` is not a single well-formed string.
 */
export function parseSfString(header: string): string | undefined {
  const match = /^[ \t]*"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\\"])*)"[ \t]*$/.exec(header);
  return match ? match[1]!.replace(/\\([\\"])/g, '$1') : undefined;
}
