/**
 * providerCall (issue 28) in one process, on a throwaway PostgreSQL and the contract server
 * as the provider with its own ledger: the three phases, a repeat during phase 2 (409), a
 * "crash" after phase 1 and after the provider's answer (resumed under the same downstream
 * key), a dropped answer, another body under a resumed key (422), an outcome unknown past
 * retention (pending review, settleIntent, the reconciled answer), and the invariant check.
 */
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PostgresKeyStore } from '../postgres/key-store.js';
import { PostgresStore } from '../postgres/postgres-store.js';
import { callsInReview, downstreamIntent, providerCall } from '../postgres/provider-call.js';
import { checkProviderInvariant } from '../postgres/provider-invariant.js';
import { settleIntent } from '../postgres/reconcile.js';
import { createClient } from '../src/index.js';
import { type ContractServer, createContractServer } from '../src/mock/index.js';
import { createIdempotency } from '../src/server/index.js';
import { useTestDatabase } from './postgres/database.js';

const db = useTestDatabase();
const charges: { key: string; amount: number }[] = [];
let provider: ContractServer;
let keyPool: pg.Pool;
let phasePool: pg.Pool;
/** What the next provider call does around the real one (a "crash" is a throw: the process goes on). */
let behave: 'ok' | 'crash-before' | 'crash-after' | 'begin-throws' | 'finish-throws' | 'terminate' = 'ok';

function app(clientOptions: { keyTtl?: number; maxAttempts?: number; pool?: pg.Pool } = {}) {
  const pool = clientOptions.pool ?? phasePool;
  const client = createClient({
    baseUrl: 'https://provider.test',
    scope: 'shop',
    store: new PostgresStore({ pool: phasePool }),
    fetch: (input, init) => provider.fetch(new Request(input, init)),
    retry: { maxAttempts: clientOptions.maxAttempts ?? 4, deadline: 4_000, baseDelay: 5, maxDelay: 50 },
    leaseTtl: 1_000,
    ...(clientOptions.keyTtl !== undefined && { keyTtl: clientOptions.keyTtl }),
  });
  const keys = new PostgresKeyStore<pg.PoolClient>({ pool: keyPool, autoMaintain: false });
  const idempotency = createIdempotency({ store: keys, scope: (request) => request.headers.get('x-account') ?? '' });
  type State = { order: number; amount: number };
  const handler = providerCall<State, { id: string }, pg.PoolClient>({
    client,
    pool,
    connectTimeout: 300,
    async begin(tx, { scope, key, json }) {
      const { amount } = json as { amount: number };
      const { rows } = await tx.query(
        "INSERT INTO orders (scope, key, amount, state) VALUES ($1, $2, $3, 'pending') RETURNING id",
        [scope, key, amount],
      );
      if (behave === 'begin-throws') throw new Error('begin failed after its write');
      return { order: Number(rows[0].id), amount };
    },
    async call(intent, state) {
      if (behave === 'crash-before') throw new Error('crashed after phase 1');
      const res = await intent.post('charges', { json: { amount: state.amount, order: state.order } });
      if (behave === 'crash-after') throw new Error('crashed with the answer in hand');
      return res.data as { id: string };
    },
    async finish(tx, state, outcome) {
      if (behave === 'finish-throws') throw new Error('finish failed');
      if (behave === 'terminate') {
        // The key's transaction's connection dies (a failover, pg_terminate_backend) after the charge.
        const { rows } = await tx.query('SELECT pg_backend_pid() AS pid');
        await db.admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      }
      const charge = outcome.via === 'provider' ? outcome.result.id : `reconciled:${outcome.outcome}`;
      await tx.query("UPDATE orders SET state = 'paid', charge = $2 WHERE id = $1", [state.order, charge]);
      return { status: 201, body: { order: state.order, charge } };
    },
  });
  return { client, route: idempotency.route('POST /orders', handler) };
}

const order = (key: string, amount = 500) =>
  new Request('https://shop.test/orders', {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'content-type': 'application/json', 'x-account': 'acct' },
    body: JSON.stringify({ amount }),
  });
const rows = async (sql: string, values: unknown[]) => (await db.admin.query(sql, values)).rows;
const chargesFor = (key: string) =>
  charges.filter((c) => c.key === downstreamIntent('shop', 'acct', 'POST /orders', key).key).length;
