/**
 * Bad Retry-After and retry-after-ms values: garbage, negative, NaN, 1e12, past and
 * far-future dates, several values, odd casing. Whatever the server says, a wait is
 * finite, at least 0 and at most `maxRetryAfter` (or `maxDelay` for a backoff), the call
 * ends within its deadline, and the key is the same on every attempt.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_RETRY, parseRetryAfter, RetryBudget } from '../src/retry/policy.js';
import { expectTypedOutcome, headerSafe, observedClient, scriptedFetch, settled } from './chaos/harness.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => {
  restore();
  console.log(`fuzz-retry-after: ${tried.values} Retry-After values tried`);
});

const tried = { values: 0 };

const NOW = Date.parse('2026-11-30T12:00:00Z');
const httpDate = (ms: number) => {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? 'Tue, 31 Dec 99999 23:59:59 GMT' : date.toUTCString();
};

/** Values of one Retry-After-like header: the interesting ones, and anything printable. */
const retryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-0',
    '-1',
    '1',
    '1.5',
    '+3',
    '1e12',
    '1e400',
    'NaN',
    'Infinity',
    '-Infinity',
    '99999999999999999999',
    '9'.repeat(400),
    '0x10',
    '1_000',
    '\u00b2',
    'soon',
    'null',
    '"5"',
    '5, 7',
    '5,5',
    '3 4',
    'Thu, 01 Jan 1970 00:00:00 GMT',
    'Mon, 30 Nov 2026 12:00:00 GMT',
    'Wed, 31 Dec 9999 23:59:59 GMT',
    'Thu, 99 Foo 9999 99:99:99 GMT',
    'Mon, 30 Nov 2026 12:00:05 PST',
    '2026-11-30T12:00:05Z',
    'Monday, 30-Nov-26 12:00:05 GMT',
    'Mon Nov 30 12:00:05 2026',
  ),
  fc.integer({ min: -1e6, max: 1e6 }).map(String),
  fc.double({ noNaN: false }).map(String),
  fc.integer({ min: -1e13, max: 1e13 }).map((offset) => httpDate(NOW + offset)),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }).map(headerSafe),
  fc.array(fc.integer({ min: -5, max: 100 }).map(String), { minLength: 2, maxLength: 4 }).map((v) => v.join(', ')),
);

const headerName = fc.constantFrom(
  'Retry-After',
  'retry-after',
  'RETRY-AFTER',
  'rEtRy-AfTeR',
  'retry-after-ms',
  'Retry-After-Ms',
);

describe('parseRetryAfter and the budget: any header value gives a bounded wait', () => {
  it('parseRetryAfter: undefined or a finite number >= 0; nextDelay within the caps', () => {
    fc.assert(
      fc.property(
        fc.dictionary(headerName, retryValue, { maxKeys: 3 }),
        fc.constantFrom(0, 5, 1_000, 30_000),
        fc.constantFrom(0, 5, 10_000),
        (values, maxRetryAfter, maxDelay) => {
          tried.values++;
          const headers = new Headers();
          for (const [name, value] of Object.entries(values)) headers.append(name, value);
          const hint = parseRetryAfter(headers, NOW);
          if (hint !== undefined) expect(Number.isFinite(hint) || hint === Number.POSITIVE_INFINITY).toBe(true);
          if (hint !== undefined) expect(hint).toBeGreaterThanOrEqual(0);
          const options = { ...DEFAULT_RETRY, maxRetryAfter, maxDelay };
          const budget = new RetryBudget(
            options,
            () => 0,
            () => NOW,
            Math.random,
          );
          const delay = budget.delayAfter(1, { headers, inProgress: false });
          expect(Number.isFinite(delay), `delay ${delay} for ${JSON.stringify(values)}`).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(hint === undefined ? maxDelay : maxRetryAfter);
        },
      ),
      chaosParameters(3000, 0.3),
    );
  });
});

