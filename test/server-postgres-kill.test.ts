/**
 * oncely/server on PostgreSQL when the server process dies: SIGKILLed after the handler's
 * ledger row but before the commit — no key, no effect, and the next attempt runs once;
 * SIGKILLed after the commit but before the answer leaves — the next attempt is a replay,
 * one effect.
 */
import { spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { type OnceResult, once } from '../src/server/once.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
const repo = fileURLToPath(new URL('..', import.meta.url));
const script = path.join(repo, '.tmp', `server-child-${process.pid}.mjs`);

beforeAll(async () => {
  await mkdir(path.dirname(script), { recursive: true });
  await build({
    entryPoints: [fileURLToPath(new URL('./postgres/server-child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: script,
    external: ['pg'],
    logLevel: 'warning',
  });
  await new PostgresKeyStore({ pool: db.admin }).migrate();
  await db.admin.query('CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL)');
}, 60_000);
afterAll(() => rm(script, { force: true }));

/** Runs the child until it prints `line`, then SIGKILLs it. */
async function killAt(key: string, when: 'before-commit' | 'after-commit', line: string): Promise<void> {
  const child = spawn(process.execPath, [script, JSON.stringify(db.config), key, when], { cwd: repo });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk) => {
    err += chunk;
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes(`${line}\n`)) resolve();
    });
    child.once('exit', () => reject(new Error(`the child exited before "${line}": ${err}`)));
  });
  child.kill('SIGKILL');
  await exited;
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
