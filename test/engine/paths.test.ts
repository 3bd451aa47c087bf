/**
 * `run()` and `fetch()` as first-class paths, and the intent's own rules: vanished
 * records, clocks, sweeps with per-record retention, derived keys, fingerprints that say
 * what changed (issue 9).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  createClient,
  derivedKeys,
  intentFetch,
  MemoryStore,
  type OncelyEvent,
  run,
} from '../../src/index.js';
import { ietf, stripe as stripeProfile } from '../../src/profiles/index.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: (n: number) => Reply) {
  const server = await wireServer((_req, n) => handler(n));
  servers.push(server);
  return server;
}

const BASE = 'https://api.test/';
const api = (extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: BASE, store: new MemoryStore(), retry: { baseDelay: 1, maxDelay: 5 }, ...extra });

describe('run(): a first-class path', () => {
  it('hands the function the key, the key header as the profile sends it, and a signal that is always defined', async () => {
    const seen: unknown[] = [];
    const intent = await api().intent('job');
    await run(intent, async (context) => {
      seen.push({ ...context, signal: context.signal instanceof AbortSignal, fetch: typeof context.fetch });
      return 'ok';
    });
    expect(seen).toEqual([
      {
        key: intent.key,
        headers: { 'Idempotency-Key': `"${intent.key}"` },
        attempt: 1,
        signal: true,
        fetch: 'function',
      },
    ]);
    const stripe = await api({ profile: stripeProfile }).intent('job');
    await run(stripe, async ({ headers }) => {
      expect(headers).toEqual({ 'Idempotency-Key': stripe.key });
    });
  });

  it('a returned Response is classified by its status: a 503 is retried, not a success', async () => {
    const statuses = [503, 201];
    const intent = await api().intent('job');
    const res = await run(intent, async () => new Response('{}', { status: statuses.shift() }));
    expect(res.status).toBe(201);
    expect(intent.state).toBe('succeeded');
    expect(intent.record.attempts).toBe(2);
  });

  it('a result whose lastResponse carries the replay marker (stripe-node) counts as a replay', async () => {
    const events: OncelyEvent[] = [];
    const intent = await api({ profile: stripeProfile, onEvent: (e) => events.push(e) }).intent('job');
    await run(intent, async () => ({
      id: 'pi_1',
      lastResponse: { statusCode: 200, headers: { 'idempotent-replayed': 'true' } },
    }));
    expect(events.filter((e) => e.type === 'replay')).toHaveLength(1);
    expect(events.find((e) => e.type === 'success')).toMatchObject({ replayed: true });
  });

  it("the transport's mismatch error is KeyReusedError with it as cause; after an unanswered attempt, unknown", async () => {
    const mismatch = Object.assign(
      new Error('Keys for idempotent requests can only be used with the same parameters'),
      {
        type: 'StripeIdempotencyError',
        statusCode: 400,
        raw: { type: 'idempotency_error' },
      },
    );
    const fresh = await api({ profile: stripeProfile }).intent('job');
    const error = await run(fresh, async () => Promise.reject(mismatch)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'KEY_REUSED', status: 400, cause: mismatch });
    expect(fresh.state).toBe('failed');
    const throws = [Object.assign(new TypeError('terminated'), {}), mismatch];
    const retried = await api({ profile: stripeProfile }).intent('job');
    const later = await run(retried, async () => Promise.reject(throws.shift())).catch((e: unknown) => e);
    expect(later).toMatchObject({ code: 'OUTCOME_UNKNOWN', cause: mismatch });
    expect((later as Error).message).toMatch(/may or may not have taken effect/);
    expect(retried.state).toBe('unknown');
  });

  it.each([
    ['Safari', Object.assign(new TypeError('Load failed'), { stack: undefined })],
    ['undici', new TypeError('terminated')],
    ['Deno', new TypeError('error sending request for url (https://api.test/): connection error')],
    ['Node', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    [
      'stripe-node',
      Object.assign(new Error('An error occurred with our connection to Stripe.'), { type: 'StripeConnectionError' }),
    ],
  ])('a %s network error is retried with the same key', async (_runtime, error) => {
    const intent = await api().intent('job');
    const keys: string[] = [];
    const value = await run(intent, async ({ key, attempt }) => {
      keys.push(key);
      if (attempt === 1) throw error;
      return 'done';
    });
    expect(value).toBe('done');
    expect(keys).toEqual([intent.key, intent.key]);
  });

  it('the per-attempt timeout applies to a function that ignores its signal', async () => {
    const signals: AbortSignal[] = [];
    const intent = await api({ retry: { timeout: 30, maxAttempts: 2, baseDelay: 1 } }).intent('job');
    const error = await run(intent, ({ signal }) => {
      signals.push(signal);
      return new Promise(() => {});
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', attempts: 2 });
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(intent.state).toBe('unknown');
  });

  it('an error that is neither an answer nor a network failure leaves the outcome unknown, not retried, the original as cause', async () => {
    // It may have been thrown after the request left (issue 17): `failed` means the server said no.
    const bug = new RangeError('amount must be positive');
    const intent = await api().intent('job');
    let calls = 0;
    const error = await run(intent, async () => {
      calls++;
      throw bug;
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, cause: bug, attempts: 1 });
    expect(calls).toBe(1);
    expect(intent.state).toBe('unknown');
  });

  it('a classify that maps a thrown error to failed still gives a TransportError with the original as cause', async () => {
    const bug = new RangeError('amount must be positive');
    const intent = await api().intent('job');
    await expect(run(intent, async () => Promise.reject(bug), { classify: () => 'failed' })).rejects.toMatchObject({
      code: 'TRANSPORT_FAILED',
      cause: bug,
    });
    expect(intent.state).toBe('failed');
  });
});

describe('replay markers', () => {
  it('a profile can recognise replays its own way (isReplay), e.g. from the body', async () => {
    const answer = async () =>
      new Response('{"replayed":true,"id":"p1"}', { status: 500, headers: { 'content-type': 'application/json' } });
    const profile = {
      ...ietf,
      name: 'acme',
      isReplay: (a: { body: unknown }) => (a.body as { replayed?: boolean }).replayed === true,
    };
    const intent = await api({ profile, fetch: answer }).intent('pay');
    const error = await intent.post('payments', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'HTTP_ERROR', status: 500, replayed: true, attempts: 1 });
    expect(intent.state).toBe('failed');
  });
});

describe('intentFetch(): your own fetch, bound to the intent', () => {
  it('sends the key on every attempt, retries within the budget, resolves with the final Response', async () => {
    const server = await serve((n) => (n === 1 ? { status: 503 } : { status: 201, body: { id: 'p1' } }));
    const intent = await api({ baseUrl: server.url }).intent('pay');
    const res = await intentFetch(intent, 'payments', {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 'p1' });
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${intent.key}"`, `"${intent.key}"`]);
    expect(intent.state).toBe('succeeded');
  });

  it('resolves with a definitive error answer, as fetch does, and marks the intent failed', async () => {
    const server = await serve(() => ({ status: 402, body: { error: 'card_declined' } }));
    const intent = await api({ baseUrl: server.url }).intent('pay');
    const res = await intentFetch(intent, 'payments', { method: 'POST', body: '{}' });
    expect(res.status).toBe(402);
    expect(await res.json()).toEqual({ error: 'card_declined' });
    expect(intent.state).toBe('failed');
  });
});

describe('the intent and its record', () => {
  it('a record reset elsewhere is never formed again behind the caller: IntentGoneError, nothing sent', async () => {
    const store = new MemoryStore();
    const intent = await api({ store }).intent('pay');
    await (await api({ store }).intent('pay')).reset();
    await expect(intent.post('payments', { json: {} })).rejects.toMatchObject({ code: 'INTENT_GONE' });
    expect(await store.get('default', 'pay')).toBeUndefined();
    // Formed again elsewhere under a new key: still refused, and this object keeps its own record.
    const again = await api({ store }).intent('pay');
    await expect(intent.post('payments', { json: {} })).rejects.toMatchObject({ code: 'INTENT_GONE' });
    expect(again.key).not.toBe(intent.key);
    expect(intent.record.key).toBe(intent.key);
  });

  it('deadlines run on a monotonic clock: a wall clock jumping a day ahead mid-call changes nothing', async () => {
    let wall = Date.parse('2026-12-01T00:00:00Z');
    const statuses = [503, 503, 201];
    const intent = await api({
      now: () => wall,
      fetch: async () => {
        wall += 24 * 60 * 60 * 1000;
        return new Response('{}', { status: statuses.shift(), headers: { 'content-type': 'application/json' } });
      },
    }).intent('pay');
    expect(await intent.post('payments', { json: {} })).toMatchObject({ status: 201, attempts: 3 });
  });

  it('a sent intent minted in the future by this clock is not resent automatically', async () => {
    const store = new MemoryStore();
    const now = Date.now();
    await store.claim({
      v: 1,
      scope: 'default',
      name: 'pay',
      key: 'k-1',
      state: 'unknown',
      attempts: 1,
      createdAt: now + 3_600_000,
      updatedAt: now,
    });
    const intent = await api({ store }).intent('pay');
    await expect(intent.post('payments', { json: {} })).rejects.toMatchObject({
      code: 'INTENT_EXPIRED',
      reason: 'clock',
    });
  });

  it('sweeps honour scope and the retention fixed in each record when it formed', async () => {
    const store = new MemoryStore();
    let now = Date.parse('2026-12-01T00:00:00Z');
    const clock = () => now;
    const short = api({ store, scope: 'shop', keyTtl: 3_600_000, now: clock });
    const long = api({ store, scope: 'shop', keyTtl: 48 * 3_600_000, now: clock });
    const other = api({ store, scope: 'other', keyTtl: 3_600_000, now: clock });
    await short.intent('a');
    await long.intent('b');
    await other.intent('c');
    now += 2 * 3_600_000;
    expect(await long.sweep()).toBe(1); // `a`, by its own 1 h, though this client keeps keys 48 h
    expect((await store.list('shop')).map((r) => r.name)).toEqual(['b']);
    expect(await store.list('other')).toHaveLength(1);
  });

  it('derived keys cannot be reset: the same name derives the same key; the error says what to do', async () => {
    const intent = await api({ keys: derivedKeys }).intent('payout:42');
    await expect(intent.reset()).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/new name/),
    });
  });

  it('a mismatch says which part of the request changed; moving the API host keeps pending intents', async () => {
    const store = new MemoryStore();
    const ok = async () => new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
    const intent = await api({ store, fetch: ok }).intent('pay');
    await intent.post('payments?x=1', { json: { amount: 1 } });
    await expect(intent.post('payments?x=1', { json: { amount: 2 } })).rejects.toMatchObject({
      code: 'INTENT_MISMATCH',
      changed: ['body'],
    });
    await expect(intent.post('payments?x=2', { json: { amount: 1 } })).rejects.toMatchObject({ changed: ['path'] });
    await expect(intent.put('payments?x=1', { json: { amount: 1 } })).rejects.toMatchObject({ changed: ['method'] });
    const moved = await api({ store, fetch: ok, baseUrl: 'https://api2.example/' }).intent('pay');
    expect(await moved.post('payments?x=1', { json: { amount: 1 } })).toMatchObject({ status: 201 });
  });
});

describe('run(): the answer a thrown error carries', () => {
  it("a stripe-node-style error's raw body is the error's body and lastAnswer.body", async () => {
    const raw = { error: { type: 'card_error', code: 'card_declined' } };
    const declined = () => Object.assign(new Error('Your card was declined.'), { statusCode: 402, raw });
    const intent = await api().intent('job:raw');
    await expect(run(intent, async () => Promise.reject(declined()))).rejects.toMatchObject({
      code: 'HTTP_ERROR',
      status: 402,
      body: raw,
    });
    const unavailable = Object.assign(new Error('busy'), { statusCode: 503, raw: { error: { type: 'api_error' } } });
    const busy = await api({ retry: { maxAttempts: 2, baseDelay: 1 } }).intent('job:busy');
    const error = await run(busy, async () => Promise.reject(unavailable)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', lastAnswer: { status: 503, body: unavailable.raw } });
  });
});

describe("run(): the context's fetch", () => {
  it('a 503 whose body the function parsed is retried under the same key, not stored as a success', async () => {
    const statuses = [503, 201];
    const keys: (string | null)[] = [];
    const client = createClient({
      baseUrl: 'https://api.test/',
      store: new MemoryStore(),
      retry: { baseDelay: 1, maxDelay: 5 },
      fetch: async (_input, init) => {
        keys.push(new Headers(init?.headers).get('idempotency-key'));
        const status = statuses.shift() ?? 201;
        return new Response(JSON.stringify({ status }), { status, headers: { 'content-type': 'application/json' } });
      },
    });
    const intent = await client.intent('run:parsed');
    const data = await run(intent, async ({ fetch }) =>
      (await fetch('https://api.test/pay', { method: 'POST' })).json(),
    );
    expect(data).toEqual({ status: 201 });
    expect(keys).toEqual([`"${intent.key}"`, `"${intent.key}"`]);
    expect(intent.state).toBe('succeeded');
  });
});
