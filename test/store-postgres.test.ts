import { describe, expect, it } from 'vitest';
import { releasePending, takePending } from '../postgres/pending.js';
import { PostgresStore } from '../postgres/postgres-store.js';
import { settleIntent } from '../postgres/reconcile.js';
import { drainOnce } from '../postgres/worker.js';
import { createClient } from '../src/client.js';
import { IntentGoneError, InvalidArgumentError, InvalidKeyError, StoreError } from '../src/errors.js';
import type { IntentRecord } from '../src/store/store.js';
import { useTestDatabase } from './postgres/database.js';
import { intentRecord, runStoreConformance } from './store-conformance.js';

const db = useTestDatabase();

function conformance(label: string, options: { writeConcurrency?: number } = {}) {
  runStoreConformance(
    label,
    async () => {
      await db.reset();
      const pool = db.pool({ max: 4 });
      return {
        store: new PostgresStore({ pool, ...options }),
        reopen: async () => new PostgresStore({ pool: db.pool({ max: 4 }), ...options }),
        claimRolledBack: async (store, record) => {
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            await store.claim(record, { transaction: client });
            await client.query('ROLLBACK');
          } finally {
            client.release();
          }
        },
      };
    },
    { utf8Names: true },
  );
}
conformance('PostgresStore');
// Every write that waits for another goes in a group statement: the suite again, grouped.
conformance('PostgresStore, writes grouped (writeConcurrency 1)', { writeConcurrency: 1 });

describe('PostgresStore: schema', () => {
  it('migrate() is idempotent and reports the version', async () => {
    const store = new PostgresStore({ pool: db.admin });
    expect(await store.migrate()).toEqual({ applied: [], version: 1 });
  });
});

