/**
 * Round 3, PostgreSQL group writes (`postgres/group-writes.ts`): what one write of a group
 * does to the others. A real throwaway cluster; `writeConcurrency: 1` so that writes asked
 * for while one runs go together as one statement.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../postgres/postgres-store.js';
import { StoreError } from '../../src/errors.js';
import type { IntentRecord } from '../../src/store/store.js';
import { useTestDatabase } from '../postgres/database.js';
import { intentRecord } from '../store-conformance.js';

const db = useTestDatabase();

/** Settles every promise; answers each as 'ok' or the error's class name. */
const outcomes = (promises: Promise<unknown>[]) =>
  Promise.allSettled(promises).then((all) =>
    all.map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as Error).constructor.name)),
  );

describe('r3: PostgreSQL group writes', () => {
  it('a row refused for its size (SQLSTATE 54000, not class 22/23/40) fails only its own write, not its group', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 4 }), writeConcurrency: 1 });
    // An incompressible name too long for the primary key's btree entry (> 2704 bytes):
    // "index row size … exceeds btree version 4 maximum 2704", SQLSTATE 54000.
    const huge = randomBytes(3000).toString('base64');
    const first = store.claim(intentRecord('s', 'first')); // alone: the next ones wait and group
    const bad = store.claim(intentRecord('s', huge, { key: 'key-huge' }));
    const good = store.claim(intentRecord('s', 'good'));
    const other = store.claim(intentRecord('t', 'good')); // another scope, the same name
    expect(await outcomes([first, bad, good, other])).toEqual(['ok', 'StoreError', 'ok', 'ok']);
    expect((await store.get('s', 'good'))?.key).toBe('key-s-good');
    expect((await store.get('t', 'good'))?.key).toBe('key-t-good');
  });

  it('the same through the client limits: a 1024-character CJK intent name (3 bytes each) fails only its own claim', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 4 }), writeConcurrency: 1 });
    const bytes = randomBytes(2048);
    let name = '';
    for (let i = 0; i < 1024; i++) name += String.fromCharCode(0x4e00 + (bytes.readUInt16LE(i * 2) % 0x5000));
    const first = store.claim(intentRecord('s', 'first'));
    const bad = store.claim(intentRecord('s', name, { key: 'key-cjk' }));
    const good = store.claim(intentRecord('s', 'good'));
    expect(await outcomes([first, bad, good])).toEqual(['ok', 'StoreError', 'ok']);
  });

  it("a group that fails as a whole (a timeout) gives each caller an error naming its own scope, not the first write's", async () => {
    await db.reset();
    const pool = db.pool({ max: 4 });
    const store = new PostgresStore({ pool, writeConcurrency: 1, timeout: 500 });
    const app = await pool.connect();
    try {
      await app.query('BEGIN');
      // A table lock is taken before the group's own lock_timeout is set: the group times out whole.
      await app.query('LOCK TABLE oncely_intents IN SHARE ROW EXCLUSIVE MODE');
      const first = store.claim(intentRecord('s', 'first')).catch((e: unknown) => e);
      const held = store.claim(intentRecord('aaa', 'held')).catch((e: unknown) => e);
      const mine = store.claim(intentRecord('zzz', 'mine')).catch((e: unknown) => e);
      await first;
      const [a, b] = (await Promise.all([held, mine])) as [StoreError, StoreError];
      await app.query('ROLLBACK');
      expect(a).toBeInstanceOf(StoreError);
      expect(b).toBeInstanceOf(StoreError);
      expect([a.scope, a.intent]).toEqual(['aaa', 'held']);
      expect([b.scope, b.intent]).toEqual(['zzz', 'mine']); // was 'aaa': another scope's name on this caller's error
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      app.release();
    }
  });

  // Was a failure: a group refused on its data was redone one write at a time, each awaited
  // before the next, so the last waited for all before it (two writes blocked on locked rows
  // put the unrelated one at ~2 x timeout; rule 11). They are redone at once now.
  it('after a group refused on data, each write redone alone still ends within one store timeout', async () => {
    await db.reset();
    const pool = db.pool({ max: 8 });
    const store = new PostgresStore({ pool, writeConcurrency: 1, timeout: 800 });
    await store.claim(intentRecord('s', 'taken', { key: 'K' }));
    const app = await pool.connect();
    try {
      await app.query('BEGIN');
      await store.claim(intentRecord('s', 'b'), { transaction: app }); // locked until the app ends
      await store.claim(intentRecord('s', 'c'), { transaction: app });
      const first = store.claim(intentRecord('s', 'first')); // alone; the next four group
      const settled: string[] = [];
      const track = (name: string, p: Promise<unknown>) =>
        p.then(
          () => settled.push(`${name}:ok`),
          () => settled.push(`${name}:failed`),
        );
      const dup = track('dup', store.claim(intentRecord('s', 'a', { key: 'K' }))); // 23505 first: group refused
      const b = track('b', store.claim(intentRecord('s', 'b')));
      const c = track('c', store.claim(intentRecord('s', 'c')));
      const d = track('d', store.claim(intentRecord('s', 'd')));
      await first;
      await d;
      // d is answered on its own, not after b and c have waited out their timeouts one after the other.
      expect(settled).toContain('d:ok');
      expect(settled).not.toContain('b:failed');
      expect(settled).not.toContain('c:failed');
      await app.query('ROLLBACK');
      await Promise.all([dup, b, c]);
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      app.release();
    }
  });

  // Held: results are matched on (scope, name), so two scopes with one name, in one group, each get their own.
  it('held: a CAS group over two scopes with the same name maps each answer to its own caller', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 4 }), writeConcurrency: 1 });
    await store.claim(intentRecord('a', 'x'));
    await store.claim(intentRecord('b', 'x'));
    await store.claim(intentRecord('a', 'y'));
    // b/x changed behind the store's back: its remembered version is stale, its CAS must lose and retry.
    await db.admin.query(`UPDATE oncely_intents SET version = version + 1 WHERE scope = 'b' AND name = 'x'`);
    const runs: string[] = [];
    const bump = (scope: string) => (r?: IntentRecord) => {
      runs.push(scope);
      return r && { ...r, attempts: r.attempts + 1, updatedAt: r.attempts + 2 };
    };
    const results = await Promise.all([
      store.update('a', 'y', bump('a/y')),
      store.update('a', 'x', bump('a/x')),
      store.update('b', 'x', bump('b/x')),
    ]);
    expect(results.map((r) => r && [r.scope, r.name, r.attempts])).toEqual([
      ['a', 'y', 1],
      ['a', 'x', 1],
      ['b', 'x', 1],
    ]);
    expect(runs.filter((r) => r === 'b/x').length).toBe(2); // lost once on the stale version, then won
    const rows = await db.admin.query('SELECT scope, name, attempts FROM oncely_intents ORDER BY scope, name');
    expect(rows.rows).toEqual([
      { scope: 'a', name: 'x', attempts: 1 },
      { scope: 'a', name: 'y', attempts: 1 },
      { scope: 'b', name: 'x', attempts: 1 },
    ]);
  });

  // Held: the group compare-and-set matches identity (key, created_at) as well as version.
  it('held: a grouped CAS over a remembered row deleted and formed again (same version 1) is refused and rerun', async () => {
    await db.reset();
    const store = new PostgresStore({ pool: db.pool({ max: 4 }), writeConcurrency: 1 });
    await store.claim(intentRecord('s', 'x', { key: 'old-key' }));
    await store.claim(intentRecord('s', 'y')); // remembered too: both updates are compare-and-sets, in one group
    await db.admin.query(`DELETE FROM oncely_intents WHERE scope = 's' AND name = 'x'`);
    await new PostgresStore({ pool: db.admin }).claim(intentRecord('s', 'x', { key: 'new-key' }));
    const keys: (string | undefined)[] = [];
    const first = store.claim(intentRecord('s', 'first')); // alone; the two updates group
    const x = store.update('s', 'x', (r?: IntentRecord) => {
      keys.push(r?.key);
      return r?.key === 'old-key' ? { ...r, state: 'in_flight' } : undefined;
    });
    const y = store.update('s', 'y', (r?: IntentRecord) => r && { ...r, attempts: r.attempts + 1 });
    await Promise.all([first, x, y]);
    expect(keys).toEqual(['old-key', 'new-key']);
    expect(await store.get('s', 'x')).toMatchObject({ key: 'new-key', state: 'ready' });
    expect((await y)?.attempts).toBe(1);
  });

  // Was a failure: a group statement waited for every row lock it needed, so one intent whose
  // row was locked by an open transaction (the app's own `claim(…, { transaction })` not yet
  // committed, a worker's FOR UPDATE) held every other write of its group past `timeout`.
  // Groups now wait at most 200 ms for a row lock (lock_timeout), then their writes go alone.
  it('a row locked by an open transaction does not hold (or fail) the unrelated writes grouped with it', async () => {
    await db.reset();
    const pool = db.pool({ max: 4 });
    const store = new PostgresStore({ pool, writeConcurrency: 1, timeout: 1_500 });
    const app = await pool.connect();
    try {
      await app.query('BEGIN');
      await store.claim(intentRecord('s', 'held'), { transaction: app }); // uncommitted insert: its row is locked
      const first = store.claim(intentRecord('s', 'first')); // alone; the next two wait for it and group
      const held = store.claim(intentRecord('s', 'held')).catch(() => undefined); // waits for the app's transaction
      const unrelated = store.claim(intentRecord('s', 'unrelated'));
      const answer = await outcomes([first, unrelated]);
      await app.query('ROLLBACK');
      await held;
      expect(answer).toEqual(['ok', 'ok']); // was ['ok', 'StoreError']: held up past the timeout by the locked row
    } finally {
      await app.query('ROLLBACK').catch(() => undefined);
      app.release();
    }
  });
});
