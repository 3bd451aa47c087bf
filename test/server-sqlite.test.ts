/**
 * oncely/server on SQLite (real files in a temp dir, WAL, synchronous=FULL): the key row,
 * the app's ledger row and the stored answer commit together or not at all; N concurrent
 * requests with one key run once, the others get 409 at once; requests with other keys
 * never share a transaction (one's rollback leaves the others' rows); 422 while in
 * progress; retention; the schema; the transaction handle's limits.
 */

import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteKeyStore, SqliteKeyStore, type SqliteTransaction } from '../node/sqlite-key-store.js';
import { createIdempotency, once } from '../src/server/index.js';
import { tempStoreDir } from './fixtures/store-dirs.js';

let dir = '';
let remove = async () => {};
beforeAll(async () => {
  ({ dir, remove } = await tempStoreDir());
});
afterAll(() => remove());

const stores: SqliteKeyStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

let files = 0;
/** A store on a fresh file with the app's ledger table. */
async function fresh(options: { transactionTimeout?: number } = {}) {
  const file = path.join(dir, `shop-${++files}.db`);
  const store = await openSqliteKeyStore({ file, autoMaintain: false, ...options });
  stores.push(store);
  await store.transaction((tx) =>
    tx.exec(
      'CREATE TABLE ledger (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL)',
    ),
  );
  // The test's own connection: what committed, as another reader of the file sees it.
  const look = new DatabaseSync(file, { readOnly: true });
  const count = (sql: string, ...values: string[]) => Number(look.prepare(sql).get(...values)!.n);
  return {
    file,
    store,
    look,
    ledgerRows: (key: string) => count('SELECT count(*) AS n FROM ledger WHERE key = ?', key),
    keyRows: (key: string) => count('SELECT count(*) AS n FROM oncely_server_keys WHERE key = ?', key),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function post(key: string, body: unknown): Request {
  return new Request('https://shop.test/payments', {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json', 'x-account': 'acct' },
    body: JSON.stringify(body),
  });
}

/** A payments route whose handler writes the ledger in the key's transaction, then may wait or fail. */
function app(store: SqliteKeyStore, behaviour: { sleep?: number; fail?: (key: string) => boolean } = {}) {
  const idempotency = createIdempotency({ store, scope: (request) => request.headers.get('x-account') ?? '' });
  return idempotency.route('POST /payments', async ({ tx, json, key, scope }) => {
    const { amount } = json as { amount: number };
    const { id } = tx.get<{ id: number }>(
      'INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?) RETURNING id',
      scope,
      key,
      amount,
    )!;
    if (behaviour.sleep) await sleep(behaviour.sleep);
    if (behaviour.fail?.(key)) throw new Error('handler failed after its write');
    return { status: 201, headers: { location: `/payments/${id}` }, body: { id, amount } };
  });
}

describe('SqliteKeyStore: schema', () => {
  it('creates its tables in the app’s file (WAL), once; a file of a newer schema is refused untouched', async () => {
    const { file, look } = await fresh();
    expect(look.prepare('PRAGMA journal_mode').get()!.journal_mode).toBe('wal');
    expect(look.prepare('SELECT version FROM oncely_server_migrations').all()).toEqual([{ version: 1 }]);
    const again = await openSqliteKeyStore({ file, autoMaintain: false });
    stores.push(again);
    expect(look.prepare('SELECT count(*) AS n FROM oncely_server_migrations').get()!.n).toBe(1);
    const edit = new DatabaseSync(file);
    edit.exec(`INSERT INTO oncely_server_migrations VALUES (99, 'from the future', 0)`);
    edit.close();
    await expect(openSqliteKeyStore({ file })).rejects.toThrow(/version 99, newer/);
  });

  it('refuses a retention under 24 h and an in-memory database', () => {
    expect(() => new SqliteKeyStore({ file: path.join(dir, 'x.db'), retentionMs: 3_600_000 })).toThrow(/24 h/);
    expect(() => new SqliteKeyStore({ file: ':memory:' })).toThrow(/file/);
  });
});

describe('SqliteKeyStore: one transaction', () => {
  it('runs once: ledger row, key row and answer commit together; the repeat replays byte for byte', async () => {
    const { store, ledgerRows, keyRows } = await fresh();
    const payments = app(store);
    const first = await payments(post('one', { amount: 100 }));
    expect(first.status).toBe(201);
    const bytes = new Uint8Array(await first.arrayBuffer());
    const replay = await payments(post('one', { amount: 100 }));
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));
    expect(new Uint8Array(await replay.arrayBuffer())).toEqual(bytes);
    expect((await payments(post('one', { amount: 101 }))).status).toBe(422);
    expect(await ledgerRows('one')).toBe(1);
    expect(await keyRows('one')).toBe(1);
  });

  it('a handler that throws after its write: neither ledger row nor key row; the next attempt runs once', async () => {
    const { store, ledgerRows, keyRows } = await fresh();
    await expect(app(store, { fail: () => true })(post('throws', { amount: 1 }))).rejects.toThrow('handler failed');
    expect(ledgerRows('throws')).toBe(0);
    expect(keyRows('throws')).toBe(0);
    const payments = app(store);
    expect((await payments(post('throws', { amount: 1 }))).status).toBe(201);
    expect((await payments(post('throws', { amount: 1 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(ledgerRows('throws')).toBe(1);
  });

  it('requests with other keys never share a transaction: a rollback leaves the others’ rows', async () => {
    const { store, look } = await fresh();
    const failing = (key: string) => Number(key.slice(1)) % 3 === 0;
    const payments = app(store, { sleep: 5, fail: failing });
    const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
    const settled = await Promise.allSettled(keys.map((key) => payments(post(key, { amount: 1 }))));
    const ran = keys.filter((_, i) => settled[i]!.status === 'fulfilled');
    expect(ran).toEqual(keys.filter((key) => !failing(key)));
    const ledger = look.prepare('SELECT key FROM ledger ORDER BY id').all();
    expect(ledger.map((row) => row.key).sort()).toEqual([...ran].sort());
    const stored = look.prepare('SELECT key FROM oncely_server_keys').all();
    expect(stored.map((row) => row.key).sort()).toEqual([...ran].sort());
  });

  it('the transaction handle refuses COMMIT and ROLLBACK, and dies when the handler returns', async () => {
    const { store, ledgerRows, keyRows } = await fresh();
    let kept: SqliteTransaction | undefined;
    const idempotency = createIdempotency({ store });
    const commits = idempotency.route('POST /payments', ({ tx }) => {
      tx.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', 'sneaky', 1);
      tx.exec('COMMIT');
      return { status: 201 };
    });
    await expect(commits(post('sneaky', {}))).rejects.toThrow(/belong to the store/);
    expect(ledgerRows('sneaky')).toBe(0);
    expect(keyRows('sneaky')).toBe(0);
    const keeps = idempotency.route('POST /payments', ({ tx }) => {
      kept = tx;
      tx.exec('SAVEPOINT s; RELEASE s');
      return { status: 201 };
    });
    expect((await keeps(post('keeps', {}))).status).toBe(201);
    expect(() => kept!.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', 'late', 1)).toThrow(
      /transaction is over/,
    );
  });

  it('a handler that calls its own store again is refused at once (it would wait for itself); later, from a timer, it may', async () => {
    const { store, ledgerRows } = await fresh();
    let later: Promise<unknown> | undefined;
    const idempotency = createIdempotency({ store });
    const nested = idempotency.route('POST /payments', async ({ tx, key }) => {
      tx.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', key, 1);
      later = sleep(10).then(() =>
        store.transaction((t) => t.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', 'after', 1)),
      );
      await store.transaction(() => undefined);
      return { status: 201 };
    });
    const started = performance.now();
    await expect(nested(post('nested', {}))).rejects.toThrow(/its own store/);
    expect(performance.now() - started).toBeLessThan(1_000);
    await later;
    expect(ledgerRows('nested')).toBe(0);
    expect(ledgerRows('after')).toBe(1);
  });

  it('a handler past transactionTimeout is rolled back, the key is free, its late statements throw', async () => {
    const { store, ledgerRows, keyRows } = await fresh({ transactionTimeout: 200 });
    let late: unknown;
    const idempotency = createIdempotency({ store });
    const hangs = idempotency.route('POST /payments', async ({ tx, key }) => {
      tx.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', key, 1);
      await sleep(400);
      try {
        tx.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', '', key, 2);
      } catch (error) {
        late = error;
      }
      return { status: 201 };
    });
    await expect(hangs(post('slow', {}))).rejects.toThrow(/more than 200 ms/);
    expect(ledgerRows('slow')).toBe(0);
    expect(keyRows('slow')).toBe(0);
    await sleep(300);
    expect(String(late)).toMatch(/transaction is over/);
    expect((await app(store)(post('slow', { amount: 1 }))).status).toBe(201);
    expect(ledgerRows('slow')).toBe(1);
  });
});

describe('SqliteKeyStore: concurrency', () => {
  it('N concurrent requests with one key: one effect, every other a 409 + Retry-After long before the handler ends', async () => {
    const { store, ledgerRows } = await fresh();
    const n = 16;
    const handlerMs = 1_000;
    const payments = app(store, { sleep: handlerMs });
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: n }, async () => {
        const response = await payments(post('race', { amount: 3 }));
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          ms: performance.now() - started,
        };
      }),
    );
    const ran = answers.filter((a) => a.status === 201);
    const busy = answers.filter((a) => a.status === 409);
    expect(ran).toHaveLength(1);
    expect(busy).toHaveLength(n - 1);
    expect(busy.every((a) => a.retryAfter === '1')).toBe(true);
    const slowest = Math.max(...busy.map((a) => a.ms));
    expect(slowest).toBeLessThan(200);
    expect(ran[0]!.ms).toBeGreaterThan(handlerMs);
    expect(ledgerRows('race')).toBe(1);
    console.log(
      `[server-sqlite] ${n} racing: slowest 409 after ${slowest.toFixed(1)} ms; handler ${ran[0]!.ms.toFixed(0)} ms`,
    );
  });

  it('a repeat is answered at once even while other keys queue for the write lock', async () => {
    const { store, ledgerRows } = await fresh();
    const slow = app(store, { sleep: 300 });
    const first = slow(post('held', { amount: 1 }));
    const queued = [slow(post('q1', { amount: 1 })), slow(post('q2', { amount: 1 }))];
    await sleep(50);
    const started = performance.now();
    expect((await slow(post('held', { amount: 1 }))).status).toBe(409);
    expect((await slow(post('q2', { amount: 1 }))).status).toBe(409); // queued = in progress
    expect(performance.now() - started).toBeLessThan(250); // the holder runs 300 ms, the queued ones longer
    await Promise.all([first, ...queued]);
    expect((await slow(post('held', { amount: 1 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(ledgerRows('held') + ledgerRows('q1') + ledgerRows('q2')).toBe(3);
  });

  it('while in progress: another body is 422, the same body 409; after the commit 422 and the replay', async () => {
    const { store, ledgerRows } = await fresh();
    const first = app(store, { sleep: 300 })(post('mid', { amount: 1 }));
    await sleep(50);
    const payments = app(store);
    const other = await payments(post('mid', { amount: 2 }));
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
    expect((await payments(post('mid', { amount: 1 }))).status).toBe(409);
    expect((await first).status).toBe(201);
    expect((await payments(post('mid', { amount: 2 }))).status).toBe(422);
    expect((await payments(post('mid', { amount: 1 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(ledgerRows('mid')).toBe(1);
  });
});

describe('SqliteKeyStore: retention', () => {
  it('a key 23 h old is replayed; 25 h old it is new and runs again (its row replaced)', async () => {
    const { file, store, ledgerRows, keyRows } = await fresh();
    const payments = app(store);
    await payments(post('young', { amount: 4 }));
    await payments(post('expired', { amount: 6 }));
    const edit = new DatabaseSync(file);
    const age = edit.prepare('UPDATE oncely_server_keys SET created_at = ? WHERE key = ?');
    age.run(Date.now() - 23 * 3_600_000, 'young');
    age.run(Date.now() - 25 * 3_600_000, 'expired');
    edit.close();
    expect((await payments(post('young', { amount: 4 }))).headers.get('idempotent-replayed')).toBe('true');
    const again = await payments(post('expired', { amount: 6 }));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(ledgerRows('expired')).toBe(2);
    expect(keyRows('expired')).toBe(1);
    expect((await payments(post('expired', { amount: 6 }))).headers.get('idempotent-replayed')).toBe('true');
  });

  it('maintain() deletes the keys past retention in batches, and no other', async () => {
    const { file, look } = await fresh();
    const store = await openSqliteKeyStore({ file, autoMaintain: false, maintainBatch: 7 });
    stores.push(store);
    const payments = app(store);
    for (let i = 0; i < 20; i++) await payments(post(`m${i}`, { amount: 1 }));
    const edit = new DatabaseSync(file);
    edit
      .prepare(`UPDATE oncely_server_keys SET created_at = ? WHERE key IN (${Array(17).fill('?').join(',')})`)
      .run(Date.now() - 25 * 3_600_000, ...Array.from({ length: 17 }, (_, i) => `m${i}`));
    edit.close();
    expect(await store.maintain()).toEqual({ deleted: 17 });
    const left = look.prepare('SELECT key FROM oncely_server_keys ORDER BY key').all();
    expect(left.map((row) => row.key)).toEqual(['m17', 'm18', 'm19']);
    expect(await store.maintain()).toEqual({ deleted: 0 });
  });
});

describe('SqliteKeyStore: checkInvariant()', () => {
  it('effects = keys for the operation; an effect written outside a key’s transaction is drift 1', async () => {
    const { file, store } = await fresh();
    const payments = app(store);
    for (const key of ['i1', 'i2', 'i3']) await payments(post(key, { amount: 1 }));
    await payments(post('i1', { amount: 1 })); // a replay: no effect, no key
    const edit = new DatabaseSync(file);
    edit.exec('ALTER TABLE ledger ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0');
    edit.prepare('UPDATE ledger SET created_at = ?').run(Date.now());
    const check = () =>
      store.checkInvariant({
        operation: 'POST /payments',
        effectsSql: 'SELECT count(*) FROM ledger WHERE created_at > ?',
      });
    expect(await check()).toEqual({ operation: 'POST /payments', keys: 3, effects: 3, drift: 0 });
    edit.prepare(`INSERT INTO ledger (scope, key, amount, created_at) VALUES ('acct', 'i1', 1, ?)`).run(Date.now());
    edit.close();
    expect(await check()).toMatchObject({ keys: 3, effects: 4, drift: 1 });
    await expect(
      store.checkInvariant({ operation: 'x', effectsSql: 'SELECT nope FROM nowhere' }),
    ).rejects.toMatchObject({ code: 'STORE_FAILED' });
  });
});

describe('SqliteKeyStore: once()', () => {
  it('a queue consumer keyed by a message id: ran, then the stored result; another request is a mismatch', async () => {
    const { store, ledgerRows } = await fresh();
    const spec = { scope: 'acct', key: 'msg-1', operation: 'payout', request: { amount: 9 } };
    const work = async (tx: SqliteTransaction) => {
      tx.run('INSERT INTO ledger (scope, key, amount) VALUES (?, ?, ?)', 'acct', 'msg-1', 9);
      return { paid: 9 };
    };
    expect(await once(store, spec, work)).toEqual({ outcome: 'ran', value: { paid: 9 } });
    expect(await once(store, spec, work)).toEqual({ outcome: 'replayed', value: { paid: 9 } });
    expect(await once(store, { ...spec, request: { amount: 10 } }, work)).toEqual({ outcome: 'mismatch' });
    expect(ledgerRows('msg-1')).toBe(1);
  });
});

describe('SqliteKeyStore: errors', () => {
  it('the handler’s own error passes as is; a statement SQLite refuses is a StoreError before the work runs', async () => {
    const { store, keyRows } = await fresh();
    const idempotency = createIdempotency({ store });
    const range = new RangeError('amount out of range');
    const throws = idempotency.route('POST /payments', () => {
      throw range;
    });
    await expect(throws(post('own', {}))).rejects.toBe(range);
    let ran = false;
    const long = { scope: '', key: 'k'.repeat(300), operation: 'POST /payments', fingerprint: 'f' };
    const refused = store.execute(long, async () => {
      ran = true;
      return { status: 200, headers: [], body: new Uint8Array() };
    });
    await expect(refused).rejects.toMatchObject({ code: 'STORE_FAILED', message: /CHECK constraint failed/ });
    expect(ran).toBe(false);
    expect(keyRows('own')).toBe(0);
  });

  it('a scope with a lone surrogate is refused: as UTF-8 two such scopes would be one', async () => {
    const { store } = await fresh();
    const claim = { scope: 'acct-\ud800', key: 'k', operation: 'POST /payments', fingerprint: 'f' };
    const work = async () => ({ status: 200, headers: [], body: new Uint8Array() });
    await expect(store.execute(claim, work)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a COMMIT SQLite refuses (a deferred foreign key, on through setup): rolled back, a StoreError, the key free', async () => {
    const file = path.join(dir, `shop-${++files}.db`);
    const store = await openSqliteKeyStore({
      file,
      autoMaintain: false,
      setup: (db) => db.exec('PRAGMA foreign_keys = ON'),
    });
    stores.push(store);
    await store.transaction((tx) =>
      tx.exec(`CREATE TABLE accounts (id TEXT PRIMARY KEY);
               CREATE TABLE ledger (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, key TEXT NOT NULL, amount INTEGER NOT NULL,
                 account TEXT REFERENCES accounts (id) DEFERRABLE INITIALLY DEFERRED)`),
    );
    const payments = createIdempotency({ store }).route('POST /payments', ({ tx, key, json }) => {
      tx.run(
        'INSERT INTO ledger (scope, key, amount, account) VALUES (?, ?, ?, ?)',
        '',
        key,
        1,
        (json as { to: string }).to,
      );
      return { status: 201 };
    });
    await expect(payments(post('fk', { to: 'nobody' }))).rejects.toMatchObject({
      code: 'STORE_FAILED',
      message: /FOREIGN KEY constraint failed.*Nothing was committed/,
    });
    const look = new DatabaseSync(file, { readOnly: true });
    expect(look.prepare('SELECT count(*) AS n FROM ledger').get()!.n).toBe(0);
    expect(look.prepare('SELECT count(*) AS n FROM oncely_server_keys').get()!.n).toBe(0);
    look.close();
    await store.transaction((tx) => tx.run(`INSERT INTO accounts VALUES ('nobody')`));
    expect((await payments(post('fk', { to: 'nobody' }))).status).toBe(201);
  });

  it('a file that is not SQLite is a StoreError at open, left as it is', async () => {
    const file = path.join(dir, 'not-sqlite.db');
    await writeFile(file, 'not a database, but the app’s notes: keep them '.repeat(200));
    await expect(openSqliteKeyStore({ file })).rejects.toMatchObject({ code: 'STORE_FAILED' });
    expect(await readFile(file, 'utf8')).toMatch(/^not a database/);
  });
});