const ordersFor = async (key: string) => rows('SELECT state, charge FROM orders WHERE key = $1', [key]);
const callRows = async (key: string) => (await rows('SELECT 1 FROM oncely_server_calls WHERE key = $1', [key])).length;

beforeAll(async () => {
  keyPool = db.pool({ max: 8 });
  phasePool = db.pool({ max: 8 });
  await new PostgresKeyStore({ pool: db.admin, autoMaintain: false }).migrate();
  await db.admin.query(
    'CREATE TABLE orders (id bigserial PRIMARY KEY, scope text, key text, amount int, state text, charge text)',
  );
  provider = createContractServer({
    routes: {
      'POST /charges': ({ json, key }) => {
        charges.push({ key: key!, amount: (json as { amount: number }).amount });
        return { status: 201, body: { id: `ch_${charges.length}` } };
      },
    },
  });
});

describe('providerCall: three phases, once per key', () => {
  it('a request runs the phases: one order paid, one charge under the derived key, the phase row gone; a repeat replays', async () => {
    const { route } = app();
    const first = await route(order('k-happy'));
    expect(first.status).toBe(201);
    const body = await first.json();
    expect(await ordersFor('k-happy')).toEqual([{ state: 'paid', charge: body.charge }]);
    expect(chargesFor('k-happy')).toBe(1);
    expect(await callRows('k-happy')).toBe(0);
    const repeat = await route(order('k-happy'));
    expect([repeat.status, repeat.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(await repeat.json()).toEqual(body);
    expect(chargesFor('k-happy')).toBe(1);
  });

  it('a repeat while the provider call runs gets 409 + Retry-After, then the stored answer', async () => {
    const { route } = app();
    provider.inject({ fault: 'delay', ms: 800, match: { path: '/charges' } });
    const first = route(order('k-double'));
    // Once the provider has the call (phase 2), the first request holds the key.
    for (
      let i = 0;
      i < 200 &&
      !provider.requests.some((r) => r.key === downstreamIntent('shop', 'acct', 'POST /orders', 'k-double').key);
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 10));
    const second = await route(order('k-double'));
    expect(second.status).toBe(409);
    expect(second.headers.get('retry-after')).toBe('1');
    expect((await first).status).toBe(201);
    expect((await route(order('k-double'))).headers.get('idempotent-replayed')).toBe('true');
    expect([chargesFor('k-double'), (await ordersFor('k-double')).length]).toEqual([1, 1]);
  });

  it('a crash after phase 1 leaves the order pending and the phase row; the retry resumes it: one charge, one order', async () => {
    const { route } = app();
    behave = 'crash-before';
    await expect(route(order('k-crash1'))).rejects.toThrow('crashed after phase 1');
    behave = 'ok';
    expect(await ordersFor('k-crash1')).toEqual([{ state: 'pending', charge: null }]);
    expect([await callRows('k-crash1'), chargesFor('k-crash1')]).toEqual([1, 0]);
    // Another body under the resumed key: 422, nothing run.
    expect((await route(order('k-crash1', 999))).status).toBe(422);
    const resumed = await route(order('k-crash1'));
    expect(resumed.status).toBe(201);
    expect([chargesFor('k-crash1'), (await ordersFor('k-crash1')).length, await callRows('k-crash1')]).toEqual([
      1, 1, 0,
    ]);
  });

  it("a crash with the provider's answer in hand: the retry resends under the same key and gets the provider's replay", async () => {
    const { route } = app();
    behave = 'crash-after';
    await expect(route(order('k-crash2'))).rejects.toThrow('crashed with the answer in hand');
    behave = 'ok';
    expect(chargesFor('k-crash2')).toBe(1);
    const resumed = await route(order('k-crash2'));
    expect(resumed.status).toBe(201);
    const downstream = downstreamIntent('shop', 'acct', 'POST /orders', 'k-crash2').key;
    const sent = provider.requests.filter((r) => r.key === downstream);
    expect(sent.map((r) => r.replayed)).toEqual([false, true]);
    expect([chargesFor('k-crash2'), (await ordersFor('k-crash2')).length]).toEqual([1, 1]);
  });

  it('a live call elsewhere holds the downstream intent: 409 + Retry-After at once, never a second send; then the replay', async () => {
    const { route } = app();
    behave = 'crash-before';
    await expect(route(order('k-lease'))).rejects.toThrow('crashed after phase 1');
    behave = 'ok';
    // Another process's call of the same intent (its own store instance), slow at the provider.
    const other = app().client;
    const { name, key } = downstreamIntent('shop', 'acct', 'POST /orders', 'k-lease');
    provider.inject({ fault: 'delay', ms: 1_500, match: { path: '/charges' } });
    const [pending] = await rows('SELECT id FROM orders WHERE key = $1', ['k-lease']);
    const elsewhere = (await other.intent(name, { key })).post('charges', {
      json: { amount: 500, order: Number(pending.id) },
    });
    for (let i = 0; i < 200 && !provider.requests.some((r) => r.key === key); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    const started = performance.now();
    const busy = await route(order('k-lease'));
    expect([busy.status, busy.headers.get('retry-after')]).toEqual([409, '1']);
    expect(performance.now() - started).toBeLessThan(1_000);
    await elsewhere;
    expect((await route(order('k-lease'))).status).toBe(201);
    expect([chargesFor('k-lease'), (await ordersFor('k-lease'))[0].state]).toEqual([1, 'paid']);
  });

  it('a resumed call whose downstream intent was swept goes to review, never re-formed and resent (a fresh clock under a key the provider may have forgotten)', async () => {
    const { client, route } = app();
    behave = 'crash-after';
    await expect(route(order('k-swept'))).rejects.toThrow('crashed with the answer in hand');
    behave = 'ok';
    const { name, key } = downstreamIntent('shop', 'acct', 'POST /orders', 'k-swept');
    expect((await client.store.get(client.scope, name))?.state).toBe('succeeded');
    // The phase row waited past the record's ttl: a sweep (any process's first intent runs one) deletes it.
    await client.store.sweep(client.scope, Date.now() + 2 * 86_400_000);
    expect(await client.store.get(client.scope, name)).toBeUndefined();
    const sent = provider.requests.filter((r) => r.key === key).length;
    const late = await route(order('k-swept'));
    expect([late.status, late.headers.get('retry-after')]).toEqual([409, '60']);
    expect(provider.requests.filter((r) => r.key === key).length).toBe(sent); // nothing resent
    expect((await callsInReview(db.admin)).some((c) => c.key === 'k-swept')).toBe(true);
    expect([chargesFor('k-swept'), (await ordersFor('k-swept'))[0].state]).toEqual([1, 'pending']);
  });

  it("a key reused past the key store's retention while its downstream intent is kept: 422, no second order, nothing sent", async () => {
    const { route } = app();
    expect((await route(order('k-reused'))).status).toBe(201);
    // Retention: the key's row is gone (its partition dropped); the downstream intent is not.
    await db.admin.query("DELETE FROM oncely_server_keys WHERE key = 'k-reused'");
    const sent = provider.requests.length;
    const again = await route(order('k-reused'));
    expect(again.status).toBe(422);
    expect((await again.json()).detail).toMatch(/new idempotency key/);
    expect(provider.requests.length).toBe(sent);
    expect([chargesFor('k-reused'), (await ordersFor('k-reused')).length]).toEqual([1, 1]);
    // Its key row is gone from the window the invariant reads: its charge leaves the listing too.
    charges.splice(
      charges.findIndex((c) => c.key === downstreamIntent('shop', 'acct', 'POST /orders', 'k-reused').key),
      1,
    );
  });

  it("the provider's answer dropped: the client's retry under the same key gets the replay", async () => {
    const { route } = app();
    provider.inject({ fault: 'drop-after-commit', match: { path: '/charges' } });
    expect((await route(order('k-drop'))).status).toBe(201);
    expect([chargesFor('k-drop'), (await ordersFor('k-drop'))[0].state]).toEqual([1, 'paid']);
  });

  it('an outcome unknown past retention goes to review (409, never resent), is settled, and the retry answers from it', async () => {
    const { client, route } = app({ keyTtl: 400, maxAttempts: 2 });
    provider.inject({ fault: 'drop-after-commit', times: 2, match: { path: '/charges' } });
    const unknown = await route(order('k-review'));
    expect(unknown.status).toBe(409); // the outcome is unknown: the key waits, the order too
    expect(chargesFor('k-review')).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const review = await route(order('k-review'));
    expect([review.status, review.headers.get('retry-after')]).toEqual([409, '60']);
    expect((await review.json()).detail).toMatch(/reconciled/);
    expect(chargesFor('k-review')).toBe(1); // never resent
    const [item] = (await callsInReview(db.admin)).filter((c) => c.key === 'k-review');
    expect(item?.intentKey).toBe(downstreamIntent('shop', 'acct', 'POST /orders', 'k-review').key);
    // The reconciliation job: the provider's listing says whether a charge exists under the key.
    const charged = charges.some((c) => c.key === item!.intentKey);
    await settleIntent(client.store, client.scope, item!.intent, {
      key: item!.intentKey,
      outcome: charged ? 'succeeded' : 'failed',
    });
    const settled = await route(order('k-review'));
    expect(settled.status).toBe(201);
    expect((await settled.json()).charge).toBe('reconciled:succeeded');
    expect([chargesFor('k-review'), (await ordersFor('k-review')).length, await callRows('k-review')]).toEqual([
      1, 1, 0,
    ]);
  });

  it('begin throwing after its write leaves nothing: no order, no intent, no phase row; the retry runs', async () => {
    const { client, route } = app();
    behave = 'begin-throws';
    await expect(route(order('k-begin'))).rejects.toThrow('begin failed');
    behave = 'ok';
    const { name } = downstreamIntent('shop', 'acct', 'POST /orders', 'k-begin');
    expect([(await ordersFor('k-begin')).length, await callRows('k-begin'), chargesFor('k-begin')]).toEqual([0, 0, 0]);
    expect(await client.store.get('shop', name)).toBeUndefined();
    expect((await route(order('k-begin'))).status).toBe(201);
    expect([(await ordersFor('k-begin')).length, chargesFor('k-begin')]).toEqual([1, 1]);
  });

  it("finish throwing, and the key's connection terminated in phase 3: nothing stored; the retry resumes, the provider replays", async () => {
    const { route } = app();
    for (const fault of ['finish-throws', 'terminate'] as const) {
      const key = `k-${fault}`;
      behave = fault;
      await expect(route(order(key))).rejects.toThrow();
      behave = 'ok';
      expect([(await ordersFor(key))[0].state, await callRows(key), chargesFor(key)]).toEqual(['pending', 1, 1]);
      expect((await route(order(key))).status).toBe(201);
      expect([(await ordersFor(key))[0].state, await callRows(key), chargesFor(key)]).toEqual(['paid', 0, 1]);
    }
  });

  it('the phase pool exhausted: a 409 after connectTimeout, nothing written; the connection that comes later is given back', async () => {
    const tiny = db.pool({ max: 1 });
    const { route } = app({ pool: tiny });
    const held = await tiny.connect();
    const started = performance.now();
    const busy = await route(order('k-pool'));
    expect([busy.status, busy.headers.get('retry-after')]).toEqual([409, '1']);
    expect(performance.now() - started).toBeLessThan(3_000);
    held.release();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(tiny.idleCount).toBe(1);
    expect((await ordersFor('k-pool')).length).toBe(0);
    expect((await route(order('k-pool'))).status).toBe(201);
  });

  it('the invariant: provider charges vs distinct keys — no drift; a duplicate and a stray charge are reported', async () => {
    const listing = charges.map((c) => c.key);
    const clean = await checkProviderInvariant(db.admin, {
      clientScope: 'shop',
      operation: 'POST /orders',
      charges: listing,
    });
    expect(clean).toMatchObject({ charges: listing.length, duplicates: 0, unmatched: 0, drift: 0, uncharged: 0 });
    expect(clean.keys).toBe(listing.length);
    const drifted = await checkProviderInvariant(db.admin, {
      clientScope: 'shop',
      operation: 'POST /orders',
      charges: [...listing, listing[0]!, 'a-key-no-request-derives'],
    });
    expect(drifted).toMatchObject({ duplicates: 1, unmatched: 1, drift: 2 });
  });
});
