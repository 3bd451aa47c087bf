/** Every error is an OncelyError: bad options, bad input, a store that fails or never answers; keys stay out of logs. */
import { inspect } from 'node:util';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AnyOncelyError,
  createClient,
  type HttpError,
  isOncelyError,
  type KeyReusedError,
  MemoryStore,
  OncelyError,
  type Store,
} from '../../src/index.js';

const ok = async () => new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
const base = { baseUrl: 'https://api.test/', store: new MemoryStore(), fetch: ok };

describe('bad options and input are InvalidArgumentErrors', () => {
  it.each([
    ['a deadline above 2^31-1 ms', { retry: { deadline: 2 ** 31 } }],
    ['a timeout above 2^31-1 ms', { retry: { timeout: 2 ** 31 } }],
    ['an unknown retry option', { retry: { limit: 3 } }],
    ['an unknown profile name', { profile: 'acme' }],
    ['a profile object without classify', { profile: { name: 'x', header: 'K', encodeKey: (k: string) => k } }],
    ['a storeTimeout of 0', { storeTimeout: 0 }],
    ['unknown key kinds', { keys: 'v1' }],
  ])('%s', (_what, options) => {
    expect(() => createClient({ ...base, ...(options as object) })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
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
});
