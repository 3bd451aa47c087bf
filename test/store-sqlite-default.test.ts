/** The default store of `createClient` from `oncely` in Node: SQLite in the state directory, one per file per process. */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../node/default.js';
import { openSqliteStore } from '../node/sqlite-store.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

const saved = process.env.ONCELY_STATE_DIR;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (saved === undefined) delete process.env.ONCELY_STATE_DIR;
  else process.env.ONCELY_STATE_DIR = saved;
});

describe('createClient in Node', () => {
  it('keeps keys in intents.db of the state directory, one store shared by the clients of the process', async () => {
    const { dir, remove } = await tempStoreDir();
    cleanups.push(remove);
    process.env.ONCELY_STATE_DIR = dir;
    const a = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    const b = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    const [first, second] = await Promise.all([a.intent('checkout:1'), b.intent('checkout:1')]);
    expect(second.key).toBe(first.key);
    await a.close();
    // The other client keeps working after the first one closed.
    expect((await b.intent('checkout:1')).key).toBe(first.key);
    expect((await b.intent('checkout:2')).key).not.toBe(first.key);
    await b.close();
    const store = await openSqliteStore({ dir });
    expect(store.file).toBe(path.join(dir, 'intents.db'));
    expect((await store.get('u1', 'checkout:1'))?.key).toBe(first.key);
    await store.close();
    // A client made after every other closed opens the store again.
    const c = createClient({ baseUrl: 'https://api.test/', scope: 'u1' });
    expect((await c.intent('checkout:1')).key).toBe(first.key);
    await c.close();
  });
});
