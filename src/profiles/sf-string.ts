/**
 * Structured Field strings (RFC 9651 §3.3.3), the encoding draft-ietf-httpapi-idempotency-key-header
 * prescribes for `Idempotency-Key`: `"8e03978e-40d5-43e8-bc93-6894a57f9324"`. Printable
 * ASCII (%x20-7E) only; `"` and `\\` are escaped with a backslash. The client serializes
 * keys with it, the mock server parses them.
 */

const isPrintableAsciiCode = (code: number): boolean => code >= 0x20 && code <= 0x7e;

/** True for a string a Structured Field string can carry: printable ASCII (%x20-7E). */
export const isPrintableAscii = (value: string): boolean => /^[\x20-\x7e]*$/.test(value);

/**
 * Serialize a string as a Structured Field String.
 *
 * @throws TypeError when `value` holds a character outside %x20-7E (no Unicode, no
 * control characters: a Structured Field String cannot carry them).
 *
 * @example
 * serializeSfString('abc');      // '"abc"'
 * serializeSfString('a"b\\c');   // '"a\\"b\\\\c"'
 */
export function serializeSfString(value: string): string {
  const i = value.search(/[^\x20-\x7e]/);
  if (i >= 0)
    throw new TypeError(
      `Cannot serialize as a Structured Field String: character U+${value.charCodeAt(i).toString(16).padStart(4, '0').toUpperCase()} at index ${i} is outside %x20-7E.`,
    );
  return `"${value.replace(/["\\]/g, '\\$&')}"`;
}

/**
 * Parse a header value holding one Structured Field String. Leading and trailing
 * spaces are ignored (RFC 8941 §4.2); anything else around the string — parameters
 * included — makes the value invalid.
 *
 * @returns the decoded string, or `undefined` when `value` is not a valid
 * Structured Field String (unquoted, unterminated, a bad escape, a character outside
 * %x20-7E, trailing content).
 *
 * @example
 * parseSfString('"abc"');        // 'abc'
 * parseSfString('"a\\"b"');      // 'a"b'
 * parseSfString('abc');          // undefined (bare, not a Structured Field String)
 */
export function parseSfString(value: string): string | undefined {
  const input = value.replace(/^ +| +$/g, '');
  if (input.length < 2 || input[0] !== '"') return undefined;
  let out = '';
  for (let i = 1; i < input.length; i++) {
    const char = input[i]!;
    if (!isPrintableAsciiCode(char.charCodeAt(0))) return undefined;
    if (char === '\\') {
      const next = input[++i];
      if (next !== '"' && next !== '\\') return undefined;
      out += next;
    } else if (char === '"') {
      return i === input.length - 1 ? out : undefined;
    } else {
      out += char;
    }
  }
  return undefined;
}
