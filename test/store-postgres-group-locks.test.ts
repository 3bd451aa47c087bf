/**
 * PostgreSQL group writes and row-lock order (`postgres/group-writes.ts`). A group statement
 * locks many rows; two groups of two stores (two machines) that lock overlapping rows in
 * different orders deadlock, and PostgreSQL aborts one (SQLSTATE 40P01) after
 * `deadlock_timeout`. Here `deadlock_timeout` is 50 ms, under the groups' 200 ms
 * `lock_timeout`, so that a cycle is found and counted as a deadlock (with the default 1 s
 * the lock_timeout breaks it first: a 55P03 and a 200 ms stall, counted nowhere).
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Queryable, QueryConfig } from '../postgres/database.js';
import { takePending } from '../postgres/pending.js';
import { PostgresStore } from '../postgres/postgres-store.js';
import type { IntentRecord } from '../src/store/store.js';
import { useTestDatabase } from './postgres/database.js';
import { intentRecord } from './store-conformance.js';

// No autovacuum: its ANALYZE would change the group statement's plan during the test.
const db = useTestDatabase({ settings: { deadlock_timeout: '50ms', autovacuum: 'off' } });

/** A pool as the store sees it, recording each statement run and each failure's SQLSTATE. */
function recording(pool: pg.Pool) {
  const codes: string[] = [];
  const statements: QueryConfig[] = [];
  const queryable: Queryable = {
    query: (config: QueryConfig) => {
      statements.push(config);
      return pool.query(config).catch((error: unknown) => {
        codes.push(String((error as { code?: unknown }).code));
        throw error;
      });
    },
  };
  return { queryable, codes, statements };
}

/** Deadlocks PostgreSQL has counted in this database (reported by backends at the latest when they exit). */
async function deadlocks(): Promise<number> {
  const result = await db.admin.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()');
  return Number(result.rows[0].deadlocks);
}

/** Ends the pools and waits until their backends have exited, and so have reported their counts. */
async function endPools(application: string, pools: pg.Pool[]): Promise<void> {
  await Promise.all(pools.map((pool) => pool.end()));
  for (let i = 0; i < 400; i++) {
    const left = await db.admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
      application,
    ]);
    if (left.rows[0].n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("the pools' backends did not exit");
}

