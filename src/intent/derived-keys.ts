import { intentId } from '../store/record-rules.js';
import { type KeyDeriver, uuid } from './keys.js';

/** The UUIDv5 namespace of oncely's derived keys (a fixed, random UUID: 5b1e2a2e-7f59-4d41-9c3a-0b6f1c6ad7e1). */
const DERIVED_KEY_NAMESPACE = '5b1e2a2e7f594d419c3a0b6f1c6ad7e1';

/**
 * `createClient({ keys: derivedKeys })`: each intent's key is a UUIDv5 (RFC 9562 §5.5) over
 * its scope and name, the same on every machine, for workers whose job id already names the
 * intent. Imported where used: its SHA-1 is not in a page that mints random keys.
 */
export const derivedKeys: KeyDeriver = {
  derive(scope, name) {
    // SHA-1 over the namespace's 16 bytes, then the name's UTF-8.
    const namespace = DERIVED_KEY_NAMESPACE.match(/../g)!.map((byte) => Number.parseInt(byte, 16));
    return uuid(sha1(Uint8Array.from([...namespace, ...new TextEncoder().encode(intentId(scope, name))])), 5);
  },
};

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
