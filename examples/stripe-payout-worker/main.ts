// A payout worker: takes payout jobs from the app's own queue and pays each through
// stripe-node, wrapped in oncely's `run()`. oncely mints and stores the key when the job
// is taken, sends it on every attempt (stripe-node's `idempotencyKey`), owns the retries,
// and reads stripe-node's answers (replay header, 409, `idempotency_error`).
//
//   npm run build && node examples/stripe-payout-worker/main.ts
//
// It runs against a local Stripe-like server (./stripe-like-server.ts) that loses
// answers on purpose, and exits non-zero unless every job made exactly one payout.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Intent, IntentMismatchError, KeyReusedError, type OncelyEvent, run } from 'oncely';
import { stripe as stripeProfile } from 'oncely/profiles';
import Stripe from 'stripe';
import { startStripeLikeServer } from './stripe-like-server.ts';

// Keys live in Node's state directory. Here a fresh temp one; in production a persistent
// directory per app (a volume in a container), or a database store for a fleet.
const stateDir = mkdtempSync(join(tmpdir(), 'oncely-stripe-example-'));
process.env.ONCELY_STATE_DIR = stateDir;

const server = await startStripeLikeServer();

const stripe = new Stripe('sk_test_example', {
  host: server.host,
  port: server.port,
  protocol: 'http',
  // oncely owns the retries: with stripe-node's own on top, each of oncely's attempts
  // would be up to 1 + maxNetworkRetries requests, multiplying the budget. Even at 0,
  // stripe-node 23 resends once by itself when the connection closes (ECONNRESET,
  // EPIPE): harmless here, since it resends with the key oncely gave it (scene 1).
  maxNetworkRetries: 0,
  // stripe-node takes no AbortSignal, so it must time out by itself (oncely cannot cut a
  // running attempt short); a timed-out attempt is retried by oncely with the same key.
  timeout: 1_000,
  telemetry: false,
});

const describe = (event: OncelyEvent): string | undefined => {
  switch (event.type) {
    case 'attempt':
      return `  attempt ${event.attempt}  Idempotency-Key: ${event.key}`;
    case 'retry':
      return `    -> ${event.status ? `HTTP ${event.status}` : `no answer (${event.reason})`}, retry with the same key in ${event.delay} ms`;
    case 'success':
      return `    -> HTTP ${event.status ?? 200}${event.replayed ? ', Idempotent-Replayed: true (the stored payout)' : ''}`;
    case 'failure':
      return `    -> ${event.code}${event.status ? ` (HTTP ${event.status})` : ''}`;
    case 'mismatch':
      return `    -> key reused with other parameters (${event.source}${event.status ? `, HTTP ${event.status}` : ''})`;
    default:
      return undefined;
  }
};

const api = createClient({
  baseUrl: `http://${server.host}:${server.port}/v1/`, // not used by run(); required by the client
  scope: 'acct_platform',
  profile: stripeProfile, // bare key, 400 idempotency_error = key reused, 409 = in progress
  retry: { maxAttempts: 5, baseDelay: 100, deadline: 20_000 },
  onEvent: (event) => {
    const line = describe(event);
    if (line) console.log(line);
  },
});

/** A row of the app's payout queue. oncely stores no bodies: the params come from here on every run. */
interface PayoutJob {
  id: string;
  amount: number;
  currency: string;
  /** Set when the app already has a key for the job (e.g. from an older system). */
  key?: string;
}

const paramsOf = (job: PayoutJob): Stripe.PayoutCreateParams => ({
  amount: job.amount,
  currency: job.currency,
  description: job.id,
});

/** The worker's whole job: one intent per payout job, stripe-node inside `run()`. */
async function payOut(job: PayoutJob): Promise<Stripe.Payout> {
  const intent: Intent = await api.intent(`payout:${job.id}`, job.key ? { key: job.key } : {});
  const params = paramsOf(job);
  return run(intent, ({ key }) => stripe.payouts.create(params, { idempotencyKey: key }), { request: params });
}

const payoutsFor = (jobId: string) => server.payouts.filter((p) => p.description === jobId).length;
const keysSentFor = (key: string) => server.log.filter((entry) => entry.key === key).length;

try {
  console.log('1. payout_1: the payout is made, then the answer is lost, twice');
  // The first loss is resent by stripe-node itself (its one hidden resend of a closed
  // connection), the second by oncely: three requests, one key, one payout.
  server.dropNext(2);
  const job1: PayoutJob = { id: 'payout_1', amount: 5_000, currency: 'usd' };
  const first = await payOut(job1);
  const key1 = (await api.intent('payout:payout_1')).key;
  console.log(
    `   paid ${first.id}; requests with its key: ${keysSentFor(key1)}; payouts for payout_1: ${payoutsFor('payout_1')}\n`,
  );
  assert.equal(payoutsFor('payout_1'), 1, 'one payout for payout_1');
  assert.equal(keysSentFor(key1), 3, 'three requests (two attempts of oncely, one hidden resend), one key');
  assert.equal(server.log.at(-1)?.replayed, true, 'the last request got the stored answer');

  console.log('2. payout_2: stripe-node times out while the server is still working');
  server.delayNext(2_000); // longer than stripe-node's timeout: attempt 1 times out, attempt 2 gets 409
  const second = await payOut({ id: 'payout_2', amount: 1_250, currency: 'eur' });
  console.log(`   paid ${second.id}; payouts for payout_2 on the server: ${payoutsFor('payout_2')}\n`);
  assert.equal(payoutsFor('payout_2'), 1, 'one payout for payout_2');
  assert.ok(
    server.log.some((entry) => entry.status === 409),
    'the server answered 409 while the first attempt ran',
  );

  console.log('3. the queue delivers payout_1 again (at-least-once delivery)');
  const again = await payOut(job1);
  console.log(`   the same payout ${again.id}; payouts for payout_1: ${payoutsFor('payout_1')}\n`);
  assert.equal(again.id, first.id);
  assert.equal(payoutsFor('payout_1'), 1);

  console.log('4. payout_1 delivered with another amount (the row changed after sending)');
  const sentBefore = server.log.length;
  await assert.rejects(payOut({ ...job1, amount: 6_000 }), IntentMismatchError);
  console.log(`   IntentMismatchError, nothing sent: ${server.log.length - sentBefore} requests\n`);
  assert.equal(server.log.length, sentBefore);

  console.log('5. payout_3 brings a key an older script already used with another amount');
  const legacyKey = 'legacy-payout-3';
  await stripe.payouts.create({ amount: 100, currency: 'usd', description: 'payout_3' }, { idempotencyKey: legacyKey });
  await assert.rejects(payOut({ id: 'payout_3', amount: 900, currency: 'usd', key: legacyKey }), KeyReusedError);
  console.log(`   KeyReusedError (400 idempotency_error), payouts for payout_3: ${payoutsFor('payout_3')}\n`);
  assert.equal(payoutsFor('payout_3'), 1, 'no second payout under a reused key');

  assert.equal(server.payouts.length, 3, 'three payouts in all');
  console.log(
    `ok: ${server.payouts.length} payouts for 3 jobs, ${server.log.length} requests, exactly one effect each`,
  );
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await api.close();
  await server.close();
  rmSync(stateDir, { recursive: true, force: true });
}
