/**
 * PostgresStore across processes and through failures: separate pools racing for one
 * intent, workers SIGKILLed mid-request with lease takeover, the server crash-restarted
 * mid-flight, connections terminated mid-claim. Each ends with every intent settled once:
 * one key per intent, one effect per key at the contract server.
 */

import { describe, expect, it } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { PostgresStore } from '../postgres/postgres-store.js';
import { StoreError } from '../src/errors.js';
import { createContractServer } from '../src/mock/contract-server.js';
import type { IntentRecord } from '../src/store/store.js';
import { type Child, startChild } from './postgres/children.js';
import { useTestDatabase } from './postgres/database.js';
import { intentRecord } from './store-conformance.js';

const db = useTestDatabase();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A payouts API whose effect takes a while, so that kills and restarts land mid-request. */
async function payoutServer(delayMs: number) {
  const contract = createContractServer({
    routes: {
      'POST /payouts': async ({ json }) => {
        await sleep(delayMs);
        return { status: 201, body: { ok: true, ...(json as object) } };
      },
    },
  });
  const http = await listenContractServer(contract);
  return { contract, http };
}

async function seed(scope: string, count: number): Promise<IntentRecord[]> {
  const store = new PostgresStore({ pool: db.admin });
  const records = Array.from({ length: count }, (_, i) =>
    intentRecord(scope, `payout:${i}`, {
      key: `${scope}-key-${i}`,
      createdAt: Date.now(),
      updatedAt: Date.now() - 1_000,
      ttl: 3_600_000,
    }),
  );
  for (const record of records) await store.claim(record);
  return records;
}

async function waitSettled(scope: string, count: number, deadlineMs = 90_000): Promise<IntentRecord[]> {
  const store = new PostgresStore({ pool: db.admin });
  const until = Date.now() + deadlineMs;
  for (;;) {
    const records = await store.list(scope).catch(() => []);
    if (records.length === count && records.every((r) => r.state === 'succeeded')) return records;
    if (Date.now() > until)
      throw new Error(
        `not settled: ${JSON.stringify(records.filter((r) => r.state !== 'succeeded').map((r) => [r.name, r.state]))}`,
      );
    await sleep(100);
  }
}

function expectOnce(records: IntentRecord[], seeded: IntentRecord[], effects: (key: string) => number) {
  const keys = new Map(seeded.map((r) => [r.name, r.key]));
  for (const record of records) {
    expect(record.key, record.name).toBe(keys.get(record.name));
    expect(effects(record.key), record.name).toBe(1);
  }
}

/** Every error a worker printed is one of oncely's typed errors. */
const untyped = (children: Child[]) =>
  children.flatMap((child) => child.lines).filter((line) => line.startsWith('E none'));

