/** Every error is an OncelyError: bad options, bad input, a store that fails or never answers; keys stay out of logs. */
import { inspect } from 'node:util';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AnyOncelyError,
  CancelledError,
  CorruptRecordError,
  createClient,
  HttpError,
  InProgressError,
  IntentExpiredError,
  IntentGoneError,
  IntentMismatchError,
  InvalidArgumentError,
  InvalidKeyError,
  intentFetch,
  isOncelyError,
  KeyReusedError,
  MemoryStore,
  NotSentError,
  OncelyError,
  OutcomeUnknownError,
  RedirectError,
  ResponseValidationError,
  run,
  type Store,
  StoreError,
  TransportError,
} from '../../src/index.js';
import { FaultyStore } from '../matrix/faulty-store.js';

const ok = async () => new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
const base = { baseUrl: 'https://api.test/', store: new MemoryStore(), fetch: ok };

describe('bad options and input are InvalidArgumentErrors', () => {
  it.each([
    ['a deadline above 2^31-1 ms', { retry: { deadline: 2 ** 31 } }],
    ['a timeout above 2^31-1 ms', { retry: { timeout: 2 ** 31 } }],
    ['an unknown retry option', { retry: { limit: 3 } }],
    ['a profile name (profiles are values from oncely/profiles)', { profile: 'stripe' }],
    ['a profile object without classify', { profile: { name: 'x', header: 'K', encodeKey: (k: string) => k } }],
    ['a storeTimeout of 0', { storeTimeout: 0 }],
    ['unknown key kinds', { keys: 'v1' }],
    ['derived keys named by a string (derivedKeys is a value imported from oncely)', { keys: 'derived' }],
  ])('%s', (_what, options) => {
    expect(() => createClient({ ...base, ...(options as object) })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it("the core entry's createClient without a store says what to pass (a bad baseUrl is told first)", () => {
    const { store: _, ...noStore } = base;
    expect(() => createClient(noStore)).toThrow(/has no default\. Pass one, e\.g\. `store: new PostgresStore/);
    expect(() => createClient({ ...noStore, baseUrl: 'api' })).toThrow(/absolute baseUrl/);
  });

  it('a profile name says where the profile values are', () => {
    expect(() => createClient({ ...base, profile: 'stripe' as never })).toThrow(
      /import \{ stripe \} from "oncely\/profiles"/,
    );
  });

  it.each([
    ['run()', (x: never) => run(x, async () => 'ok')],
    ['intentFetch()', (x: never) => intentFetch(x, 'pay', { method: 'POST' })],
  ])('%s given something else than an Intent: InvalidArgumentError, nothing sent', async (_what, call) => {
    for (const notAnIntent of [undefined, {}, { key: 'k', name: 'pay' }])
      await expect(call(notAnIntent as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it.each([
    ['a header value with a newline', { headers: { 'x-note': 'a\nb' } }],
    ['a BigInt in json', { json: { amount: 10n } }],
    ['both json and body', { json: {}, body: '{}' }],
    ['a body that is not a string', { body: { a: 1 } as unknown as string }],
  ])('%s: nothing sent, the intent still ready', async (_what, options) => {
    const intent = await createClient({ ...base, store: new MemoryStore() }).intent('pay');
    const error = await intent.post('payments', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OncelyError);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(intent.state).toBe('ready');
  });
});

describe('store failures are StoreErrors', () => {
  const never = (): Store => {
    const store = new MemoryStore();
    const hang = () => new Promise<never>(() => {});
    return Object.assign(Object.create(store), { claim: hang, update: hang, list: hang });
  };

  it('a store that never answers ends the call with a StoreError, never a hang', async () => {
    const client = createClient({ ...base, store: never(), storeTimeout: 50 });
    await expect(client.intent('pay')).rejects.toMatchObject({ code: 'STORE_FAILED', sent: false });
    await expect(client.pending()).rejects.toMatchObject({ code: 'STORE_FAILED' });
  });

  it('a store that never answers the write before the first attempt: StoreError, nothing sent', async () => {
    const store = new MemoryStore();
    const intent = await createClient({ ...base, store }).intent('pay');
    store.update = () => new Promise(() => {});
    let sent = 0;
    const client = createClient({
      ...base,
      store,
      storeTimeout: 50,
      fetch: async () => {
        sent++;
        return ok();
      },
    });
    const again = await client.intent('pay');
    await expect(again.post('payments', { json: {} })).rejects.toMatchObject({ code: 'STORE_FAILED', sent: false });
    expect(sent).toBe(0);
    expect(intent.key).toBe(again.key);
  });

  it('a store that throws: StoreError with the cause', async () => {
    const store = new MemoryStore();
    store.claim = async () => {
      throw new Error('SQLITE_FULL: database or disk is full');
    };
    const error = await createClient({ ...base, store })
      .intent('pay')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'STORE_FAILED', cause: { message: 'SQLITE_FULL: database or disk is full' } });
  });
});

describe('an unsent write the store answers only after storeTimeout: the message says what it may still do', () => {
  const setup = () => {
    const store = new FaultyStore();
    const keys: (string | null)[] = [];
    // Offline, nothing leaves (a refusal thrown by the app's own fetch would prove nothing).
    const network = {
      refuse: false,
      get online() {
        return !this.refuse;
      },
      onOnline: () => () => {},
    };
    const client = createClient({
      ...base,
      store,
      storeTimeout: 100,
      retry: { maxAttempts: 1 },
      network,
      offlineWait: 10,
      fetch: async (input) => {
        keys.push(new Request(input).headers.get('idempotency-key'));
        return ok();
      },
    });
    const stored = () => store.get('default', 'pay');
    return { store, keys, client, stored, network };
  };
  const within = (what: string) => `The store did not answer within 100 ms (${what}).`;
  const IN_FLIGHT =
    ' No request was sent, but the intent may stay in flight; send the same request under the same intent name once the store works.';

  it('the claim, formed anyway: intent() with the same name again finds it', async () => {
    const { store, client, stored } = setup();
    store.fault = { op: 'claim', kind: 'late', nth: 1 };
    await expect(client.intent('pay')).rejects.toMatchObject({
      code: 'STORE_FAILED',
      sent: false,
      message: `${within('forming the intent')} No request was sent, but the intent may be formed anyway: call intent() with the same name again; it finds it or forms it.`,
    });
    const formed = await stored();
    expect(formed?.state).toBe('ready');
    expect((await client.intent('pay')).key).toBe(formed?.key);
  });

  it('the in_flight write before the first byte, stored anyway: the same request again sends once, under its key', async () => {
    const { store, keys, client, stored } = setup();
    const intent = await client.intent('pay');
    store.fault = { op: 'update:in_flight', kind: 'late', nth: 1 };
    await expect(intent.post('payments', { json: {} })).rejects.toMatchObject({
      code: 'STORE_FAILED',
      sent: false,
      message: within('marking the intent in flight') + IN_FLIGHT,
    });
    expect(keys).toEqual([]);
    expect(await stored()).toMatchObject({ state: 'in_flight', key: intent.key }); // though nothing left
    await intent.post('payments', { json: {} });
    expect(keys).toEqual([`"${intent.key}"`]);
    expect((await stored())?.state).toBe('succeeded');
  });

  it('undoing a call that sent nothing, never done: the record stays in flight; the same request again sends once', async () => {
    const { store, keys, client, stored, network } = setup();
    const intent = await client.intent('pay');
    store.fault = { op: 'update:undo', kind: 'hang', nth: 1 };
    network.refuse = true;
    await expect(intent.post('payments', { json: {} })).rejects.toMatchObject({
      code: 'STORE_FAILED',
      sent: false,
      message: within('undoing an unsent call') + IN_FLIGHT,
    });
    expect((await stored())?.state).toBe('in_flight');
    network.refuse = false;
    await intent.post('payments', { json: {} });
    expect(keys).toEqual([`"${intent.key}"`]);
  });

  it('reset(), done anyway: reset() again resolves, and the name forms a new key', async () => {
    const { store, client, stored } = setup();
    const intent = await client.intent('pay');
    store.fault = { op: 'delete', kind: 'late', nth: 1 };
    await expect(intent.reset()).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: `${within('forgetting the intent')} It may be done anyway: call reset() again.`,
    });
    expect(await stored()).toBeUndefined();
    await intent.reset();
    expect((await client.intent('pay')).key).not.toBe(intent.key);
  });

  it('clear(), done anyway: clear() again resolves', async () => {
    const { store, client, stored } = setup();
    await client.intent('pay');
    store.fault = { op: 'clear', kind: 'late', nth: 1 };
    await expect(client.clear()).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: `${within('clearing the scope')} It may be done anyway: call clear() again.`,
    });
    expect(await stored()).toBeUndefined();
    await client.clear();
  });
});

describe('the error classes', () => {
  it('switch (error.code) narrows to the class', () => {
    const narrow = (error: AnyOncelyError) => {
      switch (error.code) {
        case 'KEY_REUSED':
          expectTypeOf(error).toEqualTypeOf<KeyReusedError>();
          return error.status;
        case 'HTTP_ERROR':
          expectTypeOf(error).toEqualTypeOf<HttpError>();
          return error.replayed;
        default:
          return undefined;
      }
    };
    expect(narrow).toBeTypeOf('function');
  });

  it('isOncelyError knows its errors, also across copies of the library (by brand)', () => {
    const error = new OncelyError('HTTP_ERROR', 'x');
    expect(isOncelyError(error)).toBe(true);
    expect(isOncelyError({ isOncelyError: true })).toBe(true);
    expect(isOncelyError(new Error('x'))).toBe(false);
    expect(isOncelyError(null)).toBe(false);
  });

  it('the key is readable as error.key but not enumerable, not in JSON, not in util.inspect', async () => {
    const store = new MemoryStore();
    const intent = await createClient({ ...base, store }).intent('pay');
    await intent.post('payments', { json: { a: 1 } });
    const error = (await intent.post('payments', { json: { a: 2 } }).catch((e: unknown) => e)) as OncelyError;
    expect(error.key).toBe(intent.key);
    expect(Object.keys(error)).not.toContain('key');
    expect(JSON.stringify(error)).not.toContain(intent.key);
    expect(inspect(error)).not.toContain(intent.key);
    expect(error.message).not.toContain(intent.key);
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ code: 'INTENT_MISMATCH', intent: 'pay' });
  });

  it('each class sets its name, code, fields and a message that says what to do', () => {
    const context = { intent: 'pay', scope: 's', key: 'k-secret', attempts: 2 };
    const headers = new Headers();
    const answer = { status: 503, headers, body: 'x' };
    const cases: [OncelyError, string, string, Record<string, unknown>, RegExp][] = [
      [
        new KeyReusedError({ status: 422, body: 'b' }, context),
        'KeyReusedError',
        'KEY_REUSED',
        { status: 422, body: 'b' },
        /HTTP 422.*new intent/,
      ],
      [
        new IntentMismatchError({ ...context, changed: ['body'] }),
        'IntentMismatchError',
        'INTENT_MISMATCH',
        { changed: ['body'] },
        /Changed: body\.$/,
      ],
      [
        new OutcomeUnknownError({ ...context, lastAnswer: answer }),
        'OutcomeUnknownError',
        'OUTCOME_UNKNOWN',
        { lastAnswer: answer },
        /after 2 attempt\(s\).*HTTP 503.*resume safely/,
      ],
      [
        new InProgressError(context),
        'InProgressError',
        'IN_PROGRESS',
        { holder: 'server', lastAnswer: undefined },
        /still reports intent "pay" as in progress/,
      ],
      [
        new InProgressError({ ...context, holder: 'client' }),
        'InProgressError',
        'IN_PROGRESS',
        { holder: 'client' },
        /^Another client .* Try again later/,
      ],
      [
        new IntentExpiredError({ ...context, createdAt: 5, keyTtl: 10 }),
        'IntentExpiredError',
        'INTENT_EXPIRED',
        { createdAt: 5, reason: 'expired' },
        /older than its retention \(10 ms\)/,
      ],
      [
        new IntentExpiredError({ ...context, createdAt: 5, keyTtl: 10, reason: 'clock' }),
        'IntentExpiredError',
        'INTENT_EXPIRED',
        { reason: 'clock' },
        /minted in the future/,
      ],
      [new IntentGoneError(context), 'IntentGoneError', 'INTENT_GONE', {}, /client\.intent\(name\)/],
      [
        new HttpError({ ...answer, status: 404, replayed: true }, context),
        'HttpError',
        'HTTP_ERROR',
        { status: 404, headers, body: 'x', replayed: true },
        /HTTP 404 \(replayed by the server\)/,
      ],
      [
        new TransportError({ ...context, cause: new Error('boom') }),
        'TransportError',
        'TRANSPORT_FAILED',
        {},
        /failed: boom\./,
      ],
      [
        new RedirectError({ status: 302, location: '/x' }, context),
        'RedirectError',
        'REDIRECT',
        { status: 302, location: '/x' },
        /HTTP 302 to \/x.*baseUrl/,
      ],
      [new NotSentError(context), 'NotSentError', 'NOT_SENT', {}, /safe to send it again/],
      [
        new CancelledError({ ...context, sent: true }),
        'CancelledError',
        'CANCELLED',
        { sent: true },
        /after an attempt went out/,
      ],
      [
        new CancelledError({ ...context, sent: false }),
        'CancelledError',
        'CANCELLED',
        { sent: false },
        /before anything was sent/,
      ],
      [
        new ResponseValidationError({ status: 200, body: 1 }, [{ message: 'bad' }], context),
        'ResponseValidationError',
        'RESPONSE_VALIDATION',
        { status: 200, body: 1, issues: [{ message: 'bad' }] },
        /HTTP 200: bad/,
      ],
      [
        new InvalidKeyError('it is empty', context),
        'InvalidKeyError',
        'INVALID_KEY',
        {},
        /^Invalid idempotency key: it is empty\. Nothing was sent\.$/,
      ],
      [new InvalidArgumentError('Bad x.', context), 'InvalidArgumentError', 'INVALID_ARGUMENT', {}, /^Bad x\.$/],
      [
        new CorruptRecordError({ ...context, location: 'there', reason: 'why' }),
        'CorruptRecordError',
        'CORRUPT_RECORD',
        { location: 'there', reason: 'why' },
        /corrupt \(why\).* It was moved to there\.$/,
      ],
      [
        new StoreError('The store failed.', context),
        'StoreError',
        'STORE_FAILED',
        { sent: false },
        /^The store failed\.$/,
      ],
    ];
    for (const [error, name, code, fields, text] of cases) {
      expect(error).toBeInstanceOf(OncelyError);
      expect(error).toBeInstanceOf(Error);
      expect(error).toMatchObject({ name, code, intent: 'pay', scope: 's', attempts: 2, ...fields });
      expect(error.message).toMatch(text);
      expect(error.key).toBe('k-secret');
      expect(Object.keys(error)).not.toContain('key');
      expect(error.message).not.toContain('k-secret');
    }
    expect(new InProgressError(context)).toBeInstanceOf(OutcomeUnknownError);
    expect(new StoreError('x', { cause: 'c' }).cause).toBe('c');
    expect('cause' in new StoreError('x')).toBe(false);
  });

  it('error.name stays the class name in a minified bundle (minifiers rename classes)', async () => {
    const { build } = await import('esbuild');
    const result = await build({
      stdin: {
        contents: `export * from './src/errors.ts';`,
        resolveDir: process.cwd(),
        loader: 'ts',
      },
      bundle: true,
      minify: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      logLevel: 'silent',
    });
    const errors = (await import(
      `data:text/javascript;base64,${Buffer.from(result.outputFiles[0]!.text).toString('base64')}`
    )) as typeof import('../../src/errors.js');
    const context = { intent: 'pay' };
    const made = [
      new errors.OncelyError('STORE_FAILED', 'x'),
      new errors.NotSentError(context),
      new errors.IntentGoneError(context),
      new errors.InProgressError(context),
      new errors.OutcomeUnknownError(context),
      new errors.StoreError('x', context),
      new errors.InvalidArgumentError('x', context),
    ];
    expect(made.map((e) => e.name)).toEqual([
      'OncelyError',
      'NotSentError',
      'IntentGoneError',
      'InProgressError',
      'OutcomeUnknownError',
      'StoreError',
      'InvalidArgumentError',
    ]);
    expect(made.map((e) => e.constructor.name)).not.toEqual(made.map((e) => e.name)); // the bundle did rename them
    expect(String(made[1]!.stack)).toMatch(/^NotSentError: /);
    class AppError extends errors.OncelyError {}
    expect(new AppError('STORE_FAILED', 'y').name).toBe('AppError');
  });
});
