/**
 * Keys and credentials never reach a log through an error: not through `util.inspect`
 * (what `console.error` prints), JSON, or a pino-style serializer, whatever header sets
 * the error or its cause carries; `rawAnswer()` reads the server's headers on purpose.
 * And the error types narrow as documented.
 */
import { inspect } from 'node:util';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AnyOncelyError,
  createClient,
  HttpError,
  InProgressError,
  isOncelyError,
  MemoryStore,
  OncelyError,
  OutcomeUnknownError,
  run,
} from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';

const TOKEN = 'Bearer sk_live_TOKEN_51Hx';
const COOKIE = 'sid=COOKIE_9f8e';

function setup() {
  const contract = createContractServer();
  const client = createClient({
    baseUrl: 'https://api.test/',
    store: new MemoryStore(),
    fetch: contract.fetch as typeof fetch,
    headers: { authorization: TOKEN, cookie: COOKIE },
    retry: { maxAttempts: 2, baseDelay: 1, maxDelay: 2, timeout: 40 },
  });
  return { contract, client };
}

/** pino-std-serializers' `err`, in short: type, message, stack, every enumerable field, causes in turn. */
function pinoErr(err: Error, seen = new Set<unknown>()): Record<string, unknown> {
  seen.add(err);
  const out: Record<string, unknown> = { type: err.constructor.name, message: err.message, stack: err.stack };
  for (const name in err) {
    const value = (err as unknown as Record<string, unknown>)[name];
    if (out[name] === undefined) out[name] = value instanceof Error && !seen.has(value) ? pinoErr(value, seen) : value;
  }
  if (err.cause instanceof Error && !seen.has(err.cause)) out.cause = pinoErr(err.cause, seen);
  return out;
}
/**
 * How a log line ends up: header sets written out as objects (harsher than JSON's `{}`).
 * A `Request` stays as JSON writes it (`{}`): a cause's own request object is the
 * transport's, left as it is (its inspect output is masked).
 */
const logLine = (value: unknown) => JSON.stringify(value, (_, v) => (v instanceof Headers ? Object.fromEntries(v) : v));

function expectNoSecret(error: OncelyError, key: string) {
  for (const dump of [inspect(error, { depth: 20 }), JSON.stringify(error), logLine(pinoErr(error))]) {
    for (const secret of [key, TOKEN, COOKIE]) expect(dump).not.toContain(secret);
  }
}

describe('keys and credentials stay out of error logs', () => {
  it('HttpError: the echoed key header is redacted in err.headers; rawAnswer() has it', async () => {
    const { contract, client } = setup();
    const intent = await client.intent('pay');
    contract.inject({ fault: 'status', status: 400, body: { error: 'no' } });
    const error = await intent.post('payments', { json: { a: 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    const http = error as HttpError;
    expect(http.headers.get('idempotency-key')).toBe('[redacted]');
    expect(http.rawAnswer().headers.get('idempotency-key')).toContain(intent.key);
    expect(http.rawAnswer()).toMatchObject({ status: 400, body: { error: 'no' } });
    expectNoSecret(http, intent.key);
  });

  it('OutcomeUnknownError: lastAnswer.headers redacted, rawAnswer() raw', async () => {
    const { contract, client } = setup();
    const intent = await client.intent('pay');
    contract.inject({ fault: 'drop-after-commit' }, { fault: 'status', status: 503, times: 5 });
    const error = (await intent.post('payments', { json: { a: 1 } }).catch((e: unknown) => e)) as OutcomeUnknownError;
    expect(error.code).toBe('OUTCOME_UNKNOWN');
    expect(error.lastAnswer?.headers.get('idempotency-key')).toBe('[redacted]');
    expect(error.rawAnswer()?.headers.get('idempotency-key')).toContain(intent.key);
    expect(error.lastAnswer?.status).toBe(503);
    expectNoSecret(error, intent.key);
  });

  it("a cause's request headers (a ky error's `request`) print masked, the cause itself untouched", async () => {
    const { client } = setup();
    const intent = await client.intent('pay');
    const error = (await run(intent, ({ headers }) => {
      // What ky's errors carry: the Request they sent, the key and Authorization in its headers.
      const request = new Request('https://api.test/payments', { headers: { ...headers, authorization: TOKEN } });
      throw Object.assign(new TypeError('fetch failed'), { request });
    }).catch((e: unknown) => e)) as OutcomeUnknownError;
    expect(error.code).toBe('OUTCOME_UNKNOWN');
    const request = (error.cause as { request?: Request }).request;
    expect(request?.headers.get('authorization')).toBe(TOKEN);
    expect(inspect(error, { depth: 20 })).toContain("authorization: '[redacted]'");
    expectNoSecret(error, intent.key);
  });

  it('run(): a transport error echoing the key in its own fields prints masked', async () => {
    const { client } = setup();
    const intent = await client.intent('pay');
    const error = (await run(intent, ({ headers }) => {
      // What stripe-node's errors look like: the response's headers as a plain object.
      throw Object.assign(new Error('card declined'), { headers: { ...headers, authorization: TOKEN } });
    }).catch((e: unknown) => e)) as OncelyError;
    expect(isOncelyError(error)).toBe(true);
    const dump = inspect(error, { depth: 20 });
    expect(dump).toContain('card declined');
    for (const secret of [intent.key, TOKEN]) expect(dump).not.toContain(secret);
  });

  it('an error never printed by inspect before still prints the usual form (name, message, fields)', () => {
    const error = new InProgressError({ intent: 'pay', key: 'k-0123456789', attempts: 3 });
    const dump = inspect(error);
    expect(dump).toMatch(/^InProgressError: The server still reports intent "pay"/);
    expect(dump).toContain("code: 'IN_PROGRESS'");
    expect(dump).toContain("holder: 'server'");
    expect(dump).not.toContain('k-0123456789');
  });
});

describe('error types narrow', () => {
  it("switch (error.code) on 'IN_PROGRESS' is an InProgressError; instanceof OncelyError narrows like isOncelyError", () => {
    const check = (error: unknown) => {
      if (error instanceof OncelyError) {
        expectTypeOf(error).toEqualTypeOf<AnyOncelyError>();
        switch (error.code) {
          case 'IN_PROGRESS':
            expectTypeOf(error).toEqualTypeOf<InProgressError>();
            return error.holder;
          case 'OUTCOME_UNKNOWN':
            expectTypeOf(error).not.toEqualTypeOf<InProgressError>();
            expectTypeOf(error).toMatchTypeOf<OutcomeUnknownError>();
            return 'unknown';
          case 'HTTP_ERROR':
            expectTypeOf(error).toEqualTypeOf<HttpError>();
            return error.status;
        }
      }
      if (isOncelyError(error)) expectTypeOf(error).toEqualTypeOf<AnyOncelyError>();
      if (error instanceof HttpError) expectTypeOf(error).toEqualTypeOf<HttpError>();
      if (error instanceof OutcomeUnknownError) expectTypeOf(error).toMatchTypeOf<OutcomeUnknownError>();
      return undefined;
    };
    expect(check(new InProgressError({ intent: 'x', holder: 'client' }))).toBe('client');
    expect(check(new OutcomeUnknownError({ intent: 'x' }))).toBe('unknown');
    expect(check(new Error('other'))).toBeUndefined();
    expect(new InProgressError({}) instanceof OutcomeUnknownError).toBe(true);
    expect(
      new HttpError({ status: 400, headers: new Headers(), body: '', replayed: false }, {}) instanceof OncelyError,
    ).toBe(true);
    expect({} instanceof OncelyError).toBe(false);
  });
});
