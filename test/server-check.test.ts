/**
 * `oncely check` against an Express app on oncely/server, on the memory store and on
 * PostgreSQL: the default `ietf` client profile needs no change, every finding passes
 * (retention is not on the wire, and the stored 400 of a refused body is reported: info).
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import type pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { runCheck } from '../src/cli/check.js';
import { formatReport } from '../src/cli/report.js';
import { idempotent } from '../src/server/express.js';
import { createIdempotency, type KeyStore, MemoryKeyStore } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';
import { severities } from './servers/once-per-intent.js';

const db = useTestDatabase();
const closers: (() => void)[] = [];
afterAll(() => {
  for (const close of closers) close();
});

/** A payments API whose handler takes 150 ms and refuses a body without a numeric amount (400, stored). */
async function serve<Tx>(store: KeyStore<Tx>, write: (tx: Tx, amount: number) => Promise<void>): Promise<string> {
  const idempotency = createIdempotency({ store });
  const app = express();
  app.use(express.json());
  app.post(
    '/payments',
    idempotent(idempotency, async ({ tx, json }) => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      const amount = (json as { amount?: unknown } | undefined)?.amount;
      if (typeof amount !== 'number') return { status: 400, body: { error: 'amount must be a number' } };
      await write(tx, amount);
      return { status: 201, body: { amount, currency: (json as { currency?: string }).currency } };
    }),
  );
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/payments`;
}

async function expectNoChanges(url: string) {
  const report = await runCheck({ url, json: { amount: 1000, currency: 'EUR' }, errorJson: { amount: 'x' } });
  if (process.env.ONCELY_PRINT_REPORTS) console.log(formatReport(report));
  expect(severities(report.findings)).toEqual({
    'key-encoding': 'pass',
    replay: 'pass',
    'replay-marker': 'pass',
    'key-length': 'pass',
    mismatch: 'pass',
    'key-order': 'pass',
    'number-type': 'pass',
    race: 'pass',
    'in-progress': 'pass',
    'missing-key': 'pass',
    // The draft's rule, which oncely/server keeps: an answered error is stored with the key.
    'error-answer': 'info',
    retention: 'info',
  });
  expect(report.findings.find((finding) => finding.id === 'error-answer')!.result).toBe(
    'A 400 is stored: the key stays bound to it.',
  );
  expect(report.failed).toBe(false);
  expect(report.suggestion!.changes).toEqual({ name: 'checked' });
  return report;
}

test('oncely check: an Express app on the memory store needs no profile change', async () => {
  let effects = 0;
  const url = await serve(new MemoryKeyStore(), async (tx, _amount) => tx.onCommit(() => effects++));
  await expectNoChanges(url);
  expect(effects).toBeGreaterThan(0);
});

test('oncely check: an Express app on PostgreSQL needs no profile change; effects = distinct keys', async () => {
  const pool = db.pool({ max: 12 });
  const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  await store.migrate();
  await db.admin.query('CREATE TABLE ledger (key_row serial PRIMARY KEY, amount integer NOT NULL)');
  const url = await serve(store, async (tx, amount) => {
    await tx.query('INSERT INTO ledger (amount) VALUES ($1)', [amount]);
  });
  await expectNoChanges(url);
  const { rows } = await db.admin.query(
    `SELECT (SELECT count(*)::int FROM ledger) AS effects,
            (SELECT count(*)::int FROM oncely_server_keys WHERE status = 201) AS keys`,
  );
  expect(rows[0].effects).toBeGreaterThan(0);
  expect(rows[0].effects).toBe(rows[0].keys);
});
