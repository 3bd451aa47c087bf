/**
 * once() inside a transaction the app opened on its own connection (issue 27's leftover):
 * the key row, the app's rows and the result commit with the app's COMMIT or none of them;
 * a concurrent holder of the key is answered in_progress at once, never waited for.
 */
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { InvalidArgumentError, StoreError } from '../src/errors.js';
import { MemoryKeyStore, once } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
let store: PostgresKeyStore<pg.PoolClient>;
let pool: pg.Pool;

const count = async (sql: string, values: unknown[]) => Number((await db.admin.query(sql, values)).rows[0].n);
const orders = (key: string) => count('SELECT count(*) AS n FROM orders WHERE key = $1', [key]);
const keyRows = (key: string) => count('SELECT count(*) AS n FROM oncely_server_keys WHERE key = $1', [key]);

/** The app's own transaction: an order row, then once() on the same connection. */
async function inAppTx(key: string, end: 'COMMIT' | 'ROLLBACK', amount = 10, between?: () => Promise<void>) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await once(
      store,
      { scope: 'acct', key, operation: 'order', request: { amount } },
      async (tx) => {
        const { rows } = await tx.query('INSERT INTO orders (key, amount) VALUES ($1, $2) RETURNING id', [key, amount]);
        return { order: Number(rows[0].id) };
      },
      { tx: client },
    );
    await between?.();
    await client.query(end);
    return result;
  } finally {
    client.release();
  }
}

beforeAll(async () => {
  pool = db.pool({ max: 6 });
  store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  await store.migrate();
  await db.admin.query('CREATE TABLE orders (id bigserial PRIMARY KEY, key text NOT NULL, amount int NOT NULL)');
});

