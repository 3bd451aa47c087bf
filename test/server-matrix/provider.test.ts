/**
 * The server fault matrix's crash-between-phases cases (issue 28): the provider app
 * (provider-app.ts, a `providerCall` on PostgreSQL) in a child process, SIGKILLed after
 * phase 1 and during phase 2, the provider's answer dropped, the same request sent twice at
 * once; the contract server as the provider, with its own ledger of charges. Invariant on
 * every case: one order and one charge per key, every answer a 201, a 409 or the replay,
 * the final retry the stored answer byte for byte, no phase row left, no drift.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { downstreamIntent } from '../../postgres/provider-call.js';
import { checkProviderInvariant } from '../../postgres/provider-invariant.js';
import type { ContractServer } from '../../src/mock/index.js';
import { useTestDatabase } from '../postgres/database.js';
import { type Answer, AppProcess, post } from './env.js';
import type { ProviderAppConfig } from './provider-app.js';
import { buildProviderApp, startProvider } from './provider-setup.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const script = path.join(repo, '.tmp', `server-matrix-provider-app-${process.pid}.mjs`);
const db = useTestDatabase();
const charges: string[] = [];
let provider: ContractServer;
let providerUrl = '';
let closeProvider: () => Promise<void> = async () => undefined;
const apps: AppProcess[] = [];

/** A provider app; `port` 0 picks one, else it takes a killed predecessor's. */
async function start(port = 0): Promise<AppProcess> {
  const config: ProviderAppConfig = { pg: db.config, provider: providerUrl, port, leaseTtl: 1_000 };
  const app = new AppProcess(script, config as never);
  apps.push(app);
  await app.started();
  return app;
}

const chargesOf = (key: string) => {
  const downstream = downstreamIntent('shop', '', 'POST /payments', key).key;
  return charges.filter((c) => c === downstream).length;
};
const rowsOf = async (key: string) => ({
  orders: Number((await db.admin.query('SELECT count(*) AS n FROM orders WHERE key = $1', [key])).rows[0].n),
  calls: Number(
    (await db.admin.query('SELECT count(*) AS n FROM oncely_server_calls WHERE key = $1', [key])).rows[0].n,
  ),
});

/** Retries `key` until it is answered 201 (a 409 or a refused connection is waited out), then once more: the replay. */
async function settle(url: () => string, key: string, answers: Answer[]): Promise<Answer> {
  for (let i = 0; i < 60; i++) {
    const answer = await post(url(), key);
    answers.push(answer);
    if (answer.status === 201) {
      const replay = await post(url(), key);
      answers.push(replay);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.equals(answer.body)).toBe(true);
      return answer;
    }
    await new Promise((resolve) => setTimeout(resolve, answer.status === 409 ? 300 : 150));
  }
  throw new Error(`${key} never settled: ${answers.map((a) => a.status || a.error).join(' ')}`);
}

interface ProviderCase {
  id: string;
  run(key: string): Promise<Answer[]>;
}

const CASES: ProviderCase[] = [
  {
    id: 'SIGKILL after phase 1 (order and intent committed, nothing sent): resumed by the next process',
    async run(key) {
      const app = await start();
      const answers: Answer[] = [];
      const first = post(app.url, key, { behave: 'pause' });
      await app.waitFor(`phase1 ${key}`);
      await app.kill();
      answers.push(await first);
      expect(answers[0]!.status).toBe(0); // the connection died with the process
      expect(await rowsOf(key)).toEqual({ orders: 1, calls: 1 });
      expect(chargesOf(key)).toBe(0);
      const next = await start();
      await settle(() => next.url, key, answers);
      return answers;
    },
  },
  {
    id: "SIGKILL during phase 2, the provider's answer lost with it: resumed under the same key after the lease lapses",
    async run(key) {
      const app = await start();
      provider.inject({ fault: 'delay', ms: 3_000, when: 'after-commit', match: { path: '/charges' } });
      const answers: Answer[] = [];
      const first = post(app.url, key);
      await app.waitFor(`calling ${key}`);
      for (let i = 0; i < 100 && chargesOf(key) === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(chargesOf(key)).toBe(1); // charged; the answer is still on its way
      await app.kill();
      answers.push(await first);
      const next = await start(Number(new URL(app.url).port));
      // At once: the dead call's intent lease (1 s) is live: 409, never a second send.
      const restarted = performance.now();
      const early = await post(next.url, key);
      answers.push(early);
      expect([409, 201]).toContain(early.status);
      await settle(() => next.url, key, answers);
      const ms = Math.round(performance.now() - restarted);
      console.log(
        `resumed after SIGKILL in phase 2: first answer ${early.status}, the stored answer ${ms} ms after the restart`,
      );
      return answers;
    },
  },
  {
    id: 'SIGKILL during phase 2 while the provider holds the charge in progress',
    async run(key) {
      const app = await start();
      provider.inject({ fault: 'delay', ms: 1_500, match: { path: '/charges' } });
      const answers: Answer[] = [];
      const first = post(app.url, key);
      await app.waitFor(`calling ${key}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await app.kill();
      answers.push(await first);
      const next = await start();
      await settle(() => next.url, key, answers);
      return answers;
    },
  },
  {
    id: "the provider's answer dropped: the app's client resends under the same key and gets the provider's replay",
    async run(key) {
      const app = await start();
      provider.inject({ fault: 'drop-after-commit', match: { path: '/charges' } });
      const answers: Answer[] = [];
      await settle(() => app.url, key, answers);
      expect(answers[0]!.status).toBe(201);
      return answers;
    },
  },
  {
    id: 'the same request twice at once, while the provider is slow: one runs, the other 409, then the replay',
    async run(key) {
      const app = await start();
      provider.inject({ fault: 'delay', ms: 600, match: { path: '/charges' } });
      const answers = await Promise.all([post(app.url, key), post(app.url, key)]);
      // One runs; the other is a 409 (a machine so loaded that it came after the answer: the replay).
      const [ran, other] = answers[0]!.headers['idempotent-replayed'] ? [answers[1]!, answers[0]!] : answers;
      expect(ran!.status).toBe(201);
      expect(other!.status === 409 || other!.headers['idempotent-replayed'] === 'true').toBe(true);
      await settle(() => app.url, key, answers);
      return answers;
    },
  },
];

beforeAll(async () => {
  await buildProviderApp(script);
  ({ provider, url: providerUrl, close: closeProvider } = await startProvider(db.admin, charges));
}, 90_000);

afterAll(async () => {
  await Promise.all(apps.filter((app) => app.alive).map((app) => app.kill()));
  await closeProvider();
  await rm(script, { force: true });
});

describe('server fault matrix: a provider call between its phases (PostgreSQL)', () => {
  CASES.forEach((c, i) => {
    test(c.id, async () => {
      const key = `provider-${i}`;
      const answers = await c.run(key);
      for (const answer of answers) expect([0, 201, 409]).toContain(answer.status);
      expect(await rowsOf(key)).toEqual({ orders: 1, calls: 0 });
      expect(chargesOf(key)).toBe(1);
      const order = await db.admin.query('SELECT state FROM orders WHERE key = $1', [key]);
      expect(order.rows[0].state).toBe('paid');
      await Promise.all(apps.filter((app) => app.alive).map((app) => app.kill()));
    }, 60_000);
  });

  test('the invariant over every case: one charge per key, no drift', async () => {
    const report = await checkProviderInvariant(db.admin, {
      clientScope: 'shop',
      operation: 'POST /payments',
      charges,
    });
    expect(report).toMatchObject({ keys: CASES.length, charges: CASES.length, duplicates: 0, unmatched: 0, drift: 0 });
  });
});
