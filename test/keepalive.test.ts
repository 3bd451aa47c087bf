/** The keepalive budget (issue 32 §2): UTF-8 bytes counted exactly, 32 KiB of oncely's bodies in flight per page. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KEEPALIVE_BUDGET, reserveKeepalive, utf8Length } from '../src/http/keepalive.js';

describe('keepalive budget', () => {
  it('counts UTF-8 bytes as the browser sends them (lone surrogates as U+FFFD)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(utf8Length(text, 1_000)).toBe(new TextEncoder().encode(text).length);
      }),
    );
    expect(utf8Length('é'.repeat(16_384), KEEPALIVE_BUDGET)).toBe(KEEPALIVE_BUDGET);
    expect(utf8Length('x'.repeat(KEEPALIVE_BUDGET + 1), KEEPALIVE_BUDGET)).toBeGreaterThan(KEEPALIVE_BUDGET);
  });

  it('shares 32 KiB between the calls in flight; a release gives it back once', () => {
    const first = reserveKeepalive(20_000);
    expect(first).toBeDefined();
    expect(reserveKeepalive(KEEPALIVE_BUDGET - 20_000 + 1)).toBeUndefined();
    const second = reserveKeepalive(KEEPALIVE_BUDGET - 20_000);
    expect(second).toBeDefined();
    first!();
    first!();
    second!();
    const whole = reserveKeepalive(KEEPALIVE_BUDGET);
    expect(whole).toBeDefined();
    whole!();
  });
});
