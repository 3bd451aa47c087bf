import { HttpResponse, http } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import {
  HttpError,
  InProgressError,
  IntentExpiredError,
  IntentMismatchError,
  KeyReusedError,
  MemoryStore,
  type OncelyEvent,
  OutcomeUnknownError,
  ResponseValidationError,
  run,
} from '../src/index.js';
import { stripe } from '../src/profiles/index.js';
import { BASE, setupContract } from './helpers/contract.js';

const { contract, msw, client } = setupContract();
const Payment = z.object({ id: z.string(), amount: z.number() });
const body = { amount: 4200, currency: 'eur' };

afterEach(() => {
  vi.useRealTimers();
});

describe('one key per intent, on every attempt', () => {
  it('drop after commit, then retry: replayed, one effect', async () => {
    contract.inject({ fault: 'drop-after-commit' });
    const intent = await client().intent('checkout:1');
    const res = await intent.post('payments', { json: body, schema: Payment });
    expect(res).toMatchObject({ status: 201, replayed: true, attempts: 2, key: intent.key });
    expect(res.data.amount).toBe(4200);
    expect(contract.attempts(intent.key)).toBe(2);
    expect(contract.effects(intent.key)).toBe(1);
    expect(intent.state).toBe('succeeded');
  });

  it('5xx before commit is retried with the same key: one effect, not a replay', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, times: 2 });
    const intent = await client().intent('checkout:2');
    const res = await intent.post('payments', { json: body });
    expect(res).toMatchObject({ status: 201, replayed: false, attempts: 3 });
    expect(contract.attempts(intent.key)).toBe(3);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('409 with Retry-After 2 s: waits 2 s (fake clock), then one effect', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    // Hashing and the exchanges run on real I/O: let it run, firing only timers already due.
    const until = async (done: () => boolean) => {
      while (!done()) {
        await vi.advanceTimersByTimeAsync(0);
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const api = client({ retry: { maxRetryAfter: 30_000 } });
    const intent = await api.intent('checkout:3');
    contract.inject({ fault: 'in-progress', ms: 1500, retryAfter: 2 });
    let settled = false;
    const pending = intent.post('payments', { json: body }).finally(() => {
      settled = true;
    });
    await until(() => api.stats.conflicts === 1);
    await vi.advanceTimersByTimeAsync(1999);
    expect(contract.attempts(intent.key)).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await until(() => settled);
    expect((await pending).status).toBe(201);
    expect(contract.attempts(intent.key)).toBe(2);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('409 forever: InProgressError within the budget, intent unknown, key kept', async () => {
    const api = client({ retry: { maxAttempts: 4, baseDelay: 1, maxRetryAfter: 2 } });
    const intent = await api.intent('checkout:4');
    contract.inject({ fault: 'in-progress', ms: 3_600_000, retryAfter: 0, times: 100 });
    const error = await intent.post('payments', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InProgressError);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ code: 'IN_PROGRESS', key: intent.key, intent: 'checkout:4', attempts: 4 });
    expect(contract.attempts(intent.key)).toBe(4);
    expect(contract.effects(intent.key)).toBe(0);
    expect((await api.store.get('default', 'checkout:4'))?.state).toBe('unknown');
  });

  it('422 key reused with another body: KeyReusedError, one attempt, intent failed', async () => {
    const api = client();
    const first = await api.intent('a', { key: 'shared-key' });
    await first.post('payments', { json: body });
    const second = await api.intent('b', { key: 'shared-key' });
    const error = await second.post('payments', { json: { ...body, amount: 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyReusedError);
    expect(error).toMatchObject({ code: 'KEY_REUSED', status: 422, attempts: 1, intent: 'b' });
    expect(contract.attempts('shared-key')).toBe(2);
    expect(contract.effects('shared-key')).toBe(1);
    expect(second.state).toBe('failed');
    expect(api.stats.mismatches).toBe(1);
  });

  it('a changed body under an intent already sent: IntentMismatchError, nothing sent', async () => {
    const intent = await client().intent('checkout:6');
    await intent.post('payments', { json: body });
    const error = await intent.post('payments', { json: { ...body, amount: 1 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntentMismatchError);
    expect(contract.attempts(intent.key)).toBe(1);
    expect(contract.effects(intent.key)).toBe(1);
    // The same request again is fine: the server replays it.
    expect((await intent.post('payments', { json: { currency: 'eur', amount: 4200 } })).replayed).toBe(true);
  });

  it('the request may still change before it was ever sent', async () => {
    const api = client();
    const intent = await api.intent('checkout:7');
    const controller = new AbortController();
    controller.abort(new Error('user went back'));
    await expect(intent.post('payments', { json: { amount: 1 }, signal: controller.signal })).rejects.toMatchObject({
      code: 'CANCELLED',
      sent: false,
      cause: { message: 'user went back' },
    });
    expect(intent.state).toBe('ready');
    expect((await intent.post('payments', { json: body })).status).toBe(201);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('429 with Retry-After is retried with the same key', async () => {
    contract.inject({ fault: 'status', status: 429, headers: { 'retry-after': '0' } });
    const intent = await client().intent('checkout:8');
    const res = await intent.post('payments', { json: body });
    expect(res.attempts).toBe(2);
    expect(contract.attempts(intent.key)).toBe(2);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('a per-attempt timeout is retried with the same key', async () => {
    contract.inject({ fault: 'hang' });
    const events: OncelyEvent[] = [];
    const api = client({ retry: { timeout: 300, baseDelay: 1 }, onEvent: (e) => events.push(e) });
    const intent = await api.intent('checkout:9');
    const res = await intent.post('payments', { json: body });
    expect(res.status).toBe(201);
    // A loaded machine may time out the second attempt too; never a second effect.
    expect(res.attempts).toBeGreaterThanOrEqual(2);
    expect(events.find((e) => e.type === 'retry')).toMatchObject({ reason: 'timeout' });
    expect(contract.attempts(intent.key)).toBe(res.attempts);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('abort during a wait rejects at once with CancelledError (the reason as cause); the intent is unknown, key kept', async () => {
    contract.inject({ fault: 'fail-before-commit', status: 503, retryAfter: 20 });
    const api = client({ retry: { maxRetryAfter: 60_000 } });
    const intent = await api.intent('checkout:10');
    const controller = new AbortController();
    const pending = intent.post('payments', { json: body, signal: controller.signal });
    await vi.waitFor(() => expect(contract.attempts(intent.key)).toBe(1));
    const started = Date.now();
    controller.abort(new Error('left the page'));
    await expect(pending).rejects.toMatchObject({ code: 'CANCELLED', sent: true, cause: { message: 'left the page' } });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(intent.state).toBe('unknown');
    expect(contract.effects(intent.key)).toBe(0);
    const resumed = await (await client({ store: api.store }).intent('checkout:10')).post('payments', { json: body });
    expect(resumed.key).toBe(intent.key);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('two concurrent sends of one intent in one client: one request, one effect', async () => {
    const api = client();
    const [a, b] = await Promise.all([api.intent('checkout:11'), api.intent('checkout:11')]);
    expect(a.key).toBe(b.key);
    const [ra, rb] = await Promise.all([a.post('payments', { json: body }), b.post('payments', { json: body })]);
    expect(ra).toBe(rb);
    expect(contract.attempts(a.key)).toBe(1);
    expect(contract.effects(a.key)).toBe(1);
  });

  it('two clients (two tabs) over one store sending at once: one key, one effect', async () => {
    const store = new MemoryStore();
    contract.inject({ fault: 'delay', ms: 30 });
    const [a, b] = await Promise.all([
      client({ store }).intent('checkout:12'),
      client({ store }).intent('checkout:12'),
    ]);
    expect(a.key).toBe(b.key);
    const results = await Promise.all([a.post('payments', { json: body }), b.post('payments', { json: body })]);
    expect(results.map((r) => r.status)).toEqual([201, 201]);
    expect(results.filter((r) => r.replayed)).toHaveLength(1);
    expect(contract.effects(a.key)).toBe(1);
  });

  it('a replayed 500 is the server’s stored answer: not retried, HttpError, intent failed', async () => {
    contract.inject({ fault: 'status', status: 500, body: { error: 'boom' }, store: true });
    const intent = await client().intent('checkout:13');
    const error = await intent.post('payments', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 500, replayed: true, attempts: 2 });
    expect(contract.attempts(intent.key)).toBe(2);
    expect(intent.state).toBe('failed');
  });

  it('a definitive 4xx is not retried', async () => {
    contract.inject({ fault: 'status', status: 402, body: { error: 'card_declined' }, store: true });
    const intent = await client().intent('checkout:14');
    const error = await intent.post('payments', { json: body }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'HTTP_ERROR', status: 402, replayed: false, body: { error: 'card_declined' } });
    expect(contract.attempts(intent.key)).toBe(1);
  });

  it('budget exhausted on network errors: OutcomeUnknownError, key kept, resumable', async () => {
    contract.inject({ fault: 'drop-after-commit' }, { fault: 'fail-before-commit', times: 10 });
    const api = client({ retry: { maxAttempts: 3 } });
    const intent = await api.intent('checkout:15');
    const error = await intent.post('payments', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', attempts: 3, key: intent.key });
    expect(await api.pending()).toMatchObject([
      { name: 'checkout:15', key: intent.key, state: 'unknown', attempts: 3 },
    ]);
    contract.reset();
    // A restart: a new client over the same store finishes with the same key.
    const later = await client({ store: api.store }).intent('checkout:15');
    expect(later.key).toBe(intent.key);
    await later.post('payments', { json: body });
    expect(contract.attempts(intent.key)).toBe(1);
  });
});

describe('run(): any transport under the intent key', () => {
  it('a transport that retries internally sends the key on each of its attempts', async () => {
    contract.inject({ fault: 'drop-after-commit' });
    const intent = await client().intent('payout:1');
    const result = await run(intent, async ({ key }) => {
      // A library with its own hidden retry (like stripe-node's connection retry).
      const send = () =>
        fetch(`${BASE}payouts`, {
          method: 'POST',
          headers: { 'idempotency-key': `"${key}"`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const res = await send().catch(send);
      return { status: res.status, replayed: res.headers.get('idempotent-replayed') };
    });
    expect(result).toEqual({ status: 201, replayed: 'true' });
    expect(contract.attempts(intent.key)).toBe(2);
    expect(contract.effects(intent.key)).toBe(1);
    expect(intent.state).toBe('succeeded');
  });

  it('oncely retries the transport with the same key; a 409 error waits; a 4xx stops', async () => {
    const intent = await client().intent('payout:2');
    const keys: string[] = [];
    const value = await run(intent, async ({ key, attempt }) => {
      keys.push(key);
      if (attempt === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      if (attempt === 2) throw Object.assign(new Error('in use'), { statusCode: 409, headers: { 'retry-after': '0' } });
      return 'ok';
    });
    expect(value).toBe('ok');
    expect(keys).toEqual([intent.key, intent.key, intent.key]);

    const failing = await client().intent('payout:3');
    let calls = 0;
    const error = await run(failing, async () => {
      calls++;
      throw Object.assign(new Error('declined'), { statusCode: 402 });
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'HTTP_ERROR', status: 402, cause: { message: 'declined' } });
    expect(calls).toBe(1);
    expect(failing.state).toBe('failed');
  });

  it('budget exhausted in run(): OutcomeUnknownError, intent unknown', async () => {
    const intent = await client({ retry: { maxAttempts: 2 } }).intent('payout:4');
    const error = await run(intent, async () => {
      throw Object.assign(new Error('timeout'), { name: 'TimeoutError' });
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(intent.state).toBe('unknown');
  });
});

describe('profiles', () => {
  it('stripe: bare key on the wire, 400 idempotency_error is KeyReusedError', async () => {
    const seen: (string | null)[] = [];
    msw.use(
      http.post(`${BASE}charges`, ({ request }) => {
        seen.push(request.headers.get('idempotency-key'));
        return HttpResponse.json(
          {
            error: {
              type: 'idempotency_error',
              message: 'Keys for idempotent requests can only be used with the same parameters',
            },
          },
          { status: 400 },
        );
      }),
    );
    const intent = await client({ profile: stripe }).intent('charge:1');
    const error = await intent.post('charges', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyReusedError);
    expect(seen).toEqual([intent.key]);
  });
});

describe('bad answers', () => {
  it.each([['-1'], ['1e12'], ['soon'], ['Thu, 01 Jan 1970 00:00:00 GMT'], ['99999999999999999999']])(
    'Retry-After %j gives a bounded wait',
    async (value) => {
      contract.inject({ fault: 'status', status: 503, headers: { 'retry-after': value } });
      const delays: number[] = [];
      const api = client({ retry: { maxDelay: 5, maxRetryAfter: 50 } });
      api.on('retry', (e) => delays.push(e.delay));
      const intent = await api.intent(`checkout:ra:${value}`);
      await intent.post('payments', { json: body });
      expect(delays).toHaveLength(1);
      expect(delays[0]).toBeGreaterThanOrEqual(0);
      expect(delays[0]).toBeLessThanOrEqual(50);
    },
  );

  it('a 2xx body that is not JSON fails the schema with a typed error; the intent stays succeeded', async () => {
    msw.use(
      http.post(
        `${BASE}text`,
        () => new HttpResponse('created!', { status: 201, headers: { 'content-type': 'text/plain' } }),
      ),
    );
    const intent = await client().intent('text:1');
    const error = await intent.post('text', { json: body, schema: Payment }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error).toMatchObject({ status: 201, body: 'created!', key: intent.key });
    expect(intent.state).toBe('succeeded');
    // Without a schema the text is the data.
    expect((await (await client().intent('text:2')).post('text', { json: body })).data).toBe('created!');
  });

  it('a JSON body that fails the schema carries the issues', async () => {
    const intent = await client().intent('schema:1');
    const error = await intent
      .post('payments', { json: body, schema: z.object({ id: z.number() }) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).issues[0]?.message).toMatch(/number/);
    expect(contract.effects(intent.key)).toBe(1);
  });

  it('a broken JSON error body still gives a typed error with the text', async () => {
    msw.use(
      http.post(
        `${BASE}broken`,
        () =>
          new HttpResponse('{"type": oops', { status: 422, headers: { 'content-type': 'application/problem+json' } }),
      ),
    );
    const error = await (await client().intent('broken:1')).post('broken', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyReusedError);
    expect(error).toMatchObject({ body: '{"type": oops' });
  });
});

describe('expiry', () => {
  it('an unknown intent older than keyTtl is never resent: IntentExpiredError with the key', async () => {
    let now = Date.parse('2026-11-30T00:00:00Z');
    const api = client({ now: () => now, keyTtl: 60_000, retry: { maxAttempts: 1 } });
    contract.inject({ fault: 'drop-after-commit' });
    const intent = await api.intent('checkout:old');
    await expect(intent.post('payments', { json: body })).rejects.toBeInstanceOf(OutcomeUnknownError);
    now += 60_001;
    const error = await intent.post('payments', { json: body }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntentExpiredError);
    expect(error).toMatchObject({ key: intent.key, code: 'INTENT_EXPIRED' });
    expect(contract.attempts(intent.key)).toBe(1);
    expect((await api.pending())[0]).toMatchObject({ expired: true });
  });
});

describe('keys stay out of error messages (they end up in logs)', () => {
  it('no error message contains the key; error.key carries it', async () => {
    let now = Date.parse('2026-11-30T00:00:00Z');
    const api = client({ now: () => now, keyTtl: 60_000, retry: { maxAttempts: 2, maxRetryAfter: 1 } });
    const errors: unknown[] = [];
    const attempt = async (
      name: string,
      options: Parameters<Awaited<ReturnType<typeof api.intent>>['post']>[1] = {},
    ) => {
      const intent = await api.intent(name);
      errors.push(await intent.post('payments', { json: body, ...options }).catch((e: unknown) => e));
      return intent;
    };
    contract.inject({ fault: 'fail-before-commit', times: 2 });
    const unknown = await attempt('unknown'); // OutcomeUnknownError
    contract.inject({ fault: 'in-progress', ms: 60_000, retryAfter: 0, times: 2 });
    await attempt('in-progress'); // InProgressError
    contract.inject({ fault: 'status', status: 402, store: true });
    await attempt('declined'); // HttpError
    await attempt('schema', { schema: z.object({ nope: z.number() }) }); // ResponseValidationError
    const reused = await api.intent('reused', { key: (await api.intent('declined')).key });
    errors.push(await reused.post('payments', { json: { other: true } }).catch((e: unknown) => e)); // KeyReusedError
    errors.push(await unknown.post('payments', { json: { changed: true } }).catch((e: unknown) => e)); // IntentMismatchError
    now += 60_001;
    errors.push(await unknown.post('payments', { json: body }).catch((e: unknown) => e)); // IntentExpiredError
    expect(errors.map((e) => (e as Error).name)).toEqual([
      'OutcomeUnknownError',
      'InProgressError',
      'HttpError',
      'ResponseValidationError',
      'KeyReusedError',
      'IntentMismatchError',
      'IntentExpiredError',
    ]);
    for (const error of errors) {
      const { key, message } = error as { key: string; message: string };
      expect(key).toMatch(/^[0-9a-f-]{36}$/);
      expect(message).not.toContain(key);
    }
  });
});