/** Waits until a backend of `application` waits for a row lock (held by backend `by`, if given). */
async function waitingForLock(application: string, by?: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const waiting = await db.admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'
         AND ($2::int IS NULL OR $2::int = ANY (pg_blocking_pids(pid)))`,
      [application, by ?? null],
    );
    if (waiting.rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`${application} never waited for a lock`);
}

/** A scope of a few thousand rows: the group compare-and-set reads the table by a sequential scan. */
async function fill(scope: string): Promise<void> {
  await db.admin.query(
    `INSERT INTO oncely_intents (scope, name, key, state, attempts, created_at, updated_at)
     SELECT $1, 'f' || i, 'k' || i, 'succeeded', 1, 1, 1 FROM generate_series(1, 3000) AS i`,
    [scope],
  );
}

const bump = (r: IntentRecord | undefined): IntentRecord | undefined =>
  r && { ...r, attempts: r.attempts + 1, updatedAt: r.updatedAt + 1 };

describe('PostgresStore group writes: row-lock order', () => {
  // Guards the lock order of the group compare-and-set. With a scope of a few thousand rows
  // PostgreSQL runs `UPDATE … FROM json_to_recordset` as a hash join over a sequential scan
  // of the table, which locks rows where their current versions lie, not in the JSON's
  // sorted order, and a row moves with each update (the worker's takes move rows without
  // changing their versions, so both stores' compare-and-sets still match). Before groups
  // locked their rows first, in key order, 5 runs of this test in 6 saw 1 to 7 deadlocks
  // (without the worker, none in 10 runs: the cycle needs a group held up between its locks).
  it('two stores updating overlapping intents in opposite orders, a worker taking them meanwhile: no deadlock, every update lands once', async () => {
    await db.reset();
    await fill('s');
    const names = Array.from({ length: 40 }, (_, i) => `i${String(i).padStart(2, '0')}`);
    const setup = new PostgresStore({ pool: db.admin });
    for (const name of names) await setup.claim(intentRecord('s', name));
    await db.admin.query('ANALYZE oncely_intents');

    const application = 'oncely-group-locks';
    const pool = (max: number, options?: string) => {
      const p = new pg.Pool({ ...db.config, max, options, application_name: application });
      p.on('error', () => undefined);
      return p;
    };
    const pools = [pool(6), pool(6), pool(4, '-c lock_timeout=5')];
    const [a, b, w] = pools.map(recording) as [
      ReturnType<typeof recording>,
      ReturnType<typeof recording>,
      ReturnType<typeof recording>,
    ];
    const stores = [a, b].map((r) => new PostgresStore({ pool: r.queryable, writeConcurrency: 4 }));
    const worker = new PostgresStore({ pool: w.queryable });
    // The group compare-and-set reads the table by a sequential scan here (what made the lock order vary).
    const probe = new PostgresStore({ pool: a.queryable, writeConcurrency: 1 });
    for (const name of names) await probe.get('s', name); // remembered: each update is one compare-and-set
    await Promise.all(names.map((name) => probe.update('s', name, (r) => r && { ...r }))); // one alone, then a group
    const group = a.statements.find((s) => s.name?.startsWith('oncely_group_cas'))!;
    const plan = await db.admin.query({ text: `EXPLAIN ${group.text}`, values: group.values });
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Seq Scan on oncely_intents t\b/);
    const before = await deadlocks();
    const rounds = 60;
    const failures: unknown[] = [];
    let landed = 0;
    try {
      let done = false;
      // A worker takes 10 pending intents at a time (a lease of 0 ms: due again at once): new
      // row versions, the same compare-and-set versions. Its SKIP LOCKED may still wait (while
      // following a row's update chain), so its lock_timeout is 5 ms: it gives up before any
      // deadlock check, and its refusals are not counted.
      const draining = Promise.all(
        Array.from({ length: 4 }, async () => {
          while (!done) {
            await takePending(worker, 's', { owner: 'w', limit: 10, leaseMs: 0, idleAfter: 0 }).catch(
              (error: unknown) => {
                if ((error as { cause?: { code?: string } }).cause?.code !== '55P03') failures.push(error);
              },
            );
          }
        }),
      );
      // A loop per intent in each store updates it `rounds` times, one update after the other;
      // store 0 starts its loops in name order, store 1 in the reverse order. Each store's
      // waiting writes group, and the two stores' groups overlap all the time.
      const orders = [names, [...names].reverse()];
      await Promise.all(
        stores.flatMap((store, s) =>
          orders[s]!.map(async (name) => {
            for (let round = 0; round < rounds; round++)
              await store.update('s', name, bump).then(
                (r) => {
                  if (r) landed++;
                },
                (error: unknown) => failures.push(error),
              );
          }),
        ),
      );
      done = true;
      await draining;
    } finally {
      await endPools(application, pools);
    }
    const seen = [...a.codes, ...b.codes, ...w.codes.filter((c) => c !== '55P03')];
    const counted = (await deadlocks()) - before;
    const groups = [...a.statements, ...b.statements].filter((s) => s.name?.startsWith('oncely_group_cas'));
    expect(failures).toEqual([]);
    expect(landed).toBe(2 * rounds * names.length);
    const rows = await db.admin.query(`SELECT name, attempts FROM oncely_intents WHERE name LIKE 'i%' ORDER BY name`);
    expect(rows.rows).toEqual(names.map((name) => ({ name, attempts: 2 * rounds })));
    expect(groups.length).toBeGreaterThan(rounds); // the writes did go in groups
    expect(
      seen.filter((code) => code === '40P01'),
      `SQLSTATEs seen: ${seen.join(', ')}`,
    ).toEqual([]);
    expect(counted).toBe(0);
  }, 120_000);

  // The same cycle, step by step. Group A (o, p, q) takes its snapshot, then waits for o
  // (an app transaction holds it); p is moved (a worker's take) and held by another app
  // transaction; group B (p, q) starts. Reading the table in storage order, B found q before
  // p's new version and locked it, A then got p and waited for q: 40P01. In key order both
  // lock p first: A, first in line for p, then takes q, and B's compare-and-sets lose and rerun.
  it('a group whose rows moved since its snapshot: two groups wait in line, not in a cycle', async () => {
    await db.reset();
    await fill('d');
    const setup = new PostgresStore({ pool: db.admin });
    for (const name of ['o', 'p', 'q', 'y', 'z']) await setup.claim(intentRecord('d', name));
    await db.admin.query('ANALYZE oncely_intents');
    const pools = {
      a: db.pool({ max: 2, application_name: 'group-a' }),
      b: db.pool({ max: 2, application_name: 'group-b' }),
    };
    const a = recording(pools.a);
    const b = recording(pools.b);
    const storeA = new PostgresStore({ pool: a.queryable, writeConcurrency: 1 });
    const storeB = new PostgresStore({ pool: b.queryable, writeConcurrency: 1 });
    for (const name of ['o', 'p', 'q', 'y', 'z']) {
      await storeA.get('d', name);
      await storeB.get('d', name);
    }
    const apps = db.pool({ max: 2 });
    const [h1, h3] = [await apps.connect(), await apps.connect()];
    let results: (IntentRecord | undefined)[] = [];
    try {
      await h1.query('BEGIN');
      await h1.query(`SELECT 1 FROM oncely_intents WHERE scope = 'd' AND name = 'o' FOR UPDATE`);
      const first = storeA.update('d', 'z', bump); // alone; the next three go as one group
      const groupA = ['o', 'p', 'q'].map((name) => storeA.update('d', name, bump));
      await first;
      await waitingForLock('group-a'); // group A has its snapshot and waits for o
      await db.admin.query(`UPDATE oncely_intents SET worker_owner = 'w' WHERE scope = 'd' AND name = 'p'`);
      await h3.query('BEGIN');
      const h3pid = (await h3.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await h3.query(`SELECT 1 FROM oncely_intents WHERE scope = 'd' AND name = 'p' FOR UPDATE`);
      await h1.query('COMMIT'); // group A goes on: o, then p, held by h3
      await waitingForLock('group-a', h3pid);
      const second = storeB.update('d', 'y', bump);
      const groupB = ['p', 'q'].map((name) => storeB.update('d', name, bump));
      await second;
      await waitingForLock('group-b'); // group B waits behind A (for p, or, in storage order, holding q)
      await h3.query('COMMIT');
      results = await Promise.all([...groupA, ...groupB]);
    } finally {
      await h1.query('ROLLBACK').catch(() => undefined);
      await h3.query('ROLLBACK').catch(() => undefined);
      h1.release();
      h3.release();
    }
    expect([...a.codes, ...b.codes]).toEqual([]); // was ['40P01']: one group aborted, its writes redone alone
    expect(a.statements.map((s) => s.name)).toContain('oncely_group_cas');
    expect(b.statements.map((s) => s.name)).toContain('oncely_group_cas');
    // A wrote all three; B's compare-and-sets lost to A's and ran again on A's rows.
    expect(results.map((r) => r && [r.name, r.attempts])).toEqual([
      ['o', 1],
      ['p', 1],
      ['q', 1],
      ['p', 2],
      ['q', 2],
    ]);
  });

  // The fallback: a group that does take part in a deadlock (with an app transaction that
  // locks rows out of key order) is refused with 40P01 and redone one write at a time, each
  // caller with its own answer: its record, its record after its updater ran again on a row
  // the app changed, or its own error.
  it('a group refused with 40P01 is redone row by row; each caller gets its own result or error', async () => {
    await db.reset();
    // The group's deadlock check (150 ms) comes before its lock_timeout (200 ms); the app's never.
    const pool = db.pool({ max: 8, application_name: 'group-fallback', options: '-c deadlock_timeout=150' });
    const r = recording(pool);
    const store = new PostgresStore({ pool: r.queryable, writeConcurrency: 1 });
    for (const name of ['a', 'b', 'c', 'd', 'first']) {
      await store.claim(intentRecord('f', name));
      await store.get('f', name);
    }
    const app = await db.pool({ max: 1 }).connect();
    try {
      await app.query(`SET deadlock_timeout = '10s'`);
      await app.query('BEGIN');
      await app.query(
        `UPDATE oncely_intents SET attempts = 10, version = version + 1 WHERE scope = 'f' AND name = 'c'`,
      );
      const runs: string[] = [];
      const updater = (patch: Partial<IntentRecord>) => (current: IntentRecord | undefined) => {
        runs.push(current!.name);
        return current && { ...current, attempts: current.attempts + 1, ...patch };
      };
      const first = store.update('f', 'first', updater({})); // alone; the next four go as one group
      const writes = [
        store.update('f', 'a', updater({})),
        store.update('f', 'b', updater({})),
        store.update('f', 'c', updater({})),
        store.update('f', 'd', updater({ key: 'key-f-a' })), // another intent's key: refused alone
      ].map((p) =>
        p.then(
          (record) => record && [record.name, record.attempts],
          (error: Error) => error.name,
        ),
      );
      await first;
      await waitingForLock('group-fallback'); // the group holds a and b, and waits for c
      await app.query(`SELECT 1 FROM oncely_intents WHERE scope = 'f' AND name = 'b' FOR UPDATE`); // the cycle
      await app.query('COMMIT');
      expect(await Promise.all(writes)).toEqual([['a', 1], ['b', 1], ['c', 11], 'InvalidKeyError']);
      expect(r.codes).toEqual(['40P01', '23505']); // the group, then d alone
      expect(r.statements.map((s) => s.name).filter((n) => n?.includes('cas'))).toEqual([
        'oncely_cas',
        'oncely_group_cas',
        'oncely_cas',
        'oncely_cas',
        'oncely_cas',
        'oncely_cas',
        'oncely_cas', // c again, on the app's row
      ]);
      expect(runs.filter((n) => n === 'c')).toEqual(['c', 'c']);
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      app.release();
    }
  });
});
