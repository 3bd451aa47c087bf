/**
 * Odd server answers: replay headers with odd casing and values; 409/422/400 bodies that
 * are not JSON, huge (1 MB), deeply nested, or problem+json of another shape; 2xx bodies
 * that fail the schema; any status with any body. Each gives a typed `OncelyError` (or
 * data), a stored state that agrees with it, a bounded number of attempts, one key.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  HttpError,
  InProgressError,
  KeyReusedError,
  OncelyError,
  OutcomeUnknownError,
  ResponseValidationError,
} from '../src/index.js';
import { profiles } from '../src/profiles/index.js';
import { expectTypedOutcome, headerSafe, observedClient, scriptedFetch, settled } from './chaos/harness.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => {
  restore();
  console.log(`fuzz-answers: ${tried.answers} server answers tried`);
});

const tried = { answers: 0 };

const MB = 1024 * 1024;
const NULL_BODY = new Set([204, 205, 304]);

/** Bodies a broken or foreign server may send. */
const bodies: readonly { label: string; type: string | null; text: () => string }[] = [
  { label: 'empty', type: 'application/problem+json', text: () => '' },
  { label: 'not JSON', type: 'application/json', text: () => '{"type": oops' },
  { label: 'HTML', type: 'text/html', text: () => '<html><body>502 Bad Gateway</body></html>' },
  { label: 'JSON as text/plain', type: 'text/plain', text: () => '{"title":"x"}' },
  { label: 'no content type', type: null, text: () => '{"title":"x"}' },
  { label: '1 MB of text', type: 'text/plain', text: () => 'x'.repeat(MB) },
  { label: '1 MB of JSON', type: 'application/json', text: () => JSON.stringify({ detail: 'y'.repeat(MB) }) },
  { label: '1 MB, not JSON', type: 'application/problem+json', text: () => `{${'z'.repeat(MB)}` },
  { label: 'nested 100k deep', type: 'application/json', text: () => `${'['.repeat(100_000)}${']'.repeat(100_000)}` },
  { label: 'problem+json, other shape', type: 'application/problem+json', text: () => '{"errors":[{"code":7}]}' },
  { label: 'problem+json, wrong types', type: 'application/problem+json', text: () => '{"type":5,"status":"409"}' },
  { label: 'JSON null', type: 'application/json', text: () => 'null' },
  { label: 'JSON string', type: 'application/json', text: () => '"idempotency_error"' },
  { label: 'JSON array', type: 'application/json', text: () => '[1,2,3]' },
  { label: 'stripe-like, error null', type: 'application/json', text: () => '{"error":null}' },
  { label: 'stripe-like, error string', type: 'application/json', text: () => '{"error":"idempotency_error"}' },
  { label: 'stripe-like, type at root', type: 'application/json', text: () => '{"type":"idempotency_error"}' },
  { label: 'proto keys', type: 'application/json', text: () => '{"__proto__":{"type":"idempotency_error"}}' },
  { label: 'BOM + JSON', type: 'application/json', text: () => '\ufeff{"a":1}' },
  { label: 'invalid UTF-8', type: 'application/json', text: () => '\ud800' },
];

