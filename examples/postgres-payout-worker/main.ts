/**
 * The outbox pattern with oncely/postgres: a payout row and its intent commit in one
 * transaction; workers on other machines (here: processes, each with its own pool) drain
 * the intents, rebuilding each request from the payout row. One worker is SIGKILLed in
 * the middle of a request; another takes its lease over and every payout is made once.
 *
 *   npm run build && node examples/postgres-payout-worker/main.ts
 *
 * Connects with the usual PG* environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE).
 * The payments provider is oncely's contract server, which counts effects per key.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type Client, createClient } from 'oncely';
import { createContractServer } from 'oncely/mock';
import { listenContractServer } from 'oncely/node';
import { PostgresStore, startWorker } from 'oncely/postgres';
import pg from 'pg';

const SCOPE = 'payouts';
const COUNT = 12;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function connect(): { pool: pg.Pool; store: PostgresStore } {
  const pool = new pg.Pool({ max: 4 });
  pool.on('error', () => undefined); // idle connections dropped by the server
  return { pool, store: new PostgresStore({ pool }) };
}

/** App code: the business row and its intent, in one transaction. */
async function createPayout(pool: pg.Pool, api: Client, id: string, amount: number): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO payouts (id, amount, paid) VALUES ($1, $2, false)', [id, amount]);
    await api.intent(`payout:${id}`, { transaction: client });
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

async function worker(baseUrl: string): Promise<void> {
  const { pool, store } = connect();
  const api = createClient({ baseUrl, scope: SCOPE, store, retry: { maxAttempts: 10, baseDelay: 50 } });
  startWorker({
    store,
    scope: SCOPE,
    idleAfter: 0, // the demo enqueues and never sends itself; apps keep the default
    leaseMs: 1_500,
    retryAfter: 200,
    interval: 100,
    onError: (error) => console.error(`worker ${process.pid}:`, (error as Error).message),
    resend: async (record) => {
      const id = record.name.slice('payout:'.length);
      const { rows } = await pool.query('SELECT amount FROM payouts WHERE id = $1', [id]);
      process.stdout.write(`sending ${id}\n`);
      const intent = await api.intent(record.name);
      await intent.post('payouts', { json: { id, amount: rows[0].amount } });
      await pool.query('UPDATE payouts SET paid = true WHERE id = $1', [id]);
    },
  });
}

function spawnWorker(baseUrl: string): ChildProcess {
  const child = spawn(process.execPath, [process.argv[1]!, 'worker', baseUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout!.setEncoding('utf8');
  return child;
}

async function main(): Promise<void> {
  const provider = createContractServer({
    routes: {
      'POST /payouts': async ({ json }) => {
        await sleep(150); // a slow provider: the kill lands mid-request
        return { status: 201, body: { payout: json } };
      },
    },
  });
  const http = await listenContractServer(provider);
  const { pool, store } = connect();
  await store.migrate();
  await pool.query('DROP TABLE IF EXISTS payouts');
  await pool.query('CREATE TABLE payouts (id text PRIMARY KEY, amount integer NOT NULL, paid boolean NOT NULL)');
  await store.clear(SCOPE);
  const app = createClient({ baseUrl: http.url, scope: SCOPE, store });
  for (let i = 0; i < COUNT; i++) await createPayout(pool, app, `p${i}`, 100 + i);

  // Worker A is killed as soon as it has a request in flight.
  const a = spawnWorker(http.url);
  await new Promise<void>((resolve) => a.stdout!.on('data', (chunk: string) => chunk.includes('sending') && resolve()));
  await sleep(50);
  a.kill('SIGKILL');
  console.log('worker A killed mid-request');
  const b = spawnWorker(http.url);
  b.stdout!.resume();

  let paid = 0;
  for (const until = Date.now() + 60_000; Date.now() < until; await sleep(100)) {
    paid = Number((await pool.query('SELECT count(*) FROM payouts WHERE paid')).rows[0].count);
    if (paid === COUNT) break;
  }
  b.kill('SIGKILL');
  const intents = await store.list(SCOPE);
  const effects = intents.map((intent) => provider.effects(intent.key));
  const once =
    paid === COUNT && intents.every((intent) => intent.state === 'succeeded') && effects.every((n) => n === 1);
  console.log(`${paid}/${COUNT} payouts paid; effects per key: ${effects.join(' ')}`);
  console.log(once ? 'every payout made exactly once' : 'FAILED: a payout is missing or was repeated');
  await pool.end();
  await http.close();
  process.exitCode = once ? 0 : 1;
}

if (process.argv[2] === 'worker') await worker(process.argv[3]!);
else await main();
