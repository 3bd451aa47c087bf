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

/** The UUIDv5 namespace of oncely's derived keys (a fixed, random UUID), as bytes. */
const DERIVED_KEY_NAMESPACE = '5b1e2a2e7f594d419c3a0b6f1c6ad7e1'.match(/../g)!.map((h) => Number.parseInt(h, 16));

/** Formats 16 bytes as a UUID with the given version (RFC 9562: version nibble, variant 10). */
function uuid(bytes: ArrayLike<number>, version: number): string {
  const hex = Array.from({ length: 16 }, (_, i) => {
    const b = i === 6 ? (bytes[i]! & 0x0f) | (version << 4) : i === 8 ? (bytes[i]! & 0x3f) | 0x80 : bytes[i]!;
    return b.toString(16).padStart(2, '0');
  }).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** SHA-1 (FIPS 180-4), synchronous because key minting is; only UUIDv5 needs it. */
function sha1(data: Uint8Array): Uint8Array {
  const length = ((data.length + 8) >> 6) + 1;
  const words = new Uint32Array(length * 16);
  for (let i = 0; i < data.length; i++) words[i >> 2]! |= data[i]! << (24 - (i % 4) * 8);
  words[data.length >> 2]! |= 0x80 << (24 - (data.length % 4) * 8);
  words[length * 16 - 1] = data.length * 8;
  const h = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const w = new Uint32Array(80);
  for (let block = 0; block < words.length; block += 16) {
    for (let t = 0; t < 80; t++) {
      const x = t < 16 ? words[block + t]! : w[t - 3]! ^ w[t - 8]! ^ w[t - 14]! ^ w[t - 16]!;
      w[t] = t < 16 ? x : (x << 1) | (x >>> 31);
    }
    let [a, b, c, d, e] = h as [number, number, number, number, number];
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? (b & c) | (~b & d) : t < 40 || t >= 60 ? b ^ c ^ d : (b & c) | (b & d) | (c & d);
      const k = [0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xca62c1d6][(t / 20) | 0]!;
      const next = (((a << 5) | (a >>> 27)) + f + e + k + w[t]!) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    h[0] = (h[0]! + a) | 0;
    h[1] = (h[1]! + b) | 0;
    h[2] = (h[2]! + c) | 0;
    h[3] = (h[3]! + d) | 0;
    h[4] = (h[4]! + e) | 0;
  }
  return new Uint8Array(h.flatMap((x) => [x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255]));
}

/** The last v7 time and counter: keys minted in one millisecond stay in order (RFC 9562, method 1). */
const last = { ms: 0, seq: 0 };

/**
 * UUIDv7 fields over random bytes: 48 bits of Unix time in ms, then a 26-bit counter (the 4
 * bits after the version, 8, and the 6 after the variant) that starts random in its lower
 * half each millisecond and carries into the time when full; the rest stays random.
 */
function v7Fields(bytes: Uint8Array): void {
  const now = Date.now();
  if (now > last.ms) {
    last.ms = now;
    last.seq = (bytes[9]! << 17) | (bytes[10]! << 9) | (bytes[11]! << 1);
  } else if (++last.seq >= 2 ** 26) {
    last.ms++;
    last.seq = 0;
  }
  for (let i = 0; i < 6; i++) bytes[i] = last.ms / 2 ** (40 - 8 * i);
  bytes[6] = last.seq >>> 22;
  bytes[7] = last.seq >>> 14;
  bytes[8] = (last.seq >>> 8) & 0x3f;
  bytes[9] = last.seq;
}

/** Mints a new key. Random bits come from the platform's cryptographic RNG. */
export function mintKey(kind: KeyKind, scope: string, name: string): string {
  if (kind !== 'derived') {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    if (kind === 'v7') v7Fields(bytes);
    return uuid(bytes, kind === 'v7' ? 7 : 4);
  }
  const name_ = new TextEncoder().encode(intentId(scope, name));
  return uuid(sha1(new Uint8Array([...DERIVED_KEY_NAMESPACE, ...name_])), 5);
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
