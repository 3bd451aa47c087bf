import { InvalidKeyError } from '../errors.js';
import { isPrintableAscii } from '../profiles/sf-string.js';

/** Derives an intent's key from its scope and name, the same on every machine (`derivedKeys`). */
export interface KeyDeriver {
  derive(scope: string, name: string): string;
}

/**
 * How `client.intent()` gets a key when none is stored yet.
 * - `'v7'`: a time-ordered UUIDv7 (good locality on the server's unique index).
 * - `'v4'`: a random UUIDv4.
 * - `derivedKeys` (imported from `oncely`): a UUIDv5 over (scope, intent name), the same on
 *   every machine: for workers whose job id already names the intent.
 */
export type KeyKind = 'v7' | 'v4' | KeyDeriver;

/** Longest key accepted (Stripe's limit; the draft sets none). */
export const MAX_KEY_LENGTH = 255;

/** Two hex digits of each byte value. */
const HEX = Array.from({ length: 256 }, (_, byte) => (256 + byte).toString(16).slice(1));

/** The first 16 of `bytes` as an RFC 9562 UUID of `version` (its version and variant bits set). */
export function uuid(bytes: Uint8Array, version: number): string {
  bytes[6] = (bytes[6]! & 0x0f) | (version << 4);
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  let text = '';
  for (let i = 0; i < 16; i++) text += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + HEX[bytes[i]!];
  return text;
}

/**
 * Random bytes drawn from the platform's cryptographic RNG 4 KiB at a time: each draw
 * crosses into the runtime (tens of µs on a busy VM), once per 256 keys instead of per key.
 * Every byte is handed out once, as a view of the pool that the key is made of at once.
 */
const pool = new Uint8Array(4096);
let drawn = pool.length;
function random16(): Uint8Array {
  if (drawn === pool.length) {
    crypto.getRandomValues(pool);
    drawn = 0;
  }
  drawn += 16;
  return pool.subarray(drawn - 16, drawn);
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
  const bytes = random16();
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
  if (typeof kind === 'object') return validateKey(kind.derive(scope, name), { intent: name, scope });
  return kind === 'v4' ? uuid(random16(), 4) : v7();
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
