/**
 * oncely/server on PostgreSQL across processes: 8 server processes × bursts of the same
 * keys — one effect per key. And when the server process dies: SIGKILLed after the handler's
 * ledger row but before the commit — no key, no effect, and the next attempt runs once;
 * SIGKILLed after the commit but before the answer leaves — the next attempt is a replay,
 * one effect.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { type OnceResult, once } from '../src/server/once.js';
import { bundleChild } from './helpers/bundle-child.js';
import { spawnLineChild } from './helpers/line-child.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
const repo = fileURLToPath(new URL('..', import.meta.url));
const script = path.join(repo, '.tmp', `server-child-${process.pid}.mjs`);

beforeAll(async () => {
  await bundleChild(fileURLToPath(new URL('./postgres/server-child.ts', import.meta.url)), script, ['pg']);
  await new PostgresKeyStore({ pool: db.admin }).migrate();
  await db.admin.query('CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL)');
}, 60_000);
afterAll(() => rm(script, { force: true }));

/** Runs the child until it prints `line`, then SIGKILLs it. */
async function killAt(key: string, when: 'before-commit' | 'after-commit', line: string): Promise<void> {
  const child = spawnLineChild(script, [JSON.stringify(db.config), key, when], { cwd: repo });
  await child.waitFor((printed) => printed === line);
  await child.kill();
}

/** The next attempt, as a client would make it: again after a 409 (the dead backend may not have noticed yet). */
async function nextAttempt(store: PostgresKeyStore<pg.PoolClient>, key: string, runs: { n: number }) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const result: OnceResult<unknown> = await once(
      store,
      { scope: 'acct', key, operation: 'payout', request: { amount: 5 } },
      async (tx) => {
        runs.n++;
        await tx.query('INSERT INTO ledger (key) VALUES ($1)', [key]);
        return { paid: 5 };
      },
    );
    if (result.outcome !== 'in_progress' || Date.now() > deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const count = async (sql: string, key: string) => Number((await db.admin.query(sql, [key])).rows[0].n);

describe('oncely/server on PostgreSQL: the server process SIGKILLed', () => {
  it('between its ledger row and the commit: no effect, no key; the next attempt runs once', async () => {
    await killAt('k-before', 'before-commit', 'written');
    const store = new PostgresKeyStore<pg.PoolClient>({ pool: db.pool({ max: 2 }), autoMaintain: false });
    const runs = { n: 0 };
    const result = await nextAttempt(store, 'k-before', runs);
    expect(result).toEqual({ outcome: 'ran', value: { paid: 5 } });
    expect(runs.n).toBe(1);
    expect(await count('SELECT count(*) AS n FROM ledger WHERE key = $1', 'k-before')).toBe(1);
    expect(await count('SELECT count(*) AS n FROM oncely_server_keys WHERE key = $1', 'k-before')).toBe(1);
  });

  it('after the commit, before the answer left: the next attempt is the replay; one effect', async () => {
    await killAt('k-after', 'after-commit', 'committed');
    const store = new PostgresKeyStore<pg.PoolClient>({ pool: db.pool({ max: 2 }), autoMaintain: false });
    const runs = { n: 0 };
    expect(await nextAttempt(store, 'k-after', runs)).toEqual({ outcome: 'replayed', value: { paid: 5 } });
    expect(runs.n).toBe(0);
    expect(await count('SELECT count(*) AS n FROM ledger WHERE key = $1', 'k-after')).toBe(1);
  });
});

describe('oncely/server on PostgreSQL: 8 processes × bursts of the same keys', () => {
  it('each key runs once across all processes; every other answer is in_progress or a replay', async () => {
    const keys = ['burst-1', 'burst-2', 'burst-3'];
    const children = Array.from({ length: 8 }, () => {
      const child = spawnLineChild(script, [JSON.stringify(db.config), 'burst', keys.join(','), '3'], { cwd: repo });
      const ready = child.waitFor((line) => line === 'ready');
      const lines = child.waitFor((line) => line === 'done').then(() => [...child.lines]);
      return { child, lines, ready };
    });
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.child.proc.stdin.write('go\n');
    const answers = (await Promise.all(children.map((c) => c.lines))).flat().filter((l) => l.startsWith('burst-'));
    expect(answers).toHaveLength(8 * 3 * 3);
    // The bursts did meet: some answers were 409s of a key another process held.
    expect(answers.filter((l) => l.endsWith(' in_progress')).length).toBeGreaterThan(0);
    for (const key of keys) {
      const outcomes = answers.filter((l) => l.startsWith(`${key} `)).map((l) => l.split(' ')[1]);
      expect(
        outcomes.filter((o) => o === 'ran'),
        key,
      ).toHaveLength(1);
      expect(
        outcomes.every((o) => o === 'ran' || o === 'in_progress' || o === 'replayed'),
        key,
      ).toBe(true);
      expect(await count('SELECT count(*) AS n FROM ledger WHERE key = $1', key)).toBe(1);
    }
  }, 60_000);
});
