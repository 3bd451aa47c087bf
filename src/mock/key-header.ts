/** Reading the idempotency key from its header, per the server's `keyFormat`. */

import { parseSfString } from '../profiles/sf-string.js';
import type { KeyFormat } from './options.js';

export type KeyReading = { ok: true; key: string } | { ok: false; reason: string };

const PRINTABLE = /^[\x20-\x7e]+$/;

/**
 * Decode a raw header value into a key, or say why it is invalid.
 *
 * @example
 * readKeyHeader('"abc"', 'sf-string', 255); // { ok: true, key: 'abc' }
 * readKeyHeader('abc', 'sf-string', 255);   // { ok: false, reason: '…' }
 * readKeyHeader('abc', 'bare', 255);        // { ok: true, key: 'abc' }
 */
export function readKeyHeader(raw: string, format: KeyFormat, maxKeyLength: number): KeyReading {
  const value = raw.trim();
  let key: string | undefined;
  if (format === 'bare') {
    key = value;
  } else {
    key = parseSfString(value);
    if (key === undefined && format === 'sf-string') {
      return {
        ok: false,
        reason: 'The key must be a Structured Field String: printable ASCII in double quotes, e.g. "8e03978e".',
      };
    }
    key ??= value;
  }
  if (key === '') return { ok: false, reason: 'The key is empty.' };
  if (!PRINTABLE.test(key)) return { ok: false, reason: 'The key must be printable ASCII (%x20-7E).' };
  if (key.length > maxKeyLength) {
    return { ok: false, reason: `The key is ${key.length} characters long; at most ${maxKeyLength} are accepted.` };
  }
  return { ok: true, key };
}
