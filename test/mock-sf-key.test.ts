import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { canonicalJson } from '../src/intent/canonical-json.js';
import { requestFingerprint } from '../src/mock/fingerprint.js';
import { readKeyHeader } from '../src/mock/key-header.js';
import { parseSfString, serializeSfString } from '../src/profiles/sf-string.js';

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) });

describe('Structured Field String', () => {
  test('serializes with quotes and escapes " and \\ only', () => {
    expect(serializeSfString('abc')).toBe('"abc"');
    expect(serializeSfString('a"b\\c d')).toBe('"a\\"b\\\\c d"');
    expect(serializeSfString('')).toBe('""');
  });

  test('refuses characters outside %x20-7E', () => {
    for (const bad of ['é', 'tab\t', 'line\n', '\u007f', '😀']) {
      expect(() => serializeSfString(bad), JSON.stringify(bad)).toThrow(TypeError);
    }
  });

  test('parse inverts serialize for every printable ASCII string', () => {
    fc.assert(fc.property(printable, (value) => parseSfString(serializeSfString(value)) === value));
  });

  test('parses escapes and surrounding spaces', () => {
    expect(parseSfString('"a\\"b\\\\c"')).toBe('a"b\\c');
    expect(parseSfString('  "abc"  ')).toBe('abc');
  });

  test.each([
    ['bare', 'abc'],
    ['unterminated', '"abc'],
    ['bad escape', '"a\\bc"'],
    ['trailing backslash', '"abc\\"'],
    ['trailing content', '"abc"x'],
    ['parameters', '"abc";a=1'],
    ['two strings', '"a" "b"'],
    ['non-ASCII', '"é"'],
    ['tab inside', '"a\tb"'],
    ['empty input', ''],
  ])('rejects %s', (_label, value) => {
    expect(parseSfString(value)).toBeUndefined();
  });
});

describe('readKeyHeader', () => {
  test("'sf-string' decodes quoted keys and rejects bare ones", () => {
    expect(readKeyHeader('"k-1"', 'sf-string', 255)).toEqual({ ok: true, key: 'k-1' });
    expect(readKeyHeader('k-1', 'sf-string', 255).ok).toBe(false);
    expect(readKeyHeader('""', 'sf-string', 255).ok).toBe(false);
  });

  test("'bare' keeps the raw value, quotes included", () => {
    expect(readKeyHeader('k-1', 'bare', 255)).toEqual({ ok: true, key: 'k-1' });
    expect(readKeyHeader('"k-1"', 'bare', 255)).toEqual({ ok: true, key: '"k-1"' });
    expect(readKeyHeader('  ', 'bare', 255).ok).toBe(false);
  });

  test("'any' decodes a valid string and otherwise takes the value bare", () => {
    expect(readKeyHeader('"k-1"', 'any', 255)).toEqual({ ok: true, key: 'k-1' });
    expect(readKeyHeader('k-1', 'any', 255)).toEqual({ ok: true, key: 'k-1' });
    expect(readKeyHeader('"k-1', 'any', 255)).toEqual({ ok: true, key: '"k-1' });
  });

  test('enforces the length limit on the decoded key', () => {
    expect(readKeyHeader(`"${'x'.repeat(10)}"`, 'sf-string', 10).ok).toBe(true);
    expect(readKeyHeader(`"${'x'.repeat(11)}"`, 'sf-string', 10).ok).toBe(false);
  });
});

describe('request fingerprint', () => {
  const url = new URL('https://api.test/payments?x=1');

  test('canonical JSON sorts keys at every depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}',
    );
  });

  test('equal for the same JSON in another layout, different for another method, path, query or body', async () => {
    const base = await requestFingerprint('POST', url, '{"amount":100,"currency":"eur"}');
    expect(base).toMatch(/^v2\.[0-9a-f]{64}\.[0-9a-f]{8}\.[0-9a-f]{8}\.[0-9a-f]{8}$/); // the client's format
    expect(await requestFingerprint('post', url, '{ "currency": "eur",\n "amount": 100 }')).toBe(base);
    expect(await requestFingerprint('PATCH', url, '{"amount":100,"currency":"eur"}')).not.toBe(base);
    expect(
      await requestFingerprint('POST', new URL('https://api.test/refunds?x=1'), '{"amount":100,"currency":"eur"}'),
    ).not.toBe(base);
    expect(
      await requestFingerprint('POST', new URL('https://api.test/payments?x=2'), '{"amount":100,"currency":"eur"}'),
    ).not.toBe(base);
    expect(await requestFingerprint('POST', url, '{"amount":101,"currency":"eur"}')).not.toBe(base);
  });

  test('a body that is not JSON counts byte for byte', async () => {
    const a = await requestFingerprint('POST', url, 'amount=100&currency=eur');
    expect(await requestFingerprint('POST', url, 'currency=eur&amount=100')).not.toBe(a);
  });
});
