/**
 * What must never leak: request and response bodies (and headers) into the store; keys
 * into the console; keys from a predictable source.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { inspect } from 'node:util';
import { IDBFactory } from 'fake-indexeddb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { IdbStore } from '../browser/idb-store.js';
import { SqliteStore } from '../node/sqlite-store.js';
import { type Client, createClient, MemoryStore, run, type Store } from '../src/index.js';
import { derivedKeys } from '../src/intent/derived-keys.js';
import { mintKey } from '../src/intent/keys.js';
import { type ContractServer, createContractServer } from '../src/mock/index.js';
import { settled } from './chaos/harness.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

/** A damaged row in the store's database, written behind its back. */
function strayRow(dir: string, text: string) {
  const db = new DatabaseSync(path.join(dir, 'intents.db'));
  db.prepare("INSERT OR REPLACE INTO intents VALUES ('acct_1', 'stray', 'unknown', 0, ?)").run(text);
  db.close();
}

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => restore());
afterEach(() => {
  vi.restoreAllMocks();
});

const SECRET_BODY = 'card-4242424242424242-cvc-917-SECRET';
const SECRET_TOKEN = 'Bearer sk_live_SECRET_TOKEN_51Hx';
const SECRET_RESPONSE = 'client_secret_pi_SECRET_RESPONSE';
const SECRET_RUN = 'run-request-SECRET-payload';
const SECRETS = [SECRET_BODY, SECRET_TOKEN, SECRET_RESPONSE, SECRET_RUN, 'SECRET'];

/** Every path that writes a record: success, replay, 422, stored 500, unknown, schema failure, run(). */
async function gauntlet(client: Client, contract: ContractServer): Promise<string[]> {
  const keys: string[] = [];
  const body = { card: SECRET_BODY, amount: 4200 };
  const post = async (name: string, options: Record<string, unknown> = {}) => {
    const intent = await drive(client.intent(name));
    keys.push(intent.key);
    await drive(settled(intent.post('payments', { json: body, headers: { authorization: SECRET_TOKEN }, ...options })));
    return intent;
  };
  await post('ok');
  contract.inject({ fault: 'drop-after-commit' });
  await post('replayed');
  contract.inject({ fault: 'drop-after-commit' }, { fault: 'fail-before-commit', times: 10 });
  await post('unknown');
  contract.inject({ fault: 'status', status: 500, body: { secret: SECRET_RESPONSE }, store: true });
  await post('stored-500');
  await post('schema', { schema: z.object({ nope: z.number() }) });
  const reused = await drive(client.intent('reused', { key: keys[0]! }));
  await drive(settled(reused.post('payments', { json: { card: `${SECRET_BODY}-other` } })));
  const viaRun = await drive(client.intent('run'));
  keys.push(viaRun.key);
  await drive(run(viaRun, async () => ({ secret: SECRET_RESPONSE }), { request: { secret: SECRET_RUN } }));
  return keys;
}

function serverWithSecretResponses() {
  return createContractServer({
    now: () => Date.now(),
    routes: {
      'POST /payments': ({ json }) => ({ status: 201, body: { ...(json as object), secret: SECRET_RESPONSE } }),
    },
  });
}

const clientOver = (store: Store, contract: ContractServer, extra: Record<string, unknown> = {}) =>
  createClient({
    baseUrl: 'https://api.test/',
    scope: 'acct_1',
    store,
    fetch: contract.fetch as typeof fetch,
    headers: () => ({ authorization: SECRET_TOKEN }),
    now: () => Date.now(),
    retry: { maxAttempts: 3, baseDelay: 1, maxDelay: 5 },
    ...extra,
  });

const expectNoSecret = (dump: string, where: string) => {
  for (const secret of SECRETS) expect(dump.includes(secret), `${where} holds ${secret}`).toBe(false);
};