describe('a client against servers that send any Retry-After', () => {
  it('429 / 503 / 409 with random hints: bounded waits, one key, the deadline kept', {
    timeout: chaosTimeout(60_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            status: fc.constantFrom(429, 503, 409, 408),
            headers: fc.dictionary(headerName, retryValue, { maxKeys: 2 }),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        fc.record({
          maxAttempts: fc.integer({ min: 1, max: 6 }),
          deadline: fc.constantFrom(1_000, 60_000),
          maxRetryAfter: fc.constantFrom(0, 5, 30_000),
          maxDelay: fc.constantFrom(0, 10_000),
        }),
        async (answers, retry) => {
          tried.values += answers.length;
          let effects = 0;
          const server = scriptedFetch((attempt) => {
            const answer = answers[attempt - 1];
            if (!answer) {
              effects++;
              return Response.json({ id: 'p1' }, { status: 201 });
            }
            const headers = new Headers();
            for (const [name, value] of Object.entries(answer.headers)) headers.append(name, value);
            return new Response(null, { status: answer.status, headers });
          });
          const { client, events } = observedClient({
            fetch: server.fetch,
            retry: { ...retry, timeout: 10_000, baseDelay: 300 },
          });
          const intent = await drive(client.intent('pay'));
          const start = Date.now();
          const outcome = await drive(settled(intent.post('payments', { json: { amount: 1 } })));
          const elapsed = Date.now() - start;
          expectTypedOutcome(outcome, intent.record);
          expect(elapsed).toBeLessThanOrEqual(retry.deadline);
          expect(server.requests.length).toBeLessThanOrEqual(retry.maxAttempts);
          expect(new Set(server.requests.map((r) => r.key))).toEqual(new Set([`"${intent.key}"`]));
          for (const event of events) {
            if (event.type !== 'retry') continue;
            expect(event.delay).toBeGreaterThanOrEqual(0);
            // A 409 without a hint waits at least inProgressDelay (1 s by default), at most twice it or maxDelay.
            expect(event.delay).toBeLessThanOrEqual(Math.max(retry.maxRetryAfter, retry.maxDelay, 2_000));
          }
          expect(effects).toBeLessThanOrEqual(1);
        },
      ),
      chaosParameters(400, 0.1),
    );
  });

  // maxRetryAfter 2 s; without a usable hint the first backoff is 300 ms * random 0.5 = 150 ms.
  it.each([
    ['retry-after', '-1', 150],
    ['retry-after', 'NaN', 150],
    ['retry-after', '1e12', 150],
    ['retry-after', '1.5', 150],
    ['retry-after', '99999999999999999999', 2_000],
    ['retry-after', '9'.repeat(400), 2_000],
    ['retry-after', 'Thu, 01 Jan 1970 00:00:00 GMT', 0],
    ['retry-after', 'Fri, 31 Dec 9999 23:59:59 GMT', 2_000],
    ['retry-after', 'Mon, 30 Nov 2026 12:00:01 GMT', 1_000],
    ['retry-after', '2026-11-30T12:00:01Z', 150],
    ['retry-after', '5, 7', 150],
    ['retry-after', 'soon', 150],
    ['retry-after', '', 150],
    ['retry-after-ms', '-5', 150],
    ['retry-after-ms', 'NaN', 150],
    ['retry-after-ms', '1e12', 150],
    ['retry-after-ms', '99999999999999999999', 2_000],
    ['retry-after-ms', '9'.repeat(400), 2_000],
    ['Retry-After-MS', '12.5', 12.5],
    ['RETRY-AFTER', '3600', 2_000],
    ['rEtRy-AfTeR', '1', 1_000],
  ])('%s: %j waits %d ms (capped at maxRetryAfter 2 s), then one effect', async (name, value, expected) => {
    tried.values++;
    let effects = 0;
    const server = scriptedFetch((attempt) => {
      if (attempt === 1) return new Response(null, { status: 503, headers: { [name]: value } });
      effects++;
      return Response.json({ id: 'p1' }, { status: 201 });
    });
    const { client, events } = observedClient({ fetch: server.fetch, retry: { maxRetryAfter: 2_000 } });
    const intent = await drive(client.intent('pay'));
    const start = Date.parse('2026-11-30T12:00:00Z');
    vi.setSystemTime(start);
    const res = await drive(intent.post('payments', { json: { amount: 1 } }));
    expect(res.status).toBe(201);
    const retries = events.filter((e) => e.type === 'retry');
    expect(retries.map((e) => ('delay' in e ? e.delay : -1))).toEqual([expected]);
    expect(Date.now() - start).toBe(Math.floor(expected));
    expect(server.requests.map((r) => r.key)).toEqual([`"${intent.key}"`, `"${intent.key}"`]);
    expect(effects).toBe(1);
  });

  it('several Retry-After headers (a proxy added one): the joined value is no hint, backoff applies', async () => {
    const server = scriptedFetch((attempt) => {
      if (attempt > 1) return Response.json({}, { status: 201 });
      const headers = new Headers();
      headers.append('Retry-After', '1');
      headers.append('Retry-After', '86400');
      return new Response(null, { status: 429, headers });
    });
    const { client, events } = observedClient({ fetch: server.fetch, retry: { maxDelay: 50, baseDelay: 50 } });
    await drive((await drive(client.intent('pay'))).post('payments', { json: {} }));
    const retry = events.find((e) => e.type === 'retry');
    expect(retry && 'delay' in retry ? retry.delay : -1).toBeLessThanOrEqual(50);
  });
});
