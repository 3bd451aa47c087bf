/**
 * SHA-256, synchronous, for request fingerprints. Node's `crypto` where the runtime has one
 * (through `process.getBuiltinModule`, so browser bundles import nothing); elsewhere FIPS
 * 180-4 in plain JavaScript. Web Crypto is not used: its digest answers in a later task,
 * and Chromium holds such tasks after a click until the next frame, delaying the request.
 */

interface NodeCrypto {
  createHash(algorithm: 'sha256'): { update(text: string): { digest(encoding: 'hex'): string } };
  /** One-shot (Node 21.7+): no Hash object per digest. */
  hash?(algorithm: 'sha256', text: string, encoding: 'hex'): string;
}

let nodeCrypto: NodeCrypto | null | undefined;

function nodeHash(): NodeCrypto | null {
  if (nodeCrypto === undefined) {
    const process = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
    const module = process?.getBuiltinModule?.('node:crypto') as Partial<NodeCrypto> | undefined;
    nodeCrypto = typeof module?.createHash === 'function' ? (module as NodeCrypto) : null;
  }
  return nodeCrypto;
}

/** Round constants and initial hash: fractional parts of the cube and square roots of the first primes. */
let K: Int32Array | undefined;
let H: Int32Array;

function constants(): Int32Array {
  if (!K) {
    K = new Int32Array(64);
    H = new Int32Array(8);
    for (let n = 2, i = 0; i < 64; n++) {
      let prime = true;
      for (let d = 2; d * d <= n; d++) if (n % d === 0) prime = false;
      if (!prime) continue;
      if (i < 8) H[i] = (Math.sqrt(n) % 1) * 2 ** 32;
      K[i++] = (Math.cbrt(n) % 1) * 2 ** 32;
    }
  }
  return K;
}

/**
 * Buffers reused by every digest (it runs to its end without calling out): a request's
 * body is hashed without allocating, which a click's request would wait for.
 */
const scratch = { words: new Int32Array(1024), w: new Int32Array(64), h: new Int32Array(8) };

/** Zeroed room for a message of `length` bytes as big-endian 32-bit words, with its padding (FIPS 180-4). */
function wordsFor(length: number): Int32Array {
  const count = ((length + 72) >> 6) << 4;
  if (count > scratch.words.length) return new Int32Array(count);
  scratch.words.fill(0, 0, count);
  return scratch.words;
}

/** SHA-256 of `bytes`, as 64 lowercase hex digits. */
export function sha256Bytes(bytes: Uint8Array): string {
  const length = bytes.length;
  const words = wordsFor(length);
  for (let i = 0; i < length; i++) words[i >> 2]! |= bytes[i]! << (24 - (i & 3) * 8);
  return digest(words, length);
}

const encoder = new TextEncoder();

/**
 * SHA-256 of the UTF-8 bytes of `text` in plain JavaScript. An ASCII string (a request's
 * JSON, mostly) is read as it is, its code units being its bytes; any other goes through
 * TextEncoder.
 */
export function sha256Text(text: string): string {
  const length = text.length;
  const words = wordsFor(length);
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i);
    if (unit > 0x7f) return sha256Bytes(encoder.encode(text));
    words[i >> 2]! |= unit << (24 - (i & 3) * 8);
  }
  return digest(words, length);
}

/** The digest of a message of `length` bytes already in `words`. */
function digest(words: Int32Array, length: number): string {
  const k = constants();
  const count = ((length + 72) >> 6) << 4;
  words[length >> 2]! |= 0x80 << (24 - (length & 3) * 8);
  words[count - 1] = length * 8;
  words[count - 2] = length / 2 ** 29;
  const { h, w } = scratch;
  h.set(H);
  for (let block = 0; block < count; block += 16) {
    for (let i = 0; i < 16; i++) w[i] = words[block + i]!;
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15]!;
      const y = w[i - 2]!;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = w[i - 16]! + s0 + w[i - 7]! + s1;
    }
    let a = h[0]!;
    let b = h[1]!;
    let c = h[2]!;
    let d = h[3]!;
    let e = h[4]!;
    let f = h[5]!;
    let g = h[6]!;
    let hh = h[7]!;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (hh + S1 + ((e & f) ^ (~e & g)) + k[i]! + w[i]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0]! += a;
    h[1]! += b;
    h[2]! += c;
    h[3]! += d;
    h[4]! += e;
    h[5]! += f;
    h[6]! += g;
    h[7]! += hh;
  }
  let hex = '';
  for (let i = 0; i < 8; i++) hex += (h[i]! >>> 0).toString(16).padStart(8, '0');
  return hex;
}

/** Hex SHA-256 of a UTF-8 string. */
export function sha256(text: string): string {
  const node = nodeHash();
  if (!node) return sha256Text(text);
  // The one-shot form is faster for a request's body, slower for megabytes (it copies them first).
  return node.hash && text.length < 65_536
    ? node.hash('sha256', text, 'hex')
    : node.createHash('sha256').update(text).digest('hex');
}