describe('PostgresStore: claims in the app transaction', () => {
  async function withPayouts() {
    await db.reset();
    await db.admin.query('CREATE TABLE IF NOT EXISTS payouts (id text PRIMARY KEY, amount integer NOT NULL)');
    await db.admin.query('TRUNCATE payouts');
  }

  it('a rolled-back transaction leaves neither the business row nor the intent', async () => {
    await withPayouts();
    const pool = db.pool({ max: 2 });
    const store = new PostgresStore({ pool });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("INSERT INTO payouts VALUES ('p1', 500)");
      const claim = await store.claim(intentRecord('payouts', 'payout:p1'), { transaction: client });
      expect(claim.created).toBe(true);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect((await db.admin.query('SELECT * FROM payouts')).rows).toEqual([]);
    expect(await store.get('payouts', 'payout:p1')).toBeUndefined();
    // The cached guess of the rolled-back row must not mislead a later update.
    expect(await store.update('payouts', 'payout:p1', (current) => current)).toBeUndefined();
  });

  it('the handle of a rolled-back intent never sends nor overwrites the key another machine committed', async () => {
    await withPayouts();
    const sent: (string | null)[] = [];
    const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
      sent.push(new Request(input, init).headers.get('idempotency-key'));
      return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
    };
    const pool = db.pool({ max: 2 });
    const a = createClient({
      baseUrl: 'https://api.test/',
      scope: 'payouts',
      store: new PostgresStore({ pool }),
      fetch,
    });
    const b = createClient({
      baseUrl: 'https://api.test/',
      scope: 'payouts',
      store: new PostgresStore({ pool: db.pool({ max: 2 }) }),
      fetch,
    });
    const client = await pool.connect();
    let rolledBack: Awaited<ReturnType<typeof a.intent>>;
    try {
      await client.query('BEGIN');
      rolledBack = await a.intent('payout:p9', { transaction: client });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    const committed = await b.intent('payout:p9');
    await expect(rolledBack.post('payouts', { json: { amount: 1 } })).rejects.toBeInstanceOf(IntentGoneError);
    expect(sent).toEqual([]);
    expect((await b.store.get('payouts', 'payout:p9'))?.key).toBe(committed.key);
    await committed.post('payouts', { json: { amount: 1 } });
    expect(sent).toEqual([`"${committed.key}"`]); // a Structured Field string (ietf profile)
  });

  it('a committed transaction has both rows, visible to another pool', async () => {
    await withPayouts();
    const pool = db.pool({ max: 2 });
    const store = new PostgresStore({ pool });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("INSERT INTO payouts VALUES ('p2', 700)");
      await store.claim(intentRecord('payouts', 'payout:p2', { key: 'k-p2' }), { transaction: client });
      // Not visible outside the transaction before COMMIT.
      const other = new PostgresStore({ pool: db.pool({ max: 1 }) });
      expect(await other.get('payouts', 'payout:p2')).toBeUndefined();
      await client.query('COMMIT');
      expect((await other.get('payouts', 'payout:p2'))?.key).toBe('k-p2');
    } finally {
      client.release();
    }
    expect((await db.admin.query('SELECT id FROM payouts')).rows).toEqual([{ id: 'p2' }]);
  });

  it('a claim racing an open transaction waits for it and ends with its key once it commits', async () => {
    await withPayouts();
    const pool = db.pool({ max: 3 });
    const store = new PostgresStore({ pool });
    const client = await pool.connect();
    await client.query('BEGIN');
    await store.claim(intentRecord('payouts', 'payout:p3', { key: 'k-tx' }), { transaction: client });
    const racing = store.claim(intentRecord('payouts', 'payout:p3', { key: 'k-racer' }));
    await client.query('COMMIT');
    client.release();
    expect(await racing).toMatchObject({ created: false, record: { key: 'k-tx' } });
  });

  it('a claim racing an open transaction that rolls back creates its own record', async () => {
    await withPayouts();
    const pool = db.pool({ max: 3 });
    const store = new PostgresStore({ pool });
    const client = await pool.connect();
    await client.query('BEGIN');
    await store.claim(intentRecord('payouts', 'payout:p4', { key: 'k-tx' }), { transaction: client });
    const racing = store.claim(intentRecord('payouts', 'payout:p4', { key: 'k-racer' }));
    await client.query('ROLLBACK');
    client.release();
    expect(await racing).toMatchObject({ created: true, record: { key: 'k-racer' } });
  });

  it('refuses a pool or a non-client as the transaction', async () => {
    const store = new PostgresStore({ pool: db.admin });
    await expect(store.claim(intentRecord('u1', 'a'), { transaction: db.admin })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(store.claim(intentRecord('u1', 'a'), { transaction: {} })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });
});

describe('PostgresStore: errors', () => {
  it('a database without the tables fails with a StoreError that says to migrate', async () => {
    await db.admin.query('DROP DATABASE IF EXISTS empty_db');
    await db.admin.query('CREATE DATABASE empty_db');
    const store = new PostgresStore({ pool: db.pool({ database: 'empty_db', max: 1 }) });
    const error = await store.claim(intentRecord('u1', 'a')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).message).toContain('migrate()');
    expect((error as StoreError).cause).toMatchObject({ code: '42P01' });
    expect((await store.migrate()).applied).toEqual([1]);
    expect((await store.claim(intentRecord('u1', 'a'))).created).toBe(true);
  });

  it('refuses a database migrated by a newer oncely, changing nothing', async () => {
    await db.admin.query('DROP DATABASE IF EXISTS future_db');
    await db.admin.query('CREATE DATABASE future_db');
    const pool = db.pool({ database: 'future_db', max: 1 });
    const store = new PostgresStore({ pool });
    await store.migrate();
    await pool.query("INSERT INTO oncely_migrations (version, name) VALUES (99, 'future')");
    await expect(store.migrate()).rejects.toBeInstanceOf(StoreError);
  });

  it('a key already used by another intent of the scope is an InvalidKeyError, not a silent merge', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.admin });
    await store.claim(intentRecord('u1', 'a', { key: 'shared' }));
    await expect(store.claim(intentRecord('u1', 'b', { key: 'shared' }))).rejects.toBeInstanceOf(InvalidKeyError);
    expect((await store.claim(intentRecord('u2', 'b', { key: 'shared' }))).created).toBe(true);
  });

  it('refuses to store an invalid record or one filed under another intent', async () => {
    const store = new PostgresStore({ pool: db.admin });
    await expect(store.claim({ ...intentRecord('u1', 'a'), key: '' })).rejects.toBeInstanceOf(InvalidArgumentError);
    await store.claim(intentRecord('u1', 'x'));
    await expect(store.update('u1', 'x', (current) => current && { ...current, name: 'y' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('a database that does not answer in time is a StoreError (timeout)', async () => {
    await db.reset();
    const pool = db.pool({ max: 2 });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // A table lock (DDL, maintenance) holds this claim back past the timeout. (A row lock
      // would not: a store statement waits at most 200 ms for one, then tries again; see
      // store-postgres-held-rows.test.ts.)
      await client.query('LOCK TABLE oncely_intents IN ACCESS EXCLUSIVE MODE');
      const error = await new PostgresStore({ pool, timeout: 300 })
        .claim(intentRecord('u1', 'held', { key: 'other' }))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).message).toContain('within 300 ms');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('every failure of the server is a StoreError with the driver error as cause', async () => {
    const pool = db.pool({ max: 1 });
    const store = new PostgresStore({ pool });
    await store.get('u1', 'a');
    await db.admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend' AND datname = 'postgres' AND state = 'idle'",
    );
    // The pool may notice the dead connection first (then this succeeds on a new one) or not.
    const error = await store.get('u1', 'a').then(
      () => undefined,
      (e: unknown) => e,
    );
    if (error !== undefined) {
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).cause).toBeInstanceOf(Error);
    }
    await expect(store.get('u1', 'a')).resolves.toBeUndefined();
  });
});