describe('no request or response bodies in the store', () => {
  it('MemoryStore: records hold key, fingerprint, state, timestamps, ttl, attempts, status and a lease only', async () => {
    const store = new MemoryStore();
    const contract = serverWithSecretResponses();
    await gauntlet(clientOver(store, contract), contract);
    const records = await drive(store.list('acct_1'));
    expect(records.length).toBeGreaterThanOrEqual(6);
    for (const record of records) {
      expect(
        Object.keys(record).every((k) =>
          [
            'v',
            'scope',
            'name',
            'key',
            'state',
            'fingerprint',
            'attempts',
            'createdAt',
            'updatedAt',
            'ttl',
            'status',
            'lease',
          ].includes(k),
        ),
      ).toBe(true);
    }
    expectNoSecret(JSON.stringify(records), 'MemoryStore');
  });

  it('SqliteStore: no file under the store directory (database, WAL, quarantine) holds a secret', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'oncely-secrets-'));
    try {
      const store = new SqliteStore({ dir, fsync: false });
      const contract = serverWithSecretResponses();
      await gauntlet(clientOver(store, contract), contract);
      // A corrupt row quarantined on the way must not drag anything in either.
      strayRow(dir, '{"oops":');
      await drive(store.list('acct_1'));
      await drive(store.close());
      let files = 0;
      for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
        const file = path.join(entry.parentPath, entry.name);
        expectNoSecret(file, 'a file name');
        if (!entry.isFile()) continue;
        files++;
        expectNoSecret((await readFile(file)).toString('latin1'), file);
      }
      expect(files).toBeGreaterThanOrEqual(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('IdbStore: no value or key in the object store holds a secret', async () => {
    const factory = new IDBFactory();
    const store = new IdbStore({ indexedDB: factory, now: () => Date.now() });
    const contract = serverWithSecretResponses();
    await gauntlet(clientOver(store, contract), contract);
    await drive(store.close());
    const dump = await drive(
      new Promise<string>((resolve, reject) => {
        const request = factory.open('oncely');
        request.onerror = () => reject(request.error);
        request.onsuccess = () => {
          const db = request.result;
          const names = Array.from(db.objectStoreNames);
          const tx = db.transaction(names, 'readonly');
          const parts: unknown[] = [];
          for (const name of names) {
            const os = tx.objectStore(name);
            const keys = os.getAllKeys();
            const values = os.getAll();
            values.onsuccess = () => parts.push(keys.result, values.result);
          }
          tx.oncomplete = () => {
            db.close();
            resolve(JSON.stringify(parts));
          };
        };
      }),
    );
    expect(dump.length).toBeGreaterThan(100);
    expectNoSecret(dump, 'IndexedDB');
  });
});

describe('keys are not written to the console', () => {
  it('no console call during normal operation and failures carries a key', async () => {
    const methods = ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const;
    const spies = methods.map((method) => vi.spyOn(console, method).mockImplementation(() => {}));
    const dir = await mkdtemp(path.join(tmpdir(), 'oncely-logs-'));
    try {
      const contract = serverWithSecretResponses();
      const keys: string[] = [];
      for (const store of [new MemoryStore(), new SqliteStore({ dir, fsync: false })]) {
        const client = clientOver(store, contract);
        // A listener that throws: the library reports it, without the key.
        client.on('success', () => {
          throw new Error('listener bug');
        });
        keys.push(...(await gauntlet(client, contract)));
        const intent = await drive(client.intent('aborted'));
        keys.push(intent.key);
        const controller = new AbortController();
        contract.inject({ fault: 'hang' });
        const pending = drive(settled(intent.post('payments', { json: {}, signal: controller.signal })));
        controller.abort(new Error('user left'));
        await pending;
        await drive(settled(intent.post('payments', { json: { changed: true } })));
      }
      // A quarantined row, and an expired intent.
      strayRow(dir, 'garbage');
      const late = clientOver(new SqliteStore({ dir, fsync: false }), contract, { keyTtl: 1 });
      await drive(settled(late.pending()));
      await drive(
        settled((await drive(late.intent('unknown'))).post('payments', { json: { card: SECRET_BODY, amount: 4200 } })),
      );
      expect(keys.length).toBeGreaterThan(10);
      const logged = spies.flatMap((spy) =>
        spy.mock.calls.map((args) => args.map((a) => inspect(a, { depth: 10 })).join(' ')),
      );
      for (const line of logged)
        for (const key of keys) expect(line.includes(key), `console got a key: ${line}`).toBe(false);
      // The throwing listener was reported (so the spy did see calls), just not with a key.
      expect(logged.some((line) => line.includes('listener'))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('keys come from a cryptographic RNG', () => {
  it('with Math.random stuck and the clock frozen, every minted key still differs; crypto.getRandomValues is used', async () => {
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const crypto = vi.spyOn(globalThis.crypto, 'getRandomValues');
    vi.setSystemTime(Date.parse('2026-11-30T12:00:00Z'));
    for (const kind of ['v7', 'v4'] as const) {
      const keys = new Set(Array.from({ length: 2_000 }, () => mintKey(kind, 's', 'n')));
      expect(keys.size, kind).toBe(2_000);
    }
    expect(crypto).toHaveBeenCalled();
    expect(random).not.toHaveBeenCalled();
    // Through the client too: two clients, same scope and name, same instant, separate stores.
    const a = await drive(createClient({ baseUrl: 'https://api.test/', store: new MemoryStore() }).intent('n'));
    const b = await drive(createClient({ baseUrl: 'https://api.test/', store: new MemoryStore() }).intent('n'));
    expect(a.key).not.toBe(b.key);
    expect(random).not.toHaveBeenCalled();
  });

  it('derived keys are deterministic by design: never shared across scopes or names', () => {
    expect(mintKey(derivedKeys, 'acct_1', 'job:1')).toBe(mintKey(derivedKeys, 'acct_1', 'job:1'));
    expect(mintKey(derivedKeys, 'acct_1', 'job:1')).not.toBe(mintKey(derivedKeys, 'acct_2', 'job:1'));
    expect(mintKey(derivedKeys, 'acct_1', 'job:1')).not.toBe(mintKey(derivedKeys, 'acct_1', 'job:2'));
    expect(mintKey(derivedKeys, 'a","b', 'c')).not.toBe(mintKey(derivedKeys, 'a', 'b","c'));
  });
});
