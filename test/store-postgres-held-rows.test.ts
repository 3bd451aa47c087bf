/**
 * Rows held by the app's open transactions (the outbox pattern) must not stall the store's
 * other writes (issue 26, point 9). A duplicate claim of an intent that an open transaction
 * has just inserted waits for that transaction; before every wait on a row lock was bounded,
 * four such claims (the default `writeConcurrency`) took every write slot of the store, and
 * no unrelated write of any scope ran until the app's transactions ended.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../postgres/postgres-store.js';
import { createClient } from '../src/client.js';
import { StoreError } from '../src/errors.js';
import { useTestDatabase } from './postgres/database.js';
import { intentRecord } from './store-conformance.js';

const db = useTestDatabase();

/** A fetch that answers 201 and records the key of every attempt. */
function ledger() {
  const keys: string[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    keys.push(String(new Request(input, init).headers.get('idempotency-key')));
    return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
  };
  return { keys, fetch };
}

/** Opens `n` app transactions, each holding its claim of `held-i` in `scope` (uncommitted). */
async function holdClaims(pool: pg.Pool, store: PostgresStore, scope: string, n: number) {
  const clients: pg.PoolClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = await pool.connect();
    clients.push(client);
    await client.query('BEGIN');
    await store.claim(intentRecord(scope, `held-${i}`, { key: `app-key-${i}` }), { transaction: client });
  }
  return clients;
}

/** Waits until `n` backends wait for a lock (the duplicate claims have reached the server). */
async function lockWaiters(n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const r = await db.admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
    if (r.rows[0].n >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${n} backends ever waited for a lock`);
}

describe('PostgresStore: rows held by open transactions', () => {
  it('6 held rows, duplicate claims of each through the pool: 64 unrelated sends of another scope finish meanwhile; the held ones resolve when the app ends', async () => {
    await db.reset();
    const pool = db.pool({ max: 20 });
    const store = new PostgresStore({ pool }); // writeConcurrency: 4 (the default)
    // The same sends with no row held, for the figure printed below.
    const warm = createClient({ baseUrl: 'https://api.test/', scope: 'tenant-w', store, fetch: ledger().fetch });
    let t0 = performance.now();
    await Promise.all(Array.from({ length: 64 }, (_, j) => warm.send(`w-${j}`, 'POST', 'payouts', { json: { j } })));
    const unheld = performance.now() - t0;
    const held = await holdClaims(pool, store, 'tenant-a', 6);
    try {
      const a = ledger();
      const tenantA = createClient({ baseUrl: 'https://api.test/', scope: 'tenant-a', store, fetch: a.fetch });
      const b = ledger();
      const tenantB = createClient({ baseUrl: 'https://api.test/', scope: 'tenant-b', store, fetch: b.fetch });
      // Another request of the same intents, through the pool: each waits for the app's transaction.
      const duplicates = held.map((_, i) =>
        tenantA.intent(`held-${i}`).then(
          (intent) => ({ key: intent.key }),
          (error: unknown) => ({ error }),
        ),
      );
      await lockWaiters(1);
      t0 = performance.now();
      const sends = Promise.all(
        Array.from({ length: 64 }, (_, j) => tenantB.send(`other-${j}`, 'POST', 'payouts', { json: { j } })),
      );
      // Under the client's 10 s storeTimeout: before, they waited for the app's transactions.
      const stalled = new Promise<'stalled'>((resolve) => setTimeout(() => resolve('stalled'), 8_000).unref());
      const outcome = await Promise.race([sends, stalled]);
      const took = performance.now() - t0;
      expect(outcome, 'unrelated sends stalled behind the held rows').not.toBe('stalled');
      console.log(`64 unrelated sends: ${took.toFixed(0)} ms with 6 rows held, ${unheld.toFixed(0)} ms with none`);
      // One effect per send, each under its own key, all succeeded.
      expect(new Set(b.keys).size).toBe(64);
      expect(b.keys).toHaveLength(64);
      const stored = await store.list('tenant-b');
      expect(stored.map((r) => r.state)).toEqual(Array(64).fill('succeeded'));
      // The app's transactions were open all along; half commit, half roll back.
      for (const [i, client] of held.entries()) await client.query(i % 2 === 0 ? 'COMMIT' : 'ROLLBACK');
      const results = await Promise.all(duplicates);
      expect(results).toEqual(
        held.map((_, i) => (i % 2 === 0 ? { key: `app-key-${i}` } : { key: expect.not.stringMatching(/^app-key/) })),
      );
      const rows = await store.list('tenant-a');
      expect(rows.map((r) => [r.name, r.key])).toEqual(
        expect.arrayContaining(results.map((r, i) => [`held-${i}`, (r as { key: string }).key])),
      );
      expect(rows).toHaveLength(6);
      expect(a.keys).toEqual([]); // nothing was sent for the held intents
    } finally {
      for (const client of held) {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    }
  }, 30_000);

  it('a claim, update, delete or clear whose row stays held past the store timeout is a StoreError (55P03); nothing written; the retried claim gets the app key', async () => {
    await db.reset();
    const pool = db.pool({ max: 8 });
    const store = new PostgresStore({ pool, timeout: 1_000 });
    const [client] = await holdClaims(pool, store, 'tenant-c', 1);
    try {
      const started = performance.now();
      const error = await store.claim(intentRecord('tenant-c', 'held-0', { key: 'dup-key' })).catch((e: unknown) => e);
      const took = performance.now() - started;
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).cause).toMatchObject({ code: '55P03' });
      expect(took).toBeLessThan(5_000); // the store's timeout (1 s), not the app's transaction
      // An update of a row the app holds (FOR UPDATE) is bounded the same way.
      await store.claim(intentRecord('tenant-c', 'other'));
      const app = await pool.connect();
      try {
        await app.query('BEGIN');
        await app.query(`SELECT 1 FROM oncely_intents WHERE scope = 'tenant-c' AND name = 'other' FOR UPDATE`);
        const update = await store
          .update('tenant-c', 'other', (r) => r && { ...r, attempts: r.attempts + 1 })
          .catch((e: unknown) => e);
        expect(update).toBeInstanceOf(StoreError);
        expect((update as StoreError).cause).toMatchObject({ code: '55P03' });
        // So are a delete (`reset()`) and a clear of the scope.
        await expect(store.delete('tenant-c', 'other')).rejects.toMatchObject({ cause: { code: '55P03' } });
        await expect(store.clear('tenant-c')).rejects.toMatchObject({ cause: { code: '55P03' } });
        await app.query('ROLLBACK');
      } finally {
        app.release();
      }
      expect((await store.get('tenant-c', 'other'))?.attempts).toBe(0); // nothing written, nothing deleted
      await client!.query('COMMIT');
      expect(await store.claim(intentRecord('tenant-c', 'held-0', { key: 'dup-key' }))).toMatchObject({
        created: false,
        record: { key: 'app-key-0' },
      });
    } finally {
      await client!.query('ROLLBACK').catch(() => undefined);
      client!.release();
    }
  }, 30_000);
});