describe('PostgresStore: relaxed durability', () => {
  it('is synchronous_commit = off for that statement only, never for the connection', async () => {
    await db.reset();
    const pool = db.pool({ max: 1 });
    const store = new PostgresStore({ pool });
    await store.claim(intentRecord('u1', 'r'), { durability: 'relaxed' });
    await store.update('u1', 'r', (c) => c && { ...c, state: 'in_flight' }, { durability: 'relaxed' });
    expect((await pool.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
    expect((await store.get('u1', 'r'))?.state).toBe('in_flight');
  });
});

describe('PostgresStore: bounded sweeps', () => {
  it('removes at most `limit` per call, oldest first, and continues on the next call', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.admin });
    for (let i = 0; i < 25; i++)
      await store.claim(intentRecord('u1', `old-${i}`, { state: 'succeeded', updatedAt: 1_000 + i, ttl: 10 }));
    await store.claim(intentRecord('u1', 'pending', { state: 'unknown', updatedAt: 0, ttl: 10 }));
    expect(await store.sweep('u1', 10_000, { limit: 10 })).toBe(10);
    expect((await store.get('u1', 'old-0'))?.state).toBeUndefined();
    expect((await store.get('u1', 'old-24'))?.state).toBe('succeeded');
    expect(await store.sweep('u1', 10_000, { limit: 10 })).toBe(10);
    expect(await store.sweep('u1', 10_000, { limit: 10 })).toBe(5);
    expect(await store.sweep('u1', 10_000, { limit: 10 })).toBe(0);
    expect((await store.list('u1')).map((r) => r.name)).toEqual(['pending']);
  });

  it('without a limit removes up to sweepBatch per call, in steps; the next call goes on', async () => {
    await db.reset();
    await db.admin.query(
      `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at, ttl)
       SELECT 'u1', 'n' || i, 'k' || i, 'failed', 1, 0, 0, 1 FROM generate_series(1, 7500) AS i`,
    );
    expect(await new PostgresStore({ pool: db.admin, sweepBatch: 1200 }).sweep('u1', 10)).toBe(1200);
    const store = new PostgresStore({ pool: db.admin });
    expect(await store.sweep('u1', 10)).toBe(5000);
    expect(await store.sweep('u1', 10)).toBe(1300);
    expect(await store.sweep('u1', 10)).toBe(0);
    expect(() => new PostgresStore({ pool: db.admin, sweepBatch: 0 })).toThrow(InvalidArgumentError);
  });
});

