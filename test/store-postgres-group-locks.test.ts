/**
 * PostgreSQL group writes and row-lock order (`postgres/group-writes.ts`). A group statement
 * locks many rows; two groups of two stores (two machines) that lock overlapping rows in
 * different orders deadlock, and PostgreSQL aborts one (SQLSTATE 40P01) after
 * `deadlock_timeout`. Here `deadlock_timeout` is 50 ms, under the groups' 200 ms
 * `lock_timeout`, so that a cycle is found and counted as a deadlock (with the default 1 s
 * the lock_timeout breaks it first: a 55P03 and a 200 ms stall, counted nowhere).
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Queryable, QueryConfig } from '../postgres/database.js';
import { PostgresStore } from '../postgres/postgres-store.js';
import type { IntentRecord } from '../src/store/store.js';
import { useTestDatabase } from './postgres/database.js';
import { intentRecord } from './store-conformance.js';

const db = useTestDatabase({ settings: { deadlock_timeout: '50ms' } });

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

describe('PostgresStore group writes: row-lock order', () => {
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
