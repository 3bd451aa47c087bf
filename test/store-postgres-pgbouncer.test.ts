/**
 * PostgresStore behind PgBouncer in transaction mode (issue 26, point 10): a server
 * connection is the client's for one transaction only, so a statement prepared by name on
 * one is missing on the next ("prepared statement … does not exist") or already there
 * ("… already exists"). With `preparedStatements: false` every statement is unnamed (parsed
 * in its own transaction). Before the option, 22 of 800 calls succeeded behind PgBouncer.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../postgres/postgres-store.js';
import { drainOnce } from '../postgres/worker.js';
import { createClient } from '../src/client.js';
import { useTestDatabase } from './postgres/database.js';
import { type Bouncer, startPgBouncer } from './postgres/pgbouncer.js';
import { intentRecord } from './store-conformance.js';

const db = useTestDatabase();
let bouncer: Bouncer;
let pool: pg.Pool;

beforeAll(async () => {
  // 4 server connections for up to 40 clients: every transaction may land on another one.
  bouncer = await startPgBouncer(db.cluster, { poolMode: 'transaction', poolSize: 4 });
  pool = new pg.Pool({ host: bouncer.host, port: bouncer.port, user: 'postgres', database: 'postgres', max: 40 });
  pool.on('error', () => undefined);
}, 30_000);
afterAll(async () => {
  await pool?.end().catch(() => undefined);
  await bouncer?.stop();
});

/** Timestamps of now: the client's first `intent()` sweeps, and would take records formed at T0 for old ones. */
const now = () => ({ createdAt: Date.now(), updatedAt: Date.now() });

/** A fetch that answers 201 and counts the effects per key. */
function ledger() {
  const effects = new Map<string, number>();
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const key = String(new Request(input, init).headers.get('idempotency-key'));
    effects.set(key, (effects.get(key) ?? 0) + 1);
    return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
  };
  return { effects, fetch };
}

describe('PostgresStore behind PgBouncer (pool_mode = transaction)', () => {
  it('600 concurrent calls (send, intent + post, claims of one intent, outbox transactions, the worker queue): all succeed, one effect per key', async () => {
    await db.reset();
    const store = new PostgresStore({ pool, preparedStatements: false });
    expect((await store.migrate()).version).toBe(1); // BEGIN, advisory xact lock, COMMIT: one transaction
    const { effects, fetch } = ledger();
    const api = createClient({ baseUrl: 'https://api.test/', scope: 'bounced', store, fetch });
    const failures: unknown[] = [];
    const ok = <T>(p: Promise<T>) =>
      p.catch((error: unknown) => {
        failures.push(error);
        return undefined;
      });
    const outbox = async (i: number) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const claim = await store.claim(intentRecord('bounced', `outbox-${i}`, { key: `outbox-key-${i}`, ...now() }), {
          transaction: client,
        });
        await client.query('COMMIT');
        return claim;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    };
    const started = performance.now();
    const results = await Promise.all([
      ...Array.from({ length: 300 }, (_, i) => ok(api.send(`send-${i}`, 'POST', 'payouts', { json: { i } }))),
      ...Array.from({ length: 100 }, (_, i) =>
        ok(api.intent(`post-${i}`).then((intent) => intent.post('payouts', { json: { i } }))),
      ),
      // Ten claims of each of 10 intents at once: one record, one key each.
      ...Array.from({ length: 100 }, (_, i) =>
        ok(store.claim(intentRecord('bounced', `same-${i % 10}`, { key: `same-key-${i}`, ...now() }))),
      ),
      ...Array.from({ length: 50 }, (_, i) => ok(outbox(i))),
      ...Array.from({ length: 50 }, (_, i) => ok(store.get('bounced', `send-${i}`))),
    ]);
    const took = performance.now() - started;
    console.log(`600 calls behind PgBouncer (transaction mode): ${took.toFixed(0)} ms`);
    expect(failures.map((e) => String(e)).slice(0, 3), await bouncer.log().then((l) => l.slice(-2_000))).toEqual([]);
    expect(results.slice(0, 550).every((r) => r !== undefined)).toBe(true);
    // One effect per key, one key per intent.
    expect(effects.size).toBe(400);
    expect([...effects.values()].every((n) => n === 1)).toBe(true);
    const rows = await store.list('bounced');
    const sent = rows.filter((r) => r.name.startsWith('send-') || r.name.startsWith('post-'));
    expect(sent).toHaveLength(400);
    expect(sent.every((r) => r.state === 'succeeded' && effects.get(`"${r.key}"`) === 1)).toBe(true);
    expect(rows.filter((r) => r.name.startsWith('same-'))).toHaveLength(10);
    const claims = results.slice(400, 500) as { record: { name: string; key: string } }[];
    for (const claim of claims) expect(claim.record.key).toBe(rows.find((r) => r.name === claim.record.name)?.key);
    expect(
      rows
        .filter((r) => r.name.startsWith('outbox-'))
        .map((r) => r.key)
        .sort(),
    ).toEqual(Array.from({ length: 50 }, (_, i) => `outbox-key-${i}`).sort());
    // The worker queue (take, release) and the maintenance calls, through the pooler too.
    const report = await drainOnce({ store, scope: 'bounced', idleAfter: 0, batch: 100, resend: async () => {} });
    expect(report.taken).toBe(60); // the never-sent ones: 50 outbox intents, 10 claimed ones
    await expect(store.sweep('bounced', Date.now() + 10 * 86_400_000)).resolves.toBeGreaterThan(0);
    await store.delete('bounced', 'same-0');
    await store.clear('bounced');
    expect(await store.list('bounced')).toEqual([]);
  }, 60_000);

  it('the default store (named statements) fails there with a StoreError that names the option', async () => {
    const store = new PostgresStore({ pool });
    const results: PromiseSettledResult<unknown>[] = [];
    for (let round = 0; round < 10; round++)
      results.push(
        ...(await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => store.claim(intentRecord('named', `n-${round}-${i}`, now()))),
        )),
        ...(await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.get('named', `n-${round}-${i}`)))),
      );
    const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    console.log(
      `default store behind PgBouncer: ${results.length - failed.length} of ${results.length} calls succeeded`,
    );
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]!.message).toContain('preparedStatements: false');
  }, 30_000);
});