describe('PostgresStore: sweeps in steps of 500', () => {
  it('a limit across steps stops at the limit; pending intents and other scopes are never swept', async () => {
    await db.reset();
    // 1,200 due in u1 (updated at 0…1,199), and due-by-time rows that must stay: pending ones
    // in u1 among them, and another scope's settled ones.
    await db.admin.query(
      `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at, ttl)
       SELECT 'u1', 'n' || i, 'k' || i, CASE WHEN i % 3 = 0 THEN 'ready' ELSE 'succeeded' END, 1, 0, i, 1
       FROM generate_series(0, 1199) AS i
       UNION ALL SELECT 'u1', 'p' || i, 'pk' || i, CASE WHEN i % 2 = 0 THEN 'in_flight' ELSE 'unknown' END, 1, 0, i, 1
       FROM generate_series(0, 99) AS i
       UNION ALL SELECT 'u2', 'n' || i, 'k' || i, 'failed', 1, 0, i, 1 FROM generate_series(0, 99) AS i`,
    );
    const pool = db.pool({ max: 1 });
    const store = new PostgresStore({ pool });
    expect(await store.sweep('u1', 10_000, { limit: 700 })).toBe(700);
    const left = await store.list('u1', ['ready', 'succeeded']);
    expect(left).toHaveLength(500);
    expect(Math.min(...left.map((r) => r.updatedAt))).toBe(700); // oldest first
    expect(await store.sweep('u1', 10_000)).toBe(500);
    expect(await store.sweep('u1', 10_000)).toBe(0);
    expect(await store.list('u1')).toHaveLength(100);
    expect((await store.list('u1')).every((r) => r.state === 'in_flight' || r.state === 'unknown')).toBe(true);
    expect(await store.list('u2')).toHaveLength(100);
    // Its commits skip the WAL flush for their own transaction only.
    expect((await pool.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
  });

  it('skips rows another transaction holds and leaves them for the next sweep', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 2 }) });
    for (const name of ['a', 'b', 'c']) await store.claim(intentRecord('u1', name, { updatedAt: 0, ttl: 1 }));
    const holder = await db.admin.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM oncely_intents WHERE scope = 'u1' AND name = 'b' FOR UPDATE");
      expect(await store.sweep('u1', 10)).toBe(2);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    expect((await store.list('u1')).map((r) => r.name)).toEqual(['b']);
    expect(await store.sweep('u1', 10)).toBe(1);
  });
});

describe('PostgresStore: the worker queue', () => {
  const NOW = 1_700_000_100_000;

  it('takes ready, lease-expired in_flight and unknown intents once, under a worker lease', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 4 }) });
    const old = { createdAt: NOW - 60_000, updatedAt: NOW - 60_000, ttl: 3_600_000 };
    await store.claim(intentRecord('q', 'ready-old', old));
    await store.claim(intentRecord('q', 'ready-new', { ...old, updatedAt: NOW - 1_000 }));
    await store.claim(
      intentRecord('q', 'flight-dead', { ...old, state: 'in_flight', lease: { owner: 'x', until: NOW - 1 } }),
    );
    await store.claim(
      intentRecord('q', 'flight-live', { ...old, state: 'in_flight', lease: { owner: 'x', until: NOW + 10_000 } }),
    );
    await store.claim(intentRecord('q', 'unknown', { ...old, state: 'unknown' }));
    await store.claim(intentRecord('q', 'done', { ...old, state: 'succeeded' }));
    await store.claim(intentRecord('other', 'ready-old', old));
    const take = (owner: string, now = NOW) =>
      takePending(store, 'q', { owner, now, idleAfter: 10_000, leaseMs: 5_000 });
    const [a, b] = await Promise.all([take('a'), take('b')]);
    const names = [...a!, ...b!].map((item) => item.record.name).sort();
    expect(names).toEqual(['flight-dead', 'ready-old', 'unknown']);
    expect(await take('c', NOW + 4_000)).toEqual([]);
    // Released with a retry time: nobody takes it before then.
    const first = [...a!, ...b!][0]!;
    const holder = a!.includes(first) ? 'a' : 'b';
    await releasePending(store, 'q', first.record.name, holder, NOW + 20_000);
    expect(await take('c', NOW + 5_001)).toHaveLength(2);
    expect((await take('d', NOW + 20_001)).map((item) => item.record.name)).toContain(first.record.name);
  });

  it('marks sent intents past their retention as expired, to be reconciled rather than resent', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.admin });
    await store.claim(
      intentRecord('q', 'stale', { state: 'unknown', createdAt: NOW - 90_000, updatedAt: NOW - 90_000, ttl: 60_000 }),
    );
    const [item] = await takePending(store, 'q', { owner: 'w', now: NOW, idleAfter: 0 });
    expect(item).toMatchObject({ expired: true, record: { name: 'stale' } });
  });

  it('settleIntent: settles a pending intent that still has the key; succeeded never becomes failed', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.admin });
    await store.claim(intentRecord('q', 'p', { key: 'k1', state: 'unknown', lease: { owner: 'x', until: 5 } }));
    expect(await settleIntent(store, 'q', 'p', { key: 'other', outcome: 'succeeded' })).toBeUndefined();
    const settled = await settleIntent(store, 'q', 'p', { key: 'k1', outcome: 'succeeded', status: 201, now: NOW });
    expect(settled).toMatchObject({ state: 'succeeded', status: 201, updatedAt: NOW });
    expect(settled?.lease).toBeUndefined();
    await expect(settleIntent(store, 'q', 'p', { key: 'k1', outcome: 'failed' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect((await store.get('q', 'p'))?.state).toBe('succeeded');
  });

  it('drainOnce hands expired intents to reconcile and settles them', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.admin });
    await store.claim(intentRecord('q', 'stale', { state: 'unknown', createdAt: 0, updatedAt: 0, ttl: 1 }));
    const resent: string[] = [];
    const report = await drainOnce({
      store,
      scope: 'q',
      idleAfter: 0,
      resend: async (record) => {
        resent.push(record.name);
      },
      reconcile: async () => 'failed',
    });
    expect(report).toEqual({ taken: 1, settled: 1, deferred: 0 });
    expect(resent).toEqual([]);
    expect((await store.get('q', 'stale'))?.state).toBe('failed');
  });
});

