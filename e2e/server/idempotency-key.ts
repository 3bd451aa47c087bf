/**
 * Reads the `Idempotency-Key` header: a Structured Field string (`"…"`, RFC 9651
 * §3.3.3) as draft-ietf-httpapi-idempotency-key-header prescribes, or a bare token as
 * Stripe and many clients send it.
 */

export const MAX_KEY_LENGTH = 255;

export type KeyParse = { ok: true; key: string } | { ok: false; missing: boolean; reason: string };

const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\\"])*)"$/;
/** A bare key: visible ASCII without quote, comma or backslash. */
const BARE = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]+$/;

export function parseIdempotencyKey(header: string | string[] | undefined): KeyParse {
  if (header === undefined) return { ok: false, missing: true, reason: 'The Idempotency-Key header is required.' };
  if (Array.isArray(header)) return { ok: false, missing: false, reason: 'Send exactly one Idempotency-Key.' };
  const value = header.trim();
  if (value === '') return { ok: false, missing: true, reason: 'The Idempotency-Key header is empty.' };
  let key: string;
  const quoted = SF_STRING.exec(value);
  if (quoted) key = quoted[1]!.replace(/\\([\\"])/g, '$1');
  else if (value.startsWith('"'))
    return { ok: false, missing: false, reason: 'Idempotency-Key is not a well-formed Structured Field string.' };
  else if (BARE.test(value)) key = value;
  else return { ok: false, missing: false, reason: 'Idempotency-Key holds characters a key may not contain.' };
  if (key.length === 0) return { ok: false, missing: false, reason: 'Idempotency-Key is an empty string.' };
  if (key.length > MAX_KEY_LENGTH)
    return { ok: false, missing: false, reason: `Idempotency-Key is longer than ${MAX_KEY_LENGTH} characters.` };
  return { ok: true, key };
}
