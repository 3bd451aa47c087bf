import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter, RetryBudget, resolveRetryOptions } from '../src/retry/policy.js';

const h = (init: Record<string, string>) => new Headers(init);
const NOW = Date.parse('2026-11-30T12:00:00Z');

describe('parseRetryAfter', () => {
  it('reads delta-seconds, HTTP-dates and retry-after-ms', () => {
    expect(parseRetryAfter(h({ 'retry-after': '2' }), NOW)).toBe(2000);
    expect(parseRetryAfter(h({ 'retry-after': ' 0 ' }), NOW)).toBe(0);
    expect(parseRetryAfter(h({ 'retry-after': 'Mon, 30 Nov 2026 12:00:05 GMT' }), NOW)).toBe(5000);
    expect(parseRetryAfter(h({ 'retry-after-ms': '150', 'retry-after': '9' }), NOW)).toBe(150);
  });

  it('treats a past date as "now"', () => {
    expect(parseRetryAfter(h({ 'retry-after': 'Sun, 29 Nov 2026 12:00:00 GMT' }), NOW)).toBe(0);
  });

  it.each([
    ['-1'],
    ['1.5'],
    ['soon'],
    ['1, 2'],
    ['NaN'],
    ['Infinity'],
    ['2026-11-30T12:00:05Z'],
    ['Mon, 99 Nov 2026 12:00:05 GMT'],
    [''],
  ])('returns undefined for malformed Retry-After %j', (value) => {
    expect(parseRetryAfter(h({ 'retry-after': value }), NOW)).toBeUndefined();
  });

  it('ignores malformed retry-after-ms and falls back to Retry-After', () => {
    expect(parseRetryAfter(h({ 'retry-after-ms': '-5', 'retry-after': '1' }), NOW)).toBe(1000);
    expect(parseRetryAfter(h({ 'retry-after-ms': 'abc' }), NOW)).toBeUndefined();
  });
});

describe('RetryBudget', () => {
  const options = resolveRetryOptions({
    maxAttempts: 4,
    deadline: 10_000,
    baseDelay: 100,
    maxDelay: 1000,
    maxRetryAfter: 3000,
  });

  it('caps huge server hints at maxRetryAfter', () => {
    const budget = new RetryBudget(
      options,
      () => 0,
      () => NOW,
      () => 0.5,
    );
    const hinted = (headers: Headers) => budget.delayAfter(1, { headers, inProgress: false });
    expect(hinted(h({ 'retry-after': '1000000000000' }))).toBe(3000);
    expect(hinted(h({ 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }))).toBe(3000);
  });

  it('uses full-jitter backoff without a hint, capped by maxDelay', () => {
    expect(backoffDelay(1, options, () => 0.999)).toBe(99);
    expect(backoffDelay(3, options, () => 0.5)).toBe(200);
    expect(backoffDelay(50, options, () => 0.999)).toBe(999);
    expect(backoffDelay(2, options, () => 0)).toBe(0);
  });

  it('stops at maxAttempts and never waits past the deadline', () => {
    let now = 0;
    const budget = new RetryBudget(
      options,
      () => now,
      () => NOW,
      () => 0.5,
    );
    expect(budget.allows(3, 100)).toBe(true);
    expect(budget.allows(4, 0)).toBe(false);
    now = 9_000;
    expect(budget.allows(1, 999)).toBe(true);
    expect(budget.allows(1, 1000)).toBe(false);
  });

  it('rejects nonsensical options with a clear message', () => {
    expect(() => resolveRetryOptions({ maxAttempts: 0 })).toThrow(/maxAttempts must be an integer >= 1/);
    expect(() => resolveRetryOptions({ deadline: -1 })).toThrow(/retry.deadline/);
    expect(() => resolveRetryOptions({ timeout: Number.NaN })).toThrow(/retry.timeout/);
  });
});
