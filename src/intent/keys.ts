import { InvalidKeyError } from '../errors.js';
import { isPrintableAscii } from '../profiles/sf-string.js';
import { intentId } from '../store/record-rules.js';

/**
 * How `client.intent()` gets a key when none is stored yet.
 * - `'v7'`: a time-ordered UUIDv7 (good locality on the server's unique index).
 * - `'v4'`: a random UUIDv4.
 * - `'derived'`: a UUIDv5 over (scope, intent name), the same on every machine: for
 *   workers whose job id already names the intent.
 */
export type KeyKind = 'v7' | 'v4' | 'derived';

/** Longest key accepted (Stripe's limit; the draft sets none). */
export const MAX_KEY_LENGTH = 255;

/** The UUIDv5 namespace of oncely's derived keys (a fixed, random UUID: 5b1e2a2e-7f59-4d41-9c3a-0b6f1c6ad7e1). */
const DERIVED_KEY_NAMESPACE = '5b1e2a2e7f594d419c3a0b6f1c6ad7e1';

/** The first 16 of `bytes` as an RFC 9562 UUID of `version` (its version and variant bits set). */
function uuid(bytes: Uint8Array, version: number): string {
  bytes[6] = (bytes[6]! & 0x0f) | (version << 4);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  let hex = '';
  for (let i = 0; i < 16; i++) hex += (256 + bytes[i]!).toString(16).slice(1);
  return hex.replace(/(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');
}

const rotl = (x: number, n: number): number => (x << n) | (x >>> (32 - n));

/**
 * SHA-1 (RFC 3174), synchronous, for UUIDv5 alone (RFC 9562 fixes the hash; a derived key
 * is no secret). Here rather than uuid's v5, so that no part of uuid ships or loads;
 * test/keys.test.ts checks the keys against uuid's v5.
 */
export function sha1(bytes: Uint8Array): Uint8Array {
  const n = bytes.length;
  // The message, 0x80, zeros to a whole 64-byte block, and the length in bits (64-bit big-endian).
  const padded = new Uint8Array((((n + 8) >> 6) + 1) * 64);
  padded.set(bytes);
  padded[n] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, n / 2 ** 29);
  view.setUint32(padded.length - 4, n * 8);
  // The initial hash (RFC 3174 §6.1): its words 1 and 2 are the complements of 3 and 0.
  const h0 = 0x67452301;
  const h3 = 0x10325476;
  const h = [h0, ~h3, ~h0, h3, 0xc3d2e1f0];
  const w = new Int32Array(80);
  for (let block = 0; block < padded.length; block += 64) {
    for (let t = 0; t < 80; t++)
      w[t] = t < 16 ? view.getInt32(block + t * 4) : rotl(w[t - 3]! ^ w[t - 8]! ^ w[t - 14]! ^ w[t - 16]!, 1);
    let [a, b, c, d, e] = h as [number, number, number, number, number];
    for (let t = 0; t < 80; t++) {
      const s = (t / 20) | 0;
      const f = s === 0 ? (b & c) | (~b & d) : s === 2 ? (b & c) | (b & d) | (c & d) : b ^ c ^ d;
      // K (RFC 3174 §5) is ⌊2^30·√2⌋, ⌊2^30·√3⌋, ⌊2^30·√5⌋, ⌊2^30·√10⌋ for the four rounds.
      const next = (rotl(a, 5) + f + e + ((Math.sqrt([2, 3, 5, 10][s]!) * 2 ** 30) | 0) + w[t]!) | 0;
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = next;
    }
    [a, b, c, d, e].forEach((x, i) => {
      h[i] = (h[i]! + x) | 0;
    });
  }
  h.forEach((x, i) => {
    view.setInt32(i * 4, x);
  });
  return padded.slice(0, 20);
}

/** The last v7 time stamp minted: keys of one process never go back in time when the clock does. */
let lastMs = 0;
/** The 12-bit counter of keys minted in `lastMs` (RFC 9562 §6.2, method 1): they sort in order. */
let sequence = 0;

/**
 * UUIDv7 (RFC 9562 §5.7): 48 bits of Unix time in ms, a 12-bit counter that starts at a
 * random value each millisecond, then 62 random bits. Here rather than uuid's: loading the
 * uuid package for this was most of `import('oncely')`'s time.
 */
function v7(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = ((bytes[6]! << 8) | bytes[7]!) & 0x7ff; // room for 2,048 more in this ms
  } else if (++sequence > 0xfff) {
    lastMs++; // the counter ran out: borrow the next millisecond
    sequence = 0;
  }
  for (let i = 5, t = lastMs; i >= 0; i--, t = Math.floor(t / 256)) bytes[i] = t % 256;
  bytes[6] = sequence >> 8;
  bytes[7] = sequence & 0xff;
  return uuid(bytes, 7);
}

/** Mints a new key. Random bits come from the platform's cryptographic RNG. */
export function mintKey(kind: KeyKind, scope: string, name: string): string {
  if (kind === 'derived') {
    // UUIDv5 (RFC 9562 §5.5): SHA-1 over the namespace's 16 bytes, then the name's UTF-8.
    const namespace = DERIVED_KEY_NAMESPACE.match(/../g)!.map((byte) => Number.parseInt(byte, 16));
    return uuid(sha1(Uint8Array.from([...namespace, ...new TextEncoder().encode(intentId(scope, name))])), 5);
  }
  return kind === 'v4' ? uuid(crypto.getRandomValues(new Uint8Array(16)), 4) : v7();
}

/** Checks a caller-supplied key: 1 to 255 printable ASCII characters, no space at either end. */
export function validateKey(key: unknown, context: { intent?: string; scope?: string } = {}): string {
  if (typeof key !== 'string') throw new InvalidKeyError(`expected a string, got ${typeof key}`, context);
  if (key.length === 0) throw new InvalidKeyError('it is empty', context);
  if (key.length > MAX_KEY_LENGTH)
    throw new InvalidKeyError(`it is ${key.length} characters long; at most ${MAX_KEY_LENGTH} are allowed`, context);
  if (!isPrintableAscii(key))
    throw new InvalidKeyError('it must contain printable ASCII characters only (0x20-0x7E)', context);
  // HTTP trims header values: a bare key (stripe, run() transports) would reach the server as another key.
  if (key.trim() !== key) throw new InvalidKeyError('it starts or ends with a space', context);
  return key;
}