describe('PostgresStore: client.send() in two round trips', () => {
  it('a fresh intent: one INSERT forms it in flight before the first byte, one UPDATE settles it', async () => {
    await db.reset();
    const statements: string[] = [];
    class Counting extends PostgresStore {
      override query(...args: Parameters<PostgresStore['query']>) {
        statements.push(
          String((args[0] as { text: string }).text)
            .trim()
            .split(/\s+/)[0]!,
        );
        return super.query(...args);
      }
    }
    const store = new Counting({ pool: db.pool({ max: 2 }) });
    const states: (string | undefined)[] = [];
    const api = createClient({
      baseUrl: 'https://api.test/',
      store,
      fetch: async () => {
        states.push((await new PostgresStore({ pool: db.pool({ max: 1 }) }).get('default', 'payout:s1'))?.state);
        return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
      },
    });
    await api.intent('warm-up'); // the client's first forming also sweeps
    await new Promise((resolve) => setTimeout(resolve, 50));
    statements.length = 0;
    const response = await api.send('payout:s1', 'POST', 'payouts', { json: { amount: 1 } });
    expect(statements).toEqual(['INSERT', 'UPDATE']);
    expect(states).toEqual(['in_flight']);
    expect(await store.get('default', 'payout:s1')).toMatchObject({ state: 'succeeded', key: response.key });
  });
});