describe('PostgresStore across processes', () => {
  it('8 processes on separate pools claiming one intent, each with its own key, all get one key', async () => {
    await db.reset();
    const config = JSON.stringify(db.config);
    for (let round = 0; round < 3; round++) {
      const children = Array.from({ length: 8 }, (_, i) =>
        startChild(['race', config, 'pool', `job:${round}`, `key-${round}-${i}`]),
      );
      await Promise.all(children.map((child) => child.waitFor((line) => line === 'ready')));
      for (const child of children) child.proc.stdin.write('go\n');
      const results = await Promise.all(
        children.map(
          async (child) =>
            JSON.parse(await child.waitFor((l) => l.startsWith('{'))) as { key: string; created: boolean },
        ),
      );
      expect(new Set(results.map((r) => r.key)).size).toBe(1);
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect((await new PostgresStore({ pool: db.admin }).get('pool', `job:${round}`))?.key).toBe(results[0]!.key);
    }
  }, 60_000);

  it('workers SIGKILLed mid-request: the survivors take the leases over, every payout is made exactly once', async () => {
    await db.reset();
    const { contract, http } = await payoutServer(150);
    try {
      const seeded = await seed('kill', 24);
      const config = JSON.stringify(db.config);
      const all: Child[] = [];
      const spawnWorker = (i: number) => {
        const child = startChild(['worker', config, 'kill', http.url, `w${i}`]);
        all.push(child);
        return child;
      };
      let workers = [spawnWorker(0), spawnWorker(1)];
      let kills = 0;
      for (let round = 0; round < 8; round++) {
        // Kill one worker right after it has started a request (the request is in flight).
        const victim = workers[round % 2]!;
        const mark = victim.lines.length;
        const started = await Promise.race([
          victim.waitFor((line) => line.startsWith('T ') && victim.lines.indexOf(line) >= mark).then(() => true),
          sleep(5_000).then(() => false),
        ]).catch(() => false);
        if (!started) break;
        await sleep(20 + Math.floor(Math.random() * 100));
        victim.proc.kill('SIGKILL');
        await victim.exited;
        kills++;
        workers = workers.map((w) => (w === victim ? spawnWorker(10 + round) : w));
      }
      expect(kills).toBeGreaterThan(2);
      const records = await waitSettled('kill', 24);
      expectOnce(records, seeded, (key) => contract.effects(key));
      expect(untyped(all)).toEqual([]);
    } finally {
      await http.close();
    }
  }, 120_000);

  it('PostgreSQL crash-restarted (immediate) mid-flight: nothing lost, nothing repeated, typed errors', async () => {
    await db.reset();
    const { contract, http } = await payoutServer(100);
    try {
      const seeded = await seed('restart', 30);
      const config = JSON.stringify(db.config);
      const workers = [0, 1].map((i) => startChild(['worker', config, 'restart', http.url, `r${i}`]));
      await workers[0]!.waitFor((line) => line.startsWith('D '));
      await db.cluster.restart('immediate');
      const records = await waitSettled('restart', 30);
      expectOnce(records, seeded, (key) => contract.effects(key));
      const errors = workers.flatMap((w) => w.lines).filter((line) => line.startsWith('E '));
      expect(untyped(workers)).toEqual([]);
      // The restart is felt: the workers saw the store fail, as StoreErrors.
      expect(errors.some((line) => line.startsWith('E STORE_FAILED'))).toBe(true);
    } finally {
      await http.close();
    }
  }, 120_000);

  it('connections terminated mid-claim: every claim resolves or fails as StoreError; one key per intent', async () => {
    await db.reset();
    const pool = db.pool({ max: 4, application_name: 'victim' });
    const store = new PostgresStore({ pool });
    let stop = false;
    let terminated = 0;
    const killer = (async () => {
      while (!stop) {
        const result = await db.admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim'",
        );
        terminated += result.rowCount ?? 0;
        await sleep(Math.random() * 15);
      }
    })();
    const resolved = new Map<string, Set<string>>();
    const failures: unknown[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        // 20 claims a lane: durable claims (synchronous_commit on) through a pool whose
        // connections keep dying take a reconnect and a WAL flush each.
        for (let i = 0; i < 20; i++) {
          const name = `job:${i % 20}`;
          // Like a process that retries with a fresh candidate key after a failure.
          for (let attempt = 0; ; attempt++) {
            try {
              const { record } = await store.claim(intentRecord('t', name, { key: `k-${lane}-${i}-${attempt}` }));
              if (!resolved.has(name)) resolved.set(name, new Set());
              resolved.get(name)!.add(record.key);
              break;
            } catch (error) {
              failures.push(error);
              await sleep(5);
            }
          }
        }
      }),
    );
    stop = true;
    await killer;
    expect(terminated).toBeGreaterThan(0);
    expect(failures.length).toBeGreaterThan(0);
    for (const error of failures) {
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).cause).toBeDefined();
    }
    const stored = new Map((await new PostgresStore({ pool: db.admin }).list('t')).map((r) => [r.name, r.key]));
    expect(stored.size).toBe(20);
    for (const [name, keys] of resolved) expect([...keys], name).toEqual([stored.get(name)]);
  }, 120_000);
});
