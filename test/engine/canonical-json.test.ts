/** RFC 8785 (JCS) canonical JSON, with the RFC's own vectors. */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/intent/canonical-json.js';

describe('RFC 8785 canonical JSON', () => {
  it('the RFC §3.2.2 example: literals, numbers in ES6 form, string escapes', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('the RFC §3.2.3 sorting example: by UTF-16 code units', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it.each([
    [0, '0'],
    [-0, '0'],
    [1e21, '1e+21'],
    [1e-7, '1e-7'],
    [9007199254740992, '9007199254740992'],
    [295147905179352830000, '295147905179352830000'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
  ])('number %s is %s (RFC Appendix B)', (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  it('sorts integer-like keys as strings, which object key order does not', () => {
    expect(canonicalJson({ 10: 'a', 9: 'b', 1: 'c', b: 1, a: 2 })).toBe('{"1":"c","10":"a","9":"b","a":2,"b":1}');
  });

  it('keeps an own __proto__ member', () => {
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":{"x":1}}'))).toBe('{"__proto__":{"x":1},"b":1}');
  });

  it('follows JSON for undefined, functions, toJSON and nested arrays', () => {
    expect(canonicalJson({ a: undefined, b: () => 1, c: [undefined, 1], d: new Date(0) })).toBe(
      '{"c":[null,1],"d":"1970-01-01T00:00:00.000Z"}',
    );
  });

  it('refuses what JSON cannot carry, naming where', () => {
    expect(() => canonicalJson({ amount: 10n })).toThrow(/\$\.amount is a BigInt/);
    expect(() => canonicalJson({ a: [Number.NaN] })).toThrow(/\$\.a\[0\] is NaN/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
  });
});
