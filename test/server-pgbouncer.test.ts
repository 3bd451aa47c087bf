/**
 * PostgresKeyStore behind PgBouncer in transaction mode (each transaction may get another
 * server connection): transaction-level advisory locks only, no session state, unnamed
 * statements. One key raced by more clients than the pooler has server connections: one
 * effect, the others 409; a handler that throws leaves nothing; replays byte for byte.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { createIdempotency } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
let bouncer: ChildProcess | undefined;
let pool: pg.Pool;

/** Starts Debian's pgbouncer (as `postgres` when root) in front of the test cluster, transaction pooling. */
async function startBouncer(): Promise<number> {
  const dir = db.cluster.host;
  const port = 40_000 + Math.floor(Math.random() * 20_000);
  const ini = path.join(dir, 'pgbouncer.ini');
  await writeFile(
    ini,
    [
      '[databases]',
      `postgres = host=${dir} port=${db.cluster.port} dbname=postgres user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = transaction',
      'default_pool_size = 3',
      'max_client_conn = 100',
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    ].join('\n'),
  );
  if (!existsSync('/usr/sbin/pgbouncer'))
    throw new Error(
      'pgbouncer is missing: `apt-get install -y pgbouncer` (npm run test:unit installs it). The test does not skip.',
    );
  const args = ['/usr/sbin/pgbouncer', ini];
  bouncer = process.getuid?.() === 0 ? spawn('runuser', ['-u', 'postgres', '--', ...args]) : spawn(args[0]!, [ini]);
  for (let i = 0; i < 100; i++) {
    const probe = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    try {
      await probe.connect();
      await probe.end();
      return port;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('pgbouncer did not start');
}

beforeAll(async () => {
  await new PostgresKeyStore({ pool: db.admin }).migrate();
  await db.admin.query('CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL)');
  const port = await startBouncer();
  pool = new pg.Pool({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', max: 12 });
  pool.on('error', () => undefined);
}, 60_000);

afterAll(async () => {
  await pool?.end().catch(() => undefined);
  bouncer?.kill('SIGTERM');
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
