/**
 * PostgresKeyStore behind PgBouncer in transaction mode (each transaction may get another
 * server connection): transaction-level advisory locks only, no session state, unnamed
 * statements. One key raced by more clients than the pooler has server connections: one
 * effect, the others 409; a handler that throws leaves nothing; replays byte for byte.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { createIdempotency } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';
import { type Bouncer, startPgBouncer } from './postgres/pgbouncer.js';

const db = useTestDatabase();
let bouncer: Bouncer | undefined;
let pool: pg.Pool;

beforeAll(async () => {
  await new PostgresKeyStore({ pool: db.admin }).migrate();
  await db.admin.query('CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL)');
  bouncer = await startPgBouncer(db.cluster, { poolMode: 'transaction', poolSize: 3 });
  pool = new pg.Pool({ host: bouncer.host, port: bouncer.port, user: 'postgres', database: 'postgres', max: 12 });
  pool.on('error', () => undefined);
}, 60_000);

afterAll(async () => {
  await pool?.end().catch(() => undefined);
  await bouncer?.stop();
});

function payments(behaviour: { sleep?: number; fail?: boolean } = {}) {
  const store = new PostgresKeyStore<pg.PoolClient>({ pool, autoMaintain: false });
  return createIdempotency({ store }).route('POST /payments', async ({ tx, key }) => {
    const { rows } = await tx.query('INSERT INTO ledger (key) VALUES ($1) RETURNING id', [key]);
    if (behaviour.sleep) await tx.query('SELECT pg_sleep($1)', [behaviour.sleep]);
    if (behaviour.fail) throw new Error('handler failed');
    return { status: 201, body: { id: Number(rows[0].id) } };
  });
}

const post = (key: string) =>
  new Request('https://shop.test/payments', {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json' },
    body: '{"amount":1}',
  });
const ledgerRows = async (key: string) =>
  Number((await db.admin.query('SELECT count(*) AS n FROM ledger WHERE key = $1', [key])).rows[0].n);

describe('PostgresKeyStore behind PgBouncer (transaction mode)', () => {
  it('10 clients race one key over 3 server connections: one effect, nine 409s; then the replay', async () => {
    const slow = payments({ sleep: 1 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => slow(post('bounced'))));
    const statuses = answers.map((response) => response.status).sort();
    expect(statuses).toEqual([201, ...Array(9).fill(409)]);
    const replay = await payments()(post('bounced'));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const first = answers.find((response) => response.status === 201)!;
    expect(await replay.text()).toBe(await first.text());
    expect(await ledgerRows('bounced')).toBe(1);
  });

  it('a handler that throws leaves neither ledger nor key; many keys in a row run once each', async () => {
    await expect(payments({ fail: true })(post('bounced-throw'))).rejects.toThrow('handler failed');
    expect(await ledgerRows('bounced-throw')).toBe(0);
    const route = payments();
    for (let i = 0; i < 30; i++) {
      expect((await route(post(`seq-${i}`))).status).toBe(201);
      expect((await route(post(`seq-${i}`))).headers.get('idempotent-replayed')).toBe('true');
    }
    expect(Number((await db.admin.query("SELECT count(*) AS n FROM ledger WHERE key LIKE 'seq-%'")).rows[0].n)).toBe(
      30,
    );
  });
});