describe('once(store, spec, work, { tx }): the app opens the transaction', () => {
  it("the app's ROLLBACK removes the key row with its rows; the next try runs; its COMMIT keeps both; a repeat replays", async () => {
    const first = await inAppTx('k-rollback', 'ROLLBACK');
    expect(first.outcome).toBe('ran');
    expect([await orders('k-rollback'), await keyRows('k-rollback')]).toEqual([0, 0]);
    const second = await inAppTx('k-rollback', 'COMMIT');
    expect(second.outcome).toBe('ran');
    expect([await orders('k-rollback'), await keyRows('k-rollback')]).toEqual([1, 1]);
    const repeat = await inAppTx('k-rollback', 'COMMIT');
    expect(repeat).toEqual({ outcome: 'replayed', value: second.value });
    expect(await orders('k-rollback')).toBe(1);
    // Another request under the key: mismatch, nothing written.
    expect((await inAppTx('k-rollback', 'COMMIT', 99)).outcome).toBe('mismatch');
    expect(await orders('k-rollback')).toBe(1);
  });

  it('a concurrent transaction with the same key gets in_progress within 500 ms while the first is open, then the replay', async () => {
    let during: { outcome: string; ms: number } | undefined;
    const first = await inAppTx('k-race', 'COMMIT', 10, async () => {
      const started = performance.now();
      const other = await inAppTx('k-race', 'COMMIT');
      during = { outcome: other.outcome, ms: performance.now() - started };
      await new Promise((resolve) => setTimeout(resolve, 300)); // the first holds on past the 409
    });
    expect(first.outcome).toBe('ran');
    expect(during?.outcome).toBe('in_progress');
    expect(during!.ms).toBeLessThan(500);
    expect((await inAppTx('k-race', 'COMMIT')).outcome).toBe('replayed');
    expect(await orders('k-race')).toBe(1);
  });

  it('8 app transactions with one key at once: one runs, the rest in_progress; one order', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        inAppTx('k-burst', 'COMMIT', 10, () => new Promise((resolve) => setTimeout(resolve, 100))),
      ),
    );
    const outcomes = results.map((r) => r.outcome).sort();
    expect(outcomes.filter((o) => o === 'ran')).toHaveLength(1);
    expect(outcomes.every((o) => o === 'ran' || o === 'in_progress' || o === 'replayed')).toBe(true);
    expect([await orders('k-burst'), await keyRows('k-burst')]).toEqual([1, 1]);
  });

  it("work that throws is undone to the savepoint: the app's earlier row stays, the key is not stored", async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("INSERT INTO orders (key, amount) VALUES ('k-throw-before', 1)");
      const failing = once(
        store,
        { scope: 'acct', key: 'k-throw', operation: 'order' },
        async (tx) => {
          await tx.query("INSERT INTO orders (key, amount) VALUES ('k-throw', 1)");
          throw new Error('work failed after its write');
        },
        { tx: client },
      );
      await expect(failing).rejects.toThrow('work failed after its write');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect([await orders('k-throw-before'), await orders('k-throw'), await keyRows('k-throw')]).toEqual([1, 0, 0]);
    expect((await inAppTx('k-throw', 'COMMIT')).outcome).toBe('ran');
  });

  it('two messages per claim besides the work, one per replay; hostile scopes and keys stay text (escaped literals)', async () => {
    const client = await pool.connect();
    const sent: string[] = [];
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as { query: unknown }).query = (config: { text?: string } | string, ...rest: unknown[]) => {
      sent.push(typeof config === 'string' ? config : (config?.text ?? ''));
      return query(config, ...rest);
    };
    const spec = { scope: "acct'); DROP TABLE orders; --", key: "k-'\\-literal", operation: "order $1 E'\\x'" };
    const work = async (tx: pg.PoolClient) => {
      await tx.query('INSERT INTO orders (key, amount) VALUES ($1, 1)', [spec.key]);
      return 'paid';
    };
    try {
      for (const expected of ['ran', 'replayed']) {
        await client.query('BEGIN');
        sent.length = 0;
        const result = await once(store, spec, work, { tx: client });
        const ours = [...sent];
        await client.query('COMMIT');
        expect(result).toEqual({ outcome: expected, value: 'paid' });
        // ran: the savepoint + locks + look-up, the work's INSERT, the key row + release; replayed: the look-up, the undo.
        expect(ours).toHaveLength(expected === 'ran' ? 3 : 2);
        expect(ours.some((text) => /^\s*COMMIT/m.test(text))).toBe(false); // the COMMIT stays the app's
      }
    } finally {
      client.release();
    }
    const stored = await db.admin.query('SELECT scope, operation FROM oncely_server_keys WHERE key = $1', [spec.key]);
    expect(stored.rows).toEqual([{ scope: spec.scope, operation: spec.operation }]);
    expect(await orders(spec.key)).toBe(1);
  });

  it("a key row committed meanwhile by a writer that bypassed the lock: a StoreError, the savepoint never released, the app's transaction only rolls back", async () => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const attempt = once(
        store,
        { scope: 'acct', key: 'k-bypass', operation: 'order' },
        async (tx) => {
          await tx.query("INSERT INTO orders (key, amount) VALUES ('k-bypass', 1)");
          await db.admin.query(
            `INSERT INTO oncely_server_keys (scope, key, day, created_at, operation, fingerprint, status, headers, body)
             VALUES ('acct', 'k-bypass', (now() AT TIME ZONE 'UTC')::date, now(), 'order', 'other', 200, '[]', '')`,
          );
          return 1;
        },
        { tx: client },
      );
      await expect(attempt).rejects.toThrow(StoreError);
      await expect(attempt).rejects.toThrow(/did not hold its advisory lock/);
      // The failed insert aborted the transaction: nothing after it ran, nothing can commit.
      await expect(client.query('SELECT 1')).rejects.toThrow(/aborted/);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect([await orders('k-bypass'), await keyRows('k-bypass')]).toEqual([0, 1]);
  });

  it('refuses a client outside BEGIN, a REPEATABLE READ transaction, a pool, and a store without executeIn', async () => {
    const spec = { key: 'k-refused', operation: 'order' };
    const client = await pool.connect();
    try {
      await expect(once(store, spec, async () => 1, { tx: client })).rejects.toThrow(/not inside a transaction/);
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await expect(once(store, spec, async () => 1, { tx: client })).rejects.toThrow(/READ COMMITTED/);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    await expect(once(store, spec, async () => 1, { tx: pool as never })).rejects.toThrow(InvalidArgumentError);
    await expect(once(new MemoryKeyStore(), spec, async () => 1, { tx: {} as never })).rejects.toThrow(/cannot join/);
    expect(await keyRows('k-refused')).toBe(0);
  });
});