describe('error bodies of every shape', () => {
  for (const profile of ['ietf', 'stripe'] as const) {
    for (const status of [409, 422, 400]) {
      it(`${profile}: ${status} with each odd body: a typed error, bounded attempts, state agrees`, async () => {
        for (const body of bodies) {
          tried.answers++;
          const server = scriptedFetch(
            () =>
              new Response(body.text(), {
                status,
                headers: { ...(body.type ? { 'content-type': body.type } : {}), 'retry-after': '0' },
              }),
          );
          const { client } = observedClient({
            fetch: server.fetch,
            profile: profiles[profile],
            retry: { maxAttempts: 3 },
          });
          const intent = await drive(client.intent(`pay:${body.label}`));
          const outcome = await drive(settled(intent.post('payments', { json: { amount: 1 } })));
          expect(outcome.ok, body.label).toBe(false);
          expectTypedOutcome(outcome, intent.record);
          const error = (outcome as { error: unknown }).error;
          if (status === 409) expect(error, body.label).toBeInstanceOf(InProgressError);
          if (status === 422) expect(error, body.label).toBeInstanceOf(profile === 'ietf' ? KeyReusedError : HttpError);
          // Stripe's 400 `idempotency_error` (at `error.type` or the root) is a reused key.
          if (status === 400)
            expect(error, body.label).toBeInstanceOf(
              profile === 'stripe' && body.label === 'stripe-like, type at root' ? KeyReusedError : HttpError,
            );
          expect(server.requests.length).toBe(status === 409 ? 3 : 1);
        }
      });
    }
  }

  it('stripe: a 400 idempotency_error in any position that stripe uses is a KeyReusedError, else an HttpError', async () => {
    const cases: [string, boolean][] = [
      ['{"error":{"type":"idempotency_error","message":"Keys for idempotent requests…"}}', true],
      ['{"type":"idempotency_error"}', true],
      ['{"error":{"type":"invalid_request_error"}}', false],
      ['{"error":{"type":["idempotency_error"]}}', false],
      ['{"error":"idempotency_error"}', false],
      ['idempotency_error', false],
    ];
    for (const [text, reused] of cases) {
      const server = scriptedFetch(
        () => new Response(text, { status: 400, headers: { 'content-type': 'application/json' } }),
      );
      const { client } = observedClient({ fetch: server.fetch, profile: profiles.stripe });
      const intent = await drive(client.intent('charge'));
      const outcome = await drive(settled(intent.post('charges', { json: {} })));
      expect((outcome as { error: unknown }).error, text).toBeInstanceOf(reused ? KeyReusedError : HttpError);
      expect(intent.state).toBe('failed');
    }
  });
});

describe('replay headers with odd casing and values', () => {
  it.each([
    ['Idempotent-Replayed', 'true', true],
    ['idempotent-replayed', 'TRUE', true],
    ['IDEMPOTENT-REPLAYED', ' True ', true],
    ['Idempotent-Replayed', 'true, true', true],
    ['Idempotent-Replayed', 'true, false', false],
    ['Idempotent-Replayed', '1', false],
    ['Idempotent-Replayed', 'yes', false],
    ['Idempotent-Replayed', '?1', true],
    ['Idempotent-Replayed', 'false', false],
    ['Idempotent-Replayed', '', false],
    ['Idempotency-Replayed', 'true', true],
    ['x-idempotent-replayed', 'TRUE', true],
    ['X-Idempotency-Replayed', 'true', false],
  ])('a 500 with %s: %j — replayed (final, one attempt): %s', async (name, value, replayed) => {
    tried.answers++;
    const server = scriptedFetch(() => new Response('stored failure', { status: 500, headers: { [name]: value } }));
    const { client } = observedClient({ fetch: server.fetch, retry: { maxAttempts: 3, baseDelay: 1 } });
    const intent = await drive(client.intent('pay'));
    const outcome = await drive(settled(intent.post('payments', { json: {} })));
    const error = (outcome as { error: unknown }).error;
    expect(error).toBeInstanceOf(replayed ? HttpError : OutcomeUnknownError);
    if (replayed) expect(error).toMatchObject({ replayed: true, status: 500 });
    expect(intent.state).toBe(replayed ? 'failed' : 'unknown');
    expect(server.requests.length).toBe(replayed ? 1 : 3);
  });

  it('a replayed 2xx under odd casing is reported as a replay', async () => {
    const server = scriptedFetch(() =>
      Response.json({ id: 'p' }, { status: 201, headers: { 'IDEMPOTENT-replayed': 'tRuE' } }),
    );
    const { client } = observedClient({ fetch: server.fetch });
    const res = await drive((await drive(client.intent('pay'))).post('payments', { json: {} }));
    expect(res).toMatchObject({ status: 201, replayed: true });
  });
});

