/**
 * oncely/server on PostgreSQL (a throwaway cluster): the key row, the app's ledger row and
 * the stored answer commit together or not at all; N concurrent requests with one key run
 * once and the others get 409 promptly; a terminated backend leaves nothing; 422 while in
 * progress; a key found across day partitions; partitions dropped past retention.
 */
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkKeyInvariant } from '../postgres/key-invariant.js';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { createIdempotency, once } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
const BASE = 'https://shop.test';

function post(key: string, body: unknown, path = '/payments'): Request {
  return new Request(`${BASE}${path}`, {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json', 'x-account': 'acct' },
    body: JSON.stringify(body),
  });
}

const count = async (sql: string, values: unknown[] = []) => Number((await db.admin.query(sql, values)).rows[0].n);
const ledgerRows = (key: string) => count('SELECT count(*) AS n FROM ledger WHERE key = $1', [key]);
const keyRows = (key: string) => count('SELECT count(*) AS n FROM oncely_server_keys WHERE key = $1', [key]);

/** A payments route whose handler writes the app's ledger in the key's transaction, then may wait or fail. */
function app(pool: pg.Pool, behaviour: { sleep?: number; fail?: boolean; onPid?: (pid: number) => void } = {}) {
  const store = new PostgresKeyStore({ pool, autoMaintain: false });
  const idempotency = createIdempotency({ store, scope: (request) => request.headers.get('x-account') ?? '' });
  return idempotency.route('POST /payments', async ({ tx, json, key, scope }) => {
    const amount = (json as { amount: number }).amount;
    const { rows } = await tx.query(
      'INSERT INTO ledger (scope, key, amount) VALUES ($1, $2, $3) RETURNING id, pg_backend_pid() AS pid',
      [scope, key, amount],
    );
    behaviour.onPid?.(rows[0].pid);
    if (behaviour.sleep) await tx.query('SELECT pg_sleep($1)', [behaviour.sleep]);
    if (behaviour.fail) throw new Error('handler failed after its write');
    return { status: 201, headers: { location: `/payments/${rows[0].id}` }, body: { id: Number(rows[0].id), amount } };
  });
}

beforeAll(async () => {
  const store = new PostgresKeyStore({ pool: db.admin });
  expect((await store.migrate()).applied).toEqual([1, 2]);
  expect(await store.migrate()).toEqual({ applied: [], version: 2 });
  await db.admin.query(
    'CREATE TABLE ledger (id bigserial PRIMARY KEY, scope text NOT NULL, key text NOT NULL, amount integer NOT NULL)',
  );
});

