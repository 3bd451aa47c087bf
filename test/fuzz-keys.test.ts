/**
 * Caller-supplied keys and intent names of every kind. A key is either rejected with
 * `InvalidKeyError` before anything is stored or sent, or it reaches the server intact:
 * the contract mock decodes exactly the key the client stored (ietf: a Structured Field
 * string with `"` and `\` escaped). Intent names: empty or too long is an
 * `InvalidArgumentError`, and so is a lone surrogate (UTF-8 stores would merge two of them
 * into one U+FFFD); anything else (unicode, slashes, `..`, NUL) is its own intent, in
 * memory and on disk.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../node/sqlite-store.js';
import {
  createClient,
  InvalidArgumentError,
  InvalidKeyError,
  MAX_INTENT_NAME_LENGTH,
  MAX_KEY_LENGTH,
  MemoryStore,
  type Store,
} from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { profiles } from '../src/profiles/index.js';
import { serializeSfString } from '../src/profiles/sf-string.js';
import { settled } from './chaos/harness.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => {
  restore();
  console.log(`fuzz-keys: ${tried.keys + tried.names} keys and intent names tried`);
});

const tried = { keys: 0, names: 0 };

/** No lone surrogate (what `String.prototype.isWellFormed` says). */
const wellFormed = (text: string) =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);

const validKey = (key: string) =>
  key.length >= 1 && key.length <= MAX_KEY_LENGTH && /^[\x20-\x7e]+$/.test(key) && key.trim() === key;

