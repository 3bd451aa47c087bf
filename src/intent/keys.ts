import { v4, v5, v7 } from 'uuid';
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

/** The UUIDv5 namespace of oncely's derived keys (a fixed, random UUID). */
const DERIVED_KEY_NAMESPACE = '5b1e2a2e-7f59-4d41-9c3a-0b6f1c6ad7e1';

/** Mints a new key. Random bits come from the platform's cryptographic RNG (through uuid). */
export function mintKey(kind: KeyKind, scope: string, name: string): string {
  if (kind === 'derived') return v5(intentId(scope, name), DERIVED_KEY_NAMESPACE);
  return kind === 'v4' ? v4() : v7();
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
