/**
 * Scope isolation: a client of scope A can never read, reuse or clear scope B's intents,
 * whatever the scope strings look like (prefixes of each other, JSON-looking, unicode,
 * quotes), in every store: memory, SQLite, IndexedDB.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IDBFactory } from 'fake-indexeddb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdbStore } from '../browser/idb-store.js';
import { SqliteStore } from '../node/sqlite-store.js';
import { createClient, MemoryStore, type Store } from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { settled } from './chaos/harness.js';
import { chaosParameters, chaosTimeout } from './chaos/runs.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => restore());

type Opened = { store: Store; done: () => Promise<void> };
const stores: [string, () => Promise<Opened>][] = [
  ['MemoryStore', async () => ({ store: new MemoryStore(), done: async () => {} })],
  [
    'SqliteStore',
    async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'oncely-scope-'));
      return { store: new SqliteStore({ dir, fsync: false }), done: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  [
    'IdbStore',
    async () => {
      const store = new IdbStore({ indexedDB: new IDBFactory() });
      return { store, done: () => store.close() };
    },
  ],
];

const scopeArb = fc.oneof(
  fc.constantFrom('alice', 'alic', 'alice ', 'Alice', '["alice"]', 'alice"', 'alice\\', 'a/b', '..', '0', 'default'),
  // Scopes must be well-formed Unicode (createClient refuses lone surrogates).
  fc
    .string({ unit: 'binary', minLength: 1, maxLength: 30 })
    .filter((scope) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(scope)),
);

describe.each(stores)('%s', (_label, open) => {
  it('alice and bob over one store: own keys, own pending list, clear() leaves the other', async () => {
    const { store, done } = await open();
    try {
      const contract = createContractServer({ now: () => Date.now() });
      const make = (scope: string) =>
        createClient({
          baseUrl: 'https://api.test/',
          scope,
          store,
          fetch: contract.fetch as typeof fetch,
          now: () => Date.now(),
          retry: { maxAttempts: 1 },
        });
      const alice = make('alice');
      const bob = make('bob');
      const bobs = await drive(bob.intent('checkout:1'));
      contract.inject({ fault: 'drop-after-commit' });
      await drive(settled(bobs.post('payments', { json: { amount: 1 } })));
      expect(bobs.state).toBe('unknown');

      // alice cannot see bob's pending intent, and the same name is her own intent with her own key.
      expect(await drive(alice.pending())).toEqual([]);
      const alices = await drive(alice.intent('checkout:1'));
      expect(alices.key).not.toBe(bobs.key);
      expect(alices.state).toBe('ready');
      await drive(alices.post('payments', { json: { amount: 1 } }));
      expect(contract.requests.map((r) => r.key)).toEqual([bobs.key, alices.key]);

      // alice clears her scope (logout): bob's intent, key and pending state stay.
      await drive(alice.clear());
      expect(await drive(store.list('alice'))).toEqual([]);
      const pending = await drive(bob.pending());
      expect(pending.map((p) => [p.name, p.key, p.state])).toEqual([['checkout:1', bobs.key, 'unknown']]);
      expect((await drive(bob.intent('checkout:1'))).key).toBe(bobs.key);
    } finally {
      await done();
    }
  });

  it('any two scopes: list, get and clear of one never touch the other', {
    timeout: chaosTimeout(60_000),
  }, async () => {
    const { store, done } = await open();
    try {
      await fc.assert(
        fc.asyncProperty(scopeArb, scopeArb, fc.string({ minLength: 1, maxLength: 20 }), async (a, b, name) => {
          fc.pre(a !== b);
          const ca = createClient({ baseUrl: 'https://api.test/', scope: a, store, now: () => Date.now() });
          const cb = createClient({ baseUrl: 'https://api.test/', scope: b, store, now: () => Date.now() });
          const [ia, ib] = await drive(Promise.all([ca.intent(name), cb.intent(name)]));
          expect(ia!.key).not.toBe(ib!.key);
          expect((await drive(store.list(a))).map((r) => r.key)).toEqual([ia!.key]);
          expect((await drive(store.list(b))).map((r) => r.key)).toEqual([ib!.key]);
          await drive(ca.clear());
          expect(await drive(store.list(a))).toEqual([]);
          expect((await drive(store.get(b, name)))?.key).toBe(ib!.key);
          await drive(cb.clear());
        }),
        chaosParameters(60, 0.002),
      );
    } finally {
      await done();
    }
  });
});