/** Keys: printable ASCII heavy on quotes, backslashes and spaces; and anything else. */
const keyArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', '\\', ' ', 'a', 'Z', '0', '-', '=', ',', ';', '(', ')'), maxLength: 40 }),
  fc.string({ unit: 'binary-ascii', minLength: 0, maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', '"', '\\', '\\"', '""', 'é', '🔑', 'a\nb', 'a\tb', '\0', 'k'.repeat(255), 'k'.repeat(256)),
);

function wireClient(profile: 'ietf' | 'stripe') {
  const contract = createContractServer({
    now: () => Date.now(),
    keyFormat: profile === 'stripe' ? 'bare' : 'sf-string',
  });
  const store = new MemoryStore();
  const client = createClient({
    baseUrl: 'https://api.test/',
    store,
    profile: profiles[profile],
    fetch: contract.fetch as typeof fetch,
    now: () => Date.now(),
    retry: { maxAttempts: 1 },
  });
  return { contract, store, client };
}

describe('caller keys', () => {
  it('ietf: rejected before anything is stored or sent, or decoded by the server as the same key', {
    timeout: chaosTimeout(60_000),
  }, async () => {
    await fc.assert(
      fc.asyncProperty(keyArb, async (key) => {
        tried.keys++;
        const { contract, store, client } = wireClient('ietf');
        const formed = await drive(settled(client.intent('pay', { key })));
        if (!validKey(key)) {
          expect(formed.ok).toBe(false);
          expect((formed as { error: unknown }).error).toBeInstanceOf(InvalidKeyError);
          expect(await drive(store.list('default'))).toEqual([]);
          expect(contract.requests).toHaveLength(0);
          return;
        }
        expect(formed.ok, `key ${JSON.stringify(key)} was refused`).toBe(true);
        const intent = (formed as { value: Awaited<ReturnType<typeof client.intent>> }).value;
        const res = await drive(intent.post('payments', { json: { amount: 1 } }));
        expect(res.key).toBe(key);
        expect(contract.requests.map((r) => r.key)).toEqual([key]);
        expect(contract.effects(key)).toBe(1);
        expect(serializeSfString(key)).toMatch(/^".*"$/);
      }),
      chaosParameters(1000, 0.1),
    );
  });

  it('fixed cases: quotes, backslashes, edges of the length limit, non-ASCII, controls', async () => {
    const cases: [string, boolean][] = [
      ['a"b', true],
      ['a\\b', true],
      ['\\"', true],
      ['"', true],
      ['""', true],
      ['\\', true],
      ['k'.repeat(255), true],
      ['x y', true],
      [' x', false],
      ['x ', false],
      [' ', false],
      ['', false],
      ['k'.repeat(256), false],
      ['é', false],
      ['🔑', false],
      ['a\nb', false],
      ['a\tb', false],
      ['\0', false],
      ['\x7f', false],
    ];
    for (const [key, ok] of cases) {
      tried.keys++;
      const { contract, client } = wireClient('ietf');
      const formed = await drive(settled(client.intent('pay', { key })));
      expect(formed.ok, JSON.stringify(key)).toBe(ok);
      if (!ok) {
        expect((formed as { error: unknown }).error).toBeInstanceOf(InvalidKeyError);
        continue;
      }
      await drive((formed as { value: Awaited<ReturnType<typeof client.intent>> }).value.post('p', { json: {} }));
      expect(contract.requests[0]?.key, JSON.stringify(key)).toBe(key);
    }
  });

  it('a caller key is never swapped for a new one: an intent that has a key keeps it', async () => {
    const { client } = wireClient('ietf');
    await drive(client.intent('pay', { key: 'first' }));
    const again = await drive(settled(client.intent('pay', { key: 'second' })));
    expect((again as { error: unknown }).error).toBeInstanceOf(InvalidKeyError);
    expect((await drive(client.intent('pay'))).key).toBe('first');
  });

  it('stripe (bare keys): every valid key reaches the server intact', { timeout: chaosTimeout(60_000) }, async () => {
    await fc.assert(
      fc.asyncProperty(keyArb, async (key) => {
        tried.keys++;
        if (!validKey(key)) return;
        const { contract, client } = wireClient('stripe');
        const intent = await drive(client.intent('pay', { key }));
        await drive(intent.post('charges', { json: {} }));
        expect(contract.requests.map((r) => r.key)).toEqual([key]);
      }),
      chaosParameters(500, 0.05),
    );
  });
});

describe('intent names', () => {
  it('empty, too long or not a string: InvalidArgumentError, nothing stored', async () => {
    const { store, client } = wireClient('ietf');
    for (const name of [
      '',
      'n'.repeat(MAX_INTENT_NAME_LENGTH + 1),
      'n'.repeat(1_000_000),
      undefined,
      42,
      null,
      '\ud800',
      'a\udc00',
    ]) {
      tried.names++;
      const formed = await drive(settled(client.intent(name as string)));
      expect((formed as { error: unknown }).error).toBeInstanceOf(InvalidArgumentError);
    }
    expect(await drive(store.list('default'))).toEqual([]);
    const longest = await drive(client.intent('n'.repeat(MAX_INTENT_NAME_LENGTH)));
    expect(longest.name).toHaveLength(MAX_INTENT_NAME_LENGTH);
  });

  describe.each([
    ['MemoryStore', async () => ({ store: new MemoryStore() as Store, done: async () => {} })],
    [
      'SqliteStore',
      async () => {
        const dir = await mkdtemp(path.join(tmpdir(), 'oncely-names-'));
        return {
          store: new SqliteStore({ dir, fsync: false }) as Store,
          done: () => rm(dir, { recursive: true, force: true }),
        };
      },
    ],
  ])('%s', (_label, open) => {
    it('any two distinct names (and scopes) are two intents with two keys; the same name is one', {
      timeout: chaosTimeout(60_000),
    }, async () => {
      const nameArb = fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
        fc.constantFrom(
          '..',
          '../..',
          '/',
          '\\',
          '\0',
          'a/b',
          'CON',
          'nul',
          '.',
          ' ',
          '\ud800',
          '\udc00',
          '\ud800\udc00',
        ),
      );
      const { store, done } = await open();
      try {
        await fc.assert(
          fc.asyncProperty(nameArb, nameArb, fc.constantFrom('s', 's2', '["s"]', 's"'), async (a, b, scope) => {
            tried.names += 2;
            const client = createClient({ baseUrl: 'https://api.test/', store, scope, now: () => Date.now() });
            if (!wellFormed(a) || !wellFormed(b)) {
              const bad = wellFormed(a) ? b : a;
              await expect(drive(client.intent(bad))).rejects.toBeInstanceOf(InvalidArgumentError);
              expect(await drive(store.list(scope))).toEqual([]);
              return;
            }
            const [ia, ib, ia2] = await drive(Promise.all([client.intent(a), client.intent(b), client.intent(a)]));
            expect(ia!.key).toBe(ia2!.key);
            if (a === b) expect(ia!.key).toBe(ib!.key);
            else expect(ia!.key).not.toBe(ib!.key);
            expect((await drive(store.get(scope, a)))?.name).toBe(a);
            expect((await drive(store.get(scope, b)))?.name).toBe(b);
            await drive(store.clear(scope));
          }),
          chaosParameters(150, 0.01),
        );
      } finally {
        await done();
      }
    });
  });
});
