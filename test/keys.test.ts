import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { v5, validate, version } from 'uuid';
import { describe, expect, it } from 'vitest';
import { InvalidKeyError } from '../src/errors.js';
import { canonicalJson } from '../src/intent/canonical-json.js';
import { derivedKeys, sha1 } from '../src/intent/derived-keys.js';
import { changedParts, fingerprint } from '../src/intent/fingerprint.js';
import { mintKey, validateKey } from '../src/intent/keys.js';
import { classifyStatus, ietf } from '../src/profiles/profiles.js';
import { parseSfString, serializeSfString } from '../src/profiles/sf-string.js';
import { stripe } from '../src/profiles/stripe.js';
import { intentId } from '../src/store/record-rules.js';

describe('keys', () => {
  it('mints v7 keys whose first 48 bits are the time in ms, and valid v4 keys', () => {
    const before = Date.now();
    const key = mintKey('v7', 's', 'n');
    const ms = Number.parseInt(key.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now());
    for (const kind of ['v7', 'v4'] as const) {
      const minted = mintKey(kind, 's', 'n');
      expect(validate(minted)).toBe(true);
      expect(version(minted)).toBe(kind === 'v7' ? 7 : 4);
    }
  });

  it('mints UUIDv7 by default shape, v4 on request, and derives stable v5 keys', () => {
    expect(mintKey('v7', 's', 'n')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(mintKey('v4', 's', 'n')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);
    expect(mintKey('v7', 's', 'n')).not.toBe(mintKey('v7', 's', 'n'));
    const derived = mintKey(derivedKeys, 'acct_1', 'job:42');
    expect(derived).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5/);
    expect(mintKey(derivedKeys, 'acct_1', 'job:42')).toBe(derived);
    expect(mintKey(derivedKeys, 'acct_2', 'job:42')).not.toBe(derived);
  });

  it("derives exactly uuid's v5 over the intent id (the derived keys of earlier releases)", () => {
    const namespace = '5b1e2a2e-7f59-4d41-9c3a-0b6f1c6ad7e1';
    expect(mintKey(derivedKeys, 'acct_1', 'job:42')).toBe(v5(intentId('acct_1', 'job:42'), namespace));
    // Names across SHA-1's block boundaries (55/56/64 bytes) and beyond one block, non-ASCII too.
    for (const length of [0, 1, 40, 41, 48, 49, 55, 56, 64, 100, 1024])
      for (const unit of ['x', 'é', '😀'])
        expect(mintKey(derivedKeys, 's', unit.repeat(length))).toBe(v5(intentId('s', unit.repeat(length)), namespace));
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary', minLength: 1 }), (scope, name) => {
        expect(mintKey(derivedKeys, scope, name)).toBe(v5(intentId(scope, name), namespace));
      }),
    );
  });

  it('hashes like node:crypto SHA-1 at every length around the block boundaries', () => {
    expect(Buffer.from(sha1(new TextEncoder().encode('abc'))).toString('hex')).toBe(
      'a9993e364706816aba3e25717850c26c9cd0d89d',
    );
    for (let length = 0; length < 300; length++) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 131 + length) & 0xff);
      expect(Buffer.from(sha1(bytes)).toString('hex')).toBe(createHash('sha1').update(bytes).digest('hex'));
    }
  });

  it('mints distinct, valid v4 keys', () => {
    const keys = new Set(Array.from({ length: 200 }, () => mintKey('v4', 's', 'n')));
    expect(keys.size).toBe(200);
    for (const key of keys) {
      expect(validate(key)).toBe(true);
      expect(version(key)).toBe(4);
    }
  });

  it.each([
    ['', /empty/],
    ['x'.repeat(256), /256 characters/],
    ['café', /printable ASCII/],
    ['tab\there', /printable ASCII/],
    [42, /expected a string/],
  ])('rejects the caller key %j with InvalidKeyError', (key, message) => {
    expect(() => validateKey(key, { intent: 'i' })).toThrow(InvalidKeyError);
    expect(() => validateKey(key)).toThrow(message);
  });

  it('accepts quotes and backslashes, which the sf-string encoding escapes', () => {
    const key = 'a"b\\c';
    expect(validateKey(key)).toBe(key);
    expect(serializeSfString(key)).toBe('"a\\"b\\\\c"');
    expect(parseSfString(serializeSfString(key))).toBe(key);
  });

  it('parses only well-formed Structured Field strings', () => {
    expect(parseSfString(' "abc" ')).toBe('abc');
    expect(parseSfString('abc')).toBeUndefined();
    expect(parseSfString('"a"b"')).toBeUndefined();
    expect(parseSfString('"a\\x"')).toBeUndefined();
  });
});

describe('fingerprint', () => {
  const parts = { method: 'POST', path: 'pay', body: canonicalJson({ a: 1, b: 2 }) };
  it('binds method, path and body; says which part changed', async () => {
    const base = await fingerprint(parts);
    expect(await fingerprint({ ...parts, body: canonicalJson({ b: 2, a: 1 }) })).toBe(base);
    expect(base).toMatch(/^v2\.[0-9a-f]{64}\.[0-9a-f]{8}\.[0-9a-f]{8}\.[0-9a-f]{8}$/);
    expect(changedParts(base, await fingerprint({ ...parts, body: canonicalJson({ a: 1, b: 3 }) }))).toEqual(['body']);
    expect(changedParts(base, await fingerprint({ ...parts, method: 'PATCH' }))).toEqual(['method']);
    expect(changedParts(base, await fingerprint({ ...parts, path: 'pay2?x=1' }))).toEqual(['path']);
    expect(changedParts(base, base)).toEqual([]);
  });

  it('a stored fingerprint of another form (0.1.0 never shipped) is a mismatch that cannot tell what changed', async () => {
    const other = 'a'.repeat(64);
    expect(changedParts(other, await fingerprint(parts))).toEqual(['method', 'path', 'body']);
  });
});

describe('profiles', () => {
  const answer = (status: number, body: unknown = {}, headers: Record<string, string> = {}) => ({
    status,
    body,
    headers: new Headers(headers),
  });

  it('ietf: 409 in progress, 422 mismatch, transient retryable, other 4xx failed', () => {
    expect([200, 201, 409, 422, 408, 429, 500, 503, 400, 401, 404, 501].map(classifyStatus)).toEqual([
      'success',
      'success',
      'in_progress',
      'mismatch',
      'retryable',
      'retryable',
      'retryable',
      'retryable',
      'failed',
      'failed',
      'failed',
      'failed',
    ]);
    expect(ietf.encodeKey('k1')).toBe('"k1"');
  });

  it('stripe: bare key, 400 idempotency_error is a mismatch, Stripe-Should-Retry wins', () => {
    expect(stripe.encodeKey('k1')).toBe('k1');
    expect(stripe.classify(answer(400, { error: { type: 'idempotency_error' } }))).toBe('mismatch');
    expect(stripe.classify(answer(400, { error: { type: 'invalid_request_error' } }))).toBe('failed');
    expect(stripe.classify(answer(409, { error: { code: 'idempotency_key_in_use' } }))).toBe('in_progress');
    expect(stripe.classify(answer(500, {}, { 'stripe-should-retry': 'false' }))).toBe('failed');
    expect(stripe.classify(answer(400, {}, { 'stripe-should-retry': 'true' }))).toBe('retryable');
    expect(stripe.classify(answer(422))).toBe('failed');
  });
});