describe('PostgresStore: group writes', () => {
  /** A store that records the name of each statement it runs. */
  function counting(options: { writeConcurrency: number; max?: number }) {
    const names: string[] = [];
    class Counting extends PostgresStore {
      override query(...args: Parameters<PostgresStore['query']>) {
        names.push(String(args[0].name ?? args[0].text.trim().split(/\s+/)[0]));
        return super.query(...args);
      }
    }
    return { names, store: new Counting({ pool: db.pool({ max: options.max ?? 4 }), ...options }) };
  }
  const attemptsPlusOne = (c: IntentRecord | undefined) => c && { ...c, attempts: c.attempts + 1 };

  it('writes that wait for a running one go as one statement; each is answered as if alone', async () => {
    await db.reset();
    const { names, store } = counting({ writeConcurrency: 1 });
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => store.claim(intentRecord('g', `n${i}`))));
    expect(claims.every((c) => c.created)).toBe(true);
    expect(names.filter((n) => n === 'oncely_claim').length).toBeGreaterThanOrEqual(1);
    expect(names.filter((n) => n === 'oncely_group_insert').length).toBeGreaterThanOrEqual(1);
    expect(names.length).toBeLessThan(20);
    expect((await store.list('g')).map((r) => r.key).sort()).toEqual(claims.map((c) => c.record.key).sort());
    // Claims of intents formed before: nothing inserted, each reads the stored record back.
    const again = await Promise.all(
      Array.from({ length: 5 }, (_, i) => store.claim(intentRecord('g', `n${i}`, { key: `other-${i}` }))),
    );
    expect(again.map((c) => [c.created, c.record.key])).toEqual(
      Array.from({ length: 5 }, (_, i) => [false, `key-g-n${i}`]),
    );
    names.length = 0;
    const updated = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.update('g', `n${i}`, attemptsPlusOne, { durability: 'relaxed' })),
    );
    expect(updated.every((r) => r?.attempts === 1)).toBe(true);
    expect(names).toContain('oncely_group_cas_relaxed');
    expect(names.length).toBeLessThan(20);
    expect((await store.list('g')).every((r) => r.attempts === 1)).toBe(true);
  });

  it('two writes of one intent never share a statement (no update is lost)', async () => {
    await db.reset();
    const { store } = counting({ writeConcurrency: 1 });
    await store.claim(intentRecord('g', 'x'));
    await store.claim(intentRecord('g', 'y'));
    await Promise.all([
      ...Array.from({ length: 10 }, () => store.update('g', 'x', attemptsPlusOne)),
      ...Array.from({ length: 10 }, () => store.update('g', 'y', attemptsPlusOne)),
    ]);
    expect((await store.get('g', 'x'))?.attempts).toBe(10);
    expect((await store.get('g', 'y'))?.attempts).toBe(10);
  });

  it('a row whose compare-and-set fails in a group runs its updater again on the stored record', async () => {
    await db.reset();
    const { names, store } = counting({ writeConcurrency: 1 });
    for (const name of ['a', 'b', 'c']) await store.claim(intentRecord('g', name));
    // Another machine moves b on: this store's remembered version of b is stale.
    await new PostgresStore({ pool: db.admin }).update('g', 'b', (c) => c && { ...c, attempts: 5 });
    names.length = 0;
    const seen: number[] = [];
    await Promise.all([
      store.update('g', 'a', attemptsPlusOne),
      store.update('g', 'c', attemptsPlusOne),
      store.update('g', 'b', (c) => {
        seen.push(c!.attempts);
        return attemptsPlusOne(c);
      }),
    ]);
    expect(names).toContain('oncely_group_cas');
    expect(seen).toEqual([0, 5]);
    expect((await store.list('g')).map((r) => [r.name, r.attempts])).toEqual([
      ['a', 1],
      ['b', 6],
      ['c', 1],
    ]);
  });

  it('a group the server refuses (one key taken twice) is written one by one: one claim wins, the other is told', async () => {
    await db.reset();
    const { names, store } = counting({ writeConcurrency: 1 });
    const results = await Promise.allSettled([
      store.claim(intentRecord('g', 'first')),
      store.claim(intentRecord('g', 'p', { key: 'same' })),
      store.claim(intentRecord('g', 'q', { key: 'same' })),
    ]);
    expect(names).toContain('oncely_group_insert');
    // Redone alone at once: which of p and q gets the key first is the server's call.
    expect(results[0].status).toBe('fulfilled');
    const winner = results[1].status === 'fulfilled' ? 'p' : 'q';
    const loser = results[winner === 'p' ? 2 : 1];
    expect(loser.status).toBe('rejected');
    expect((loser as PromiseRejectedResult).reason).toBeInstanceOf(InvalidKeyError);
    expect((await store.list('g')).map((r) => [r.name, r.key])).toEqual([
      ['first', 'key-g-first'],
      [winner, 'same'],
    ]);
  });

  it('a relaxed group sets synchronous_commit for its own transaction only', async () => {
    await db.reset();
    const pool = db.pool({ max: 1 });
    const store = new PostgresStore({ pool, writeConcurrency: 1 });
    await Promise.all(['a', 'b', 'c'].map((n) => store.claim(intentRecord('g', n))));
    await Promise.all(['a', 'b', 'c'].map((n) => store.update('g', n, attemptsPlusOne, { durability: 'relaxed' })));
    expect((await pool.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
  });

  it('preparedStatements: false sends every statement unnamed (a pooler in transaction mode); anything but a boolean is refused', async () => {
    await db.reset();
    const names: (string | undefined)[] = [];
    const pool = db.pool({ max: 2 });
    const store = new PostgresStore({
      pool: {
        query: (config) => {
          names.push(config.name);
          return pool.query(config);
        },
      },
      preparedStatements: false,
      writeConcurrency: 1,
    });
    await Promise.all(['a', 'b', 'c'].map((n) => store.claim(intentRecord('u', n))));
    await Promise.all(['a', 'b', 'c'].map((n) => store.update('u', n, attemptsPlusOne)));
    await store.get('u', 'a');
    await store.delete('u', 'a');
    await store.sweep('u', Date.now());
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => n !== undefined)).toEqual([]);
    expect(() => new PostgresStore({ pool: db.admin, preparedStatements: 'no' as never })).toThrow(
      InvalidArgumentError,
    );
  });

  it('refuses a writeConcurrency that is not a positive integer', () => {
    for (const writeConcurrency of [0, -1, 1.5, Number.NaN])
      expect(() => new PostgresStore({ pool: db.admin, writeConcurrency })).toThrow(InvalidArgumentError);
  });
});