describe('responses that fail the schema', () => {
  const Payment = z.object({ id: z.string(), amount: z.number().int() });

  it('any 2xx body that is not a Payment: ResponseValidationError, the intent stays succeeded, one attempt', {
    timeout: chaosTimeout(60_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue().map((value) => ({ text: JSON.stringify(value) ?? 'null', type: 'application/json' })),
          fc.string().map((text) => ({ text, type: 'text/plain' })),
          fc.string().map((text) => ({ text, type: 'application/json' })),
        ),
        fc.constantFrom(200, 201, 202, 203, 206),
        async (body, status) => {
          tried.answers++;
          const server = scriptedFetch(
            () => new Response(body.text, { status, headers: { 'content-type': body.type } }),
          );
          const { client } = observedClient({ fetch: server.fetch });
          const intent = await drive(client.intent('pay'));
          const outcome = await drive(settled(intent.post('payments', { json: {}, schema: Payment })));
          expect(intent.state).toBe('succeeded');
          expect(server.requests).toHaveLength(1);
          if (outcome.ok) expect(Payment.safeParse(outcome.value.data).success).toBe(true);
          else {
            expect(outcome.error).toBeInstanceOf(ResponseValidationError);
            expect(outcome.error).toMatchObject({ key: intent.key, status });
          }
        },
      ),
      chaosParameters(300, 0.05),
    );
  });

  it('a 1 MB body that fails the schema, and a 204 with a schema', async () => {
    for (const [status, text] of [
      [201, JSON.stringify({ id: 1, pad: 'x'.repeat(MB) })],
      [204, null],
    ] as const) {
      const server = scriptedFetch(
        () => new Response(text, { status, headers: text ? { 'content-type': 'application/json' } : {} }),
      );
      const { client } = observedClient({ fetch: server.fetch });
      const intent = await drive(client.intent('pay'));
      const outcome = await drive(settled(intent.post('payments', { json: {}, schema: Payment })));
      expect((outcome as { error: unknown }).error).toBeInstanceOf(ResponseValidationError);
      expect(intent.state).toBe('succeeded');
    }
  });
});

describe('any status, any headers, any body', () => {
  it('the call settles with data or a typed error; the stored state agrees; attempts within the budget', {
    timeout: chaosTimeout(60_000),
  }, async () => {
    const answer = fc.record({
      status: fc.integer({ min: 200, max: 599 }),
      headers: fc.dictionary(
        fc.constantFrom('content-type', 'retry-after', 'retry-after-ms', 'idempotent-replayed', 'stripe-should-retry'),
        fc.oneof(
          fc.constantFrom('application/json', 'application/problem+json', 'text/plain', 'true', 'false', '0', '1'),
          fc.string({ unit: 'binary-ascii', maxLength: 20 }).map(headerSafe),
        ),
        { maxKeys: 4 },
      ),
      body: fc.oneof(
        fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
        fc.string({ maxLength: 200 }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(answer, { minLength: 1, maxLength: 5 }),
        fc.constantFrom('ietf' as const, 'stripe' as const),
        async (answers, profile) => {
          tried.answers += answers.length;
          const server = scriptedFetch((attempt) => {
            const a = answers[Math.min(attempt, answers.length) - 1]!;
            return new Response(NULL_BODY.has(a.status) ? null : a.body, { status: a.status, headers: a.headers });
          });
          const { client } = observedClient({
            fetch: server.fetch,
            profile: profiles[profile],
            retry: { maxAttempts: 4, deadline: 60_000, maxRetryAfter: 1_000, baseDelay: 10, maxDelay: 100 },
          });
          const intent = await drive(client.intent('pay'));
          const start = Date.now();
          const outcome = await drive(settled(intent.post('payments', { json: { amount: 1 } })));
          expectTypedOutcome(outcome, intent.record);
          if (!outcome.ok) expect(outcome.error).toBeInstanceOf(OncelyError);
          expect(server.requests.length).toBeGreaterThanOrEqual(1);
          expect(server.requests.length).toBeLessThanOrEqual(4);
          expect(new Set(server.requests.map((r) => r.key)).size).toBe(1);
          expect(Date.now() - start).toBeLessThanOrEqual(60_000);
        },
      ),
      chaosParameters(1000, 0.1),
    );
  });
});