describe('PostgresKeyStore: schema and partitions', () => {
  it('migrate() creates today (the database clock, UTC) and 7 days ahead; maintain() again creates none', async () => {
    const parts = await db.admin.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'oncely_server_keys'::regclass ORDER BY 1`,
    );
    const today = (await db.admin.query(`SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYYMMDD') AS d`)).rows[0].d;
    expect(parts.rows).toHaveLength(8);
    expect(parts.rows[0].relname).toBe(`oncely_server_keys_${today}`);
    const store = new PostgresKeyStore({ pool: db.admin });
    expect(await store.maintain()).toEqual({ created: [], dropped: [] });
  });

  it("autoMaintain: a store's first request starts maintain() in the background (a missing day ahead comes back)", async () => {
    const ahead = await db.admin.query(
      `SELECT 'oncely_server_keys_' || to_char((now() AT TIME ZONE 'UTC')::date + 7, 'YYYYMMDD') AS t`,
    );
    const table = ahead.rows[0].t as string;
    await db.admin.query(`DROP TABLE ${table}`);
    const errors: unknown[] = [];
    const store = new PostgresKeyStore<pg.PoolClient>({
      pool: db.pool({ max: 3 }),
      onMaintenanceError: (error) => errors.push(error),
    });
    expect((await once(store, { key: 'auto', operation: 'op' }, async () => 1)).outcome).toBe('ran');
    const exists = async () => (await db.admin.query('SELECT to_regclass($1) AS t', [table])).rows[0].t !== null;
    for (let i = 0; i < 100 && !(await exists()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await exists()).toBe(true);
    expect(errors).toEqual([]);
  });

  it('refuses a retention under 24 h, and a transactionTimeout that is not whole ms ≥ 1', () => {
    expect(() => new PostgresKeyStore({ pool: db.admin, retentionMs: 3_600_000 })).toThrow(/24 h/);
    for (const transactionTimeout of [0, -1, 1.5, Number.NaN])
      expect(() => new PostgresKeyStore({ pool: db.admin, transactionTimeout })).toThrow(/transactionTimeout/);
  });
});

describe('PostgresKeyStore: one transaction', () => {
  it('runs once: ledger row, key row and answer commit together; the repeat replays byte for byte', async () => {
    const payments = app(db.pool({ max: 2 }));
    const first = await payments(post('one', { amount: 100 }));
    expect(first.status).toBe(201);
    const bytes = new Uint8Array(await first.arrayBuffer());
    const replay = await payments(post('one', { amount: 100 }));
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));
    expect(new Uint8Array(await replay.arrayBuffer())).toEqual(bytes);
    expect(await ledgerRows('one')).toBe(1);
    expect(await keyRows('one')).toBe(1);
  });

  it('a handler that throws after its write: neither ledger row nor key row; the next attempt runs once', async () => {
    const pool = db.pool({ max: 2 });
    await expect(app(pool, { fail: true })(post('throws', { amount: 1 }))).rejects.toThrow('handler failed');
    expect(await ledgerRows('throws')).toBe(0);
    expect(await keyRows('throws')).toBe(0);
    const payments = app(pool);
    expect((await payments(post('throws', { amount: 1 }))).status).toBe(201);
    expect((await payments(post('throws', { amount: 1 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(await ledgerRows('throws')).toBe(1);
  });

  it.each(['on', 'off'])(
    'scopes, keys and operations go into the SQL as escaped literals: quotes, backslashes and SQL stay text (standard_conforming_strings %s)',
    async (conforming) => {
      const pool = db.pool({ max: 2, options: `-c standard_conforming_strings=${conforming}` });
      const store = new PostgresKeyStore({ pool, autoMaintain: false });
      const hostile = ["it's", 'back\\slash\\', "x'); DROP TABLE ledger; --", "E'\\x00'", '$$ $1 ::int', 'é ☃ 𝄞'];
      let runs = 0;
      for (const [i, text] of hostile.entries()) {
        // A key is printable ASCII: the hostile text as is when it is, else the scope alone carries it.
        const key = /^[\x20-\x7e]+$/.test(text) ? `${text}-k` : `k-${i}`;
        const spec = { scope: `${conforming}:${text}`, key: `${conforming}:${key}`, operation: `POST ${text}` };
        const first = await once(store, spec, async () => ++runs);
        expect(first).toMatchObject({ outcome: 'ran', value: runs });
        expect(await once(store, spec, async () => ++runs)).toMatchObject({ outcome: 'replayed', value: runs });
        const stored = await db.admin.query('SELECT scope, operation FROM oncely_server_keys WHERE key = $1', [
          spec.key,
        ]);
        expect(stored.rows).toEqual([{ scope: spec.scope, operation: spec.operation }]);
      }
      expect(runs).toBe(hostile.length);
      expect(await count("SELECT count(*) AS n FROM pg_tables WHERE tablename = 'ledger'")).toBe(1);
    },
  );

  it('pg_terminate_backend mid-handler: no key, no effect; the next attempt runs once', async () => {
    const pool = db.pool({ max: 2 });
    let pid = 0;
    const pending = app(pool, { sleep: 30, onPid: (p) => (pid = p) })(post('killed', { amount: 7 }));
    const failed = expect(pending).rejects.toThrow();
    while (!pid) await new Promise((resolve) => setTimeout(resolve, 5));
    await db.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await failed;
    expect(await ledgerRows('killed')).toBe(0);
    expect(await keyRows('killed')).toBe(0);
    const payments = app(pool);
    expect((await payments(post('killed', { amount: 7 }))).status).toBe(201);
    expect((await payments(post('killed', { amount: 7 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(await ledgerRows('killed')).toBe(1);
  });
});

describe('PostgresKeyStore: the insert re-checks the window', () => {
  it("a key row committed by a writer that bypassed the advisory lock: StoreError, the handler's rows rolled back", async () => {
    const pool = db.pool({ max: 2 });
    const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
    const route = createIdempotency({ store, scope: () => 'acct' }).route('POST /payments', async ({ tx, key }) => {
      await tx.query("INSERT INTO ledger (scope, key, amount) VALUES ('acct', $1, 1)", [key]);
      // Another writer, not through the store, commits the same key in the meantime (yesterday's partition).
      await db.admin.query(
        `INSERT INTO oncely_server_keys (scope, key, day, created_at, operation, fingerprint, status, headers, body)
         VALUES ('acct', $1, (now() AT TIME ZONE 'UTC')::date - 1, now() - interval '1 hour', 'POST /payments', 'x', 200, '[]', '')`,
        [key],
      );
      return { status: 201 };
    });
    await db.admin.query(`DO $$ DECLARE d date := (now() AT TIME ZONE 'UTC')::date - 1; BEGIN
      EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF oncely_server_keys FOR VALUES FROM (%L) TO (%L)',
        'oncely_server_keys_' || to_char(d, 'YYYYMMDD'), d, d + 1); END $$`);
    await expect(route(post('bypassed', { amount: 1 }))).rejects.toMatchObject({ code: 'STORE_FAILED' });
    expect(await ledgerRows('bypassed')).toBe(0);
    expect(await keyRows('bypassed')).toBe(1); // only the other writer's
  });
});

describe('PostgresKeyStore: failures of the database', () => {
  it("a statement the database refuses is a StoreError (cause kept), nothing run; the handler's own error passes as is", async () => {
    const store = new PostgresKeyStore<pg.PoolClient>({ pool: db.pool({ max: 2 }), autoMaintain: false });
    let runs = 0;
    const work = async () => {
      runs++;
      return 'ok';
    };
    // PostgreSQL text cannot hold NUL: the look-up fails before the work.
    const refused = once(store, { scope: 'a\u0000b', key: 'k', operation: 'op' }, work);
    await expect(refused).rejects.toMatchObject({ code: 'STORE_FAILED', cause: expect.any(Error) });
    expect(runs).toBe(0);
    const mine = new RangeError('mine');
    await expect(once(store, { key: 'k-own', operation: 'op' }, () => Promise.reject(mine))).rejects.toBe(mine);
  });
});

describe('PostgresKeyStore: concurrency', () => {
  it('N concurrent requests with one key: one effect, every other a 409 + Retry-After long before the handler ends', async () => {
    const n = 16;
    const pool = db.pool({ max: n + 2 });
    // Warm the pool so that connecting is not what is measured.
    await Promise.all(Array.from({ length: n }, () => pool.query('SELECT 1')));
    const handlerSeconds = 3;
    const payments = app(pool, { sleep: handlerSeconds });
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
    // Bounded by a few round trips (tens of ms; more on a loaded machine), never by the handler (3 s).
    expect(slowest).toBeLessThan(1500);
    expect(ran[0]!.ms).toBeGreaterThan(handlerSeconds * 1000);
    expect(await ledgerRows('race')).toBe(1);
    console.log(
      `[server-postgres] ${n} racing: slowest 409 after ${slowest.toFixed(1)} ms; handler ${ran[0]!.ms.toFixed(0)} ms`,
    );
  });

  it('a 409 costs a few round trips: 50 in a row while the holder sleeps, none waiting for it', async () => {
    const pool = db.pool({ max: 3 });
    const held = app(pool, { sleep: 3 })(post('bound', { amount: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const payments = app(pool);
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const started = performance.now();
      expect((await payments(post('bound', { amount: 1 }))).status).toBe(409);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const p50 = times[25]!;
    const max = times[49]!;
    expect(p50).toBeLessThan(50);
    expect(max).toBeLessThan(1000); // far under the 3 s handler even on a loaded machine
    expect((await held).status).toBe(201);
    console.log(
      `[server-postgres] 409 latency: p50 ${p50.toFixed(2)} ms, p90 ${times[45]!.toFixed(2)} ms, max ${max.toFixed(2)} ms`,
    );
  });

  it('while in progress: another body is 422, the same body 409; after the commit 422 and the replay', async () => {
    const pool = db.pool({ max: 6 });
    const slow = app(pool, { sleep: 1 });
    const first = slow(post('mid', { amount: 1 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const payments = app(pool);
    const other = await payments(post('mid', { amount: 2 }));
    expect(other.status).toBe(422);
    expect(other.headers.get('content-type')).toBe('application/problem+json');
    expect((await payments(post('mid', { amount: 1 }))).status).toBe(409);
    expect((await first).status).toBe(201);
    expect((await payments(post('mid', { amount: 2 }))).status).toBe(422);
    expect((await payments(post('mid', { amount: 1 }))).headers.get('idempotent-replayed')).toBe('true');
    expect(await ledgerRows('mid')).toBe(1);
  });
});

describe('PostgresKeyStore: retention across day partitions', () => {
  it('a day window gone stale (a day turned since the last request) is noticed in the same round trip and the look-up redone: replayed, never run again', async () => {
    const real = db.pool({ max: 2 });
    // The first request's days read as long past, as if they were cached a day ago: the
    // second request's look-up, pruned to them, finds nothing; only the redo finds the key.
    let aged = true;
    const pool = {
      query: real.query.bind(real),
      connect: async () => {
        const conn = await real.connect();
        const query = conn.query.bind(conn) as (config: unknown) => Promise<unknown>;
        (conn as { query: unknown }).query = async (config: { text?: string }) => {
          const result = await query(config);
          if (aged && config?.text?.startsWith('BEGIN')) {
            aged = false;
            Object.assign((result as { rows: object[] }[])[1]!.rows[0]!, { first: '2000-01-01', today: '2000-01-02' });
          }
          return result;
        };
        return conn;
      },
    } as unknown as pg.Pool;
    const store = new PostgresKeyStore({ pool, autoMaintain: false });
    let runs = 0;
    const spec = { scope: 'acct', key: 'stale-days', operation: 'op' };
    expect(await once(store, spec, async () => ++runs)).toMatchObject({ outcome: 'ran', value: 1 });
    expect(await once(store, spec, async () => ++runs)).toMatchObject({ outcome: 'replayed', value: 1 });
    expect(runs).toBe(1);
    expect(aged).toBe(false);
  });

  it('messages sent per request: a claim 3 (BEGIN + locks + look-up, the work, key row + COMMIT), a replay 2 (the look-up, an unawaited ROLLBACK)', async () => {
    const real = db.pool({ max: 1 });
    const sent: string[] = [];
    const wrapped = new WeakSet<object>(); // the pool hands the same connection out again: wrap it once
    const pool = {
      query: real.query.bind(real),
      connect: async () => {
        const conn = await real.connect();
        if (wrapped.has(conn)) return conn;
        wrapped.add(conn);
        const query = conn.query.bind(conn) as (...args: unknown[]) => Promise<unknown>;
        (conn as { query: unknown }).query = (config: { text?: string } | string, ...rest: unknown[]) => {
          sent.push(typeof config === 'string' ? config : (config?.text ?? ''));
          return query(config, ...rest);
        };
        return conn;
      },
    } as unknown as pg.Pool;
    const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
    const spec = { scope: 'acct', key: 'messages', operation: 'op' };
    const work = async (tx: pg.PoolClient) => (await tx.query('SELECT 7 AS n')).rows[0].n as number;
    expect(await once(store, spec, work)).toMatchObject({ outcome: 'ran', value: 7 });
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatch(/^BEGIN[\s\S]*pg_try_advisory_xact_lock[\s\S]*FROM oncely_server_keys/);
    expect(sent[2]).toMatch(/INSERT INTO oncely_server_keys[\s\S]*;\s*COMMIT\s*$/);
    sent.length = 0;
    expect(await once(store, spec, work)).toMatchObject({ outcome: 'replayed', value: 7 });
    expect(sent).toEqual([expect.stringMatching(/^BEGIN/), 'ROLLBACK']);
    expect(await keyRows('messages')).toBe(1);
  });

  async function partitionFor(daysAgo: number) {
    await db.admin.query(`DO $$ DECLARE d date := (now() AT TIME ZONE 'UTC')::date - ${daysAgo}; BEGIN
      EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF oncely_server_keys FOR VALUES FROM (%L) TO (%L)',
        'oncely_server_keys_' || to_char(d, 'YYYYMMDD'), d, d + 1); END $$`);
  }

  it('a key committed yesterday (23:59:59 UTC, within 24 h) is found from today: replayed or 422, never run again', async () => {
    await partitionFor(1);
    const payments = app(db.pool({ max: 2 }));
    await payments(post('midnight', { amount: 4 }));
    // Move the row to the last second of yesterday: another partition, still within 24 h.
    await db.admin.query(
      `UPDATE oncely_server_keys SET day = (now() AT TIME ZONE 'UTC')::date - 1,
              created_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 second'
        WHERE key = 'midnight'`,
    );
    const where = await db.admin.query(
      `SELECT tableoid::regclass::text AS part, to_char((now() AT TIME ZONE 'UTC')::date - 1, 'YYYYMMDD') AS y
         FROM oncely_server_keys WHERE key = 'midnight'`,
    );
    expect(where.rows[0].part).toBe(`oncely_server_keys_${where.rows[0].y}`);
    expect((await payments(post('midnight', { amount: 4 }))).headers.get('idempotent-replayed')).toBe('true');
    expect((await payments(post('midnight', { amount: 5 }))).status).toBe(422);
    expect(await ledgerRows('midnight')).toBe(1);
    expect(await keyRows('midnight')).toBe(1);
  });

  it('a key past retention (25 h old) is new: it runs again, its new row in today’s partition', async () => {
    await partitionFor(2);
    const payments = app(db.pool({ max: 2 }));
    await payments(post('expired', { amount: 6 }));
    await db.admin.query(
      `UPDATE oncely_server_keys SET created_at = now() - interval '25 hours',
              day = ((now() - interval '25 hours') AT TIME ZONE 'UTC')::date WHERE key = 'expired'`,
    );
    const again = await payments(post('expired', { amount: 6 }));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await ledgerRows('expired')).toBe(2);
  });

  it('maintain() drops (not DELETEs) the partitions wholly past retention, keeping the rest', async () => {
    await partitionFor(3);
    await partitionFor(1);
    const store = new PostgresKeyStore({ pool: db.admin });
    const names = await db.admin.query(
      `SELECT 'oncely_server_keys_' || to_char((now() AT TIME ZONE 'UTC')::date - 3, 'YYYYMMDD') AS old,
              'oncely_server_keys_' || to_char((now() AT TIME ZONE 'UTC')::date - 1, 'YYYYMMDD') AS yesterday`,
    );
    const { old, yesterday } = names.rows[0];
    const { dropped } = await store.maintain();
    expect(dropped).toContain(old);
    expect(dropped).not.toContain(yesterday);
    expect((await db.admin.query('SELECT to_regclass($1) AS t', [old])).rows[0].t).toBeNull();
    expect((await db.admin.query('SELECT to_regclass($1) AS t', [yesterday])).rows[0].t).not.toBeNull();
  });
});

describe('checkKeyInvariant: effects = distinct keys per operation', () => {
  it('no drift after runs, replays and a thrown handler; an effect written outside a key is drift 1', async () => {
    await db.admin.query(
      'CREATE TABLE payouts (id bigserial PRIMARY KEY, key text, created_at timestamptz NOT NULL DEFAULT now())',
    );
    const pool = db.pool({ max: 2 });
    const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
    let fail = false;
    const route = createIdempotency({ store }).route('POST /payouts', async ({ tx, key }) => {
      await tx.query('INSERT INTO payouts (key) VALUES ($1)', [key]);
      if (fail) throw new Error('boom');
      return { status: 201 };
    });
    for (const key of ['p1', 'p2', 'p1', 'p3', 'p2']) await route(post(key, { amount: 1 }, '/payouts'));
    fail = true;
    await expect(route(post('p4', { amount: 1 }, '/payouts'))).rejects.toThrow('boom');
    const options = {
      operation: 'POST /payouts',
      effectsSql: 'SELECT count(*) FROM payouts WHERE created_at > $1',
    };
    expect(await checkKeyInvariant(pool, options)).toEqual({
      operation: 'POST /payouts',
      keys: 3,
      effects: 3,
      drift: 0,
    });
    await db.admin.query("INSERT INTO payouts (key) VALUES ('outside')");
    expect((await checkKeyInvariant(pool, options)).drift).toBe(1);
  });
});
