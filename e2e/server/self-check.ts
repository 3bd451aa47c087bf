/**
 * A quick node-level check of the payments API (Express on `oncely/server`) and its faults,
 * without a browser:
 *   npm run test:e2e:server      (node e2e/server/self-check.ts; node:test runs the tests below)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type ApiServer, startApiServer } from './api-server.ts';

let api: ApiServer;
before(async () => {
  api = await startApiServer();
});
after(() => api.close());
beforeEach(() => control({ reset: true }));

const body = { amount: 42, currency: 'EUR', cart: { id: 'cart_1', items: [{ sku: 'tea', qty: 2 }] } };

function pay(key: string | undefined, json: unknown = body, headers: Record<string, string> = {}) {
  return fetch(`${api.url}/payments`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...headers,
    },
    body: JSON.stringify(json),
  });
}

async function control(request: Record<string, unknown>) {
  const res = await fetch(`${api.url}/__control`, { method: 'POST', body: JSON.stringify(request) });
  assert.equal(res.status, 200, await res.clone().text());
  return res.json();
}

async function ledgerCount(): Promise<number> {
  const res = await fetch(`${api.url}/ledger`);
  return ((await res.json()) as { count: number }).count;
}

async function waitUntil(check: () => boolean | Promise<boolean>, ms = 2000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('contract', () => {
  test('creates once, replays after', async () => {
    const first = await pay('"k-1"');
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const created = (await first.json()) as Record<string, unknown>;
    assert.deepEqual(
      { ...created, id: undefined },
      { id: undefined, amount: 42, currency: 'EUR', status: 'succeeded' },
    );
    const again = await pay('"k-1"', { cart: body.cart, currency: 'EUR', amount: 42 }); // same body, other key order
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), created);
    const bare = await pay('k-1');
    assert.equal(bare.headers.get('idempotent-replayed'), 'true');
    assert.equal(await ledgerCount(), 1);
  });

  test('400 on a missing or malformed key, 422 on another body', async () => {
    const missing = await pay(undefined);
    assert.equal(missing.status, 400);
    assert.match(missing.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(((await missing.json()) as { status: number }).status, 400);
    assert.equal((await pay('""')).status, 400); // an empty key
    // (`"unterminated` is a bare key under keyFormat 'any', as oncely/server reads it.)
    assert.equal((await pay(`"${'x'.repeat(300)}"`)).status, 400); // longer than 255
    assert.equal((await pay('"k-2"')).status, 201);
    const reused = await pay('"k-2"', { ...body, amount: 43 });
    assert.equal(reused.status, 422);
    assert.equal(await ledgerCount(), 1);
  });

  test('keys are scoped per account', async () => {
    assert.equal((await pay('"shared"', body, { 'x-account': 'a' })).status, 201);
    const other = await pay('"shared"', { ...body, amount: 7 }, { 'x-account': 'b' });
    assert.equal(other.status, 201);
    assert.equal(other.headers.get('idempotent-replayed'), null);
    assert.equal(await ledgerCount(), 2);
  });

  test('409 + Retry-After while in progress; mismatch wins over in progress', async () => {
    await control({ hold: true });
    const first = pay('"k-3"');
    await waitUntil(() => api.faults.snapshot().held === 1);
    const repeat = await pay('"k-3"');
    assert.equal(repeat.status, 409);
    assert.equal(repeat.headers.get('retry-after'), '1');
    assert.equal((await pay('"k-3"', { ...body, amount: 1 })).status, 422);
    assert.equal(await ledgerCount(), 0);
    await control({ release: true });
    assert.equal((await first).status, 201);
    assert.equal(await ledgerCount(), 1);
  });

  test('concurrent requests with one key: one charge', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay('"race"')));
    const statuses = answers.map((res) => res.status);
    assert.ok(
      statuses.every((status) => status === 201 || status === 409),
      statuses.join(),
    );
    assert.equal(await ledgerCount(), 1);
    const created = api.requests.filter((entry) => entry.outcome === 'created');
    assert.equal(created.length, 1);
  });

  test('drop after commit: the effect happened, the retry is a replay', async () => {
    await control({ drop: 1 });
    await assert.rejects(pay('"k-4"'));
    assert.equal(await ledgerCount(), 1);
    const retry = await pay('"k-4"');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(await ledgerCount(), 1);
  });

  test('fail before commit rolls the charge back and frees the key', async () => {
    await control({ failBeforeCommit: 1 });
    assert.equal((await pay('"k-5"')).status, 503);
    assert.equal(await ledgerCount(), 0);
    const retry = await pay('"k-5"');
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal(await ledgerCount(), 1);
  });

  test('conflictFor answers 409 for that long, then the request runs', async () => {
    await control({ conflictFor: 300 });
    const first = await pay('"k-6"');
    assert.equal(first.status, 409);
    assert.equal(first.headers.get('retry-after'), '1');
    await new Promise((resolve) => setTimeout(resolve, 320));
    assert.equal((await pay('"k-6"')).status, 201);
  });

  test('CORS: preflight allows the key header and responses expose the replay headers', async () => {
    const origin = 'http://127.0.0.1:1';
    const preflight = await fetch(`${api.url}/payments`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,idempotency-key',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), origin);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Idempotency-Key/);
    const res = await pay('"k-7"', body, { origin });
    assert.match(res.headers.get('access-control-expose-headers') ?? '', /Retry-After, Idempotent-Replayed/);
  });

  test('keepAlive: false closes every answer; keepAlive: true keeps the connection (5 s idle)', async () => {
    const status = (res: IncomingMessage) => [res.statusCode, res.headers.connection, res.headers['keep-alive']];
    const post = () =>
      new Promise<unknown[]>((resolve, reject) => {
        const req = request(`${api.url}/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': '"k-ka"' },
        });
        req
          .on('response', (res) => {
            res.resume();
            resolve(status(res));
          })
          .on('error', reject);
        req.end(JSON.stringify(body));
      });
    assert.deepEqual(await post(), [201, 'keep-alive', 'timeout=5']);
    await control({ keepAlive: false });
    assert.deepEqual(await post(), [201, 'close', undefined]); // the replay, on a connection that closes
    assert.equal(await ledgerCount(), 1);
  });

  test('reset aborts held requests without a charge', async () => {
    await control({ hold: true });
    const held = pay('"k-8"');
    await waitUntil(() => api.faults.snapshot().held === 1);
    await control({ reset: true });
    assert.equal((await held).status, 503);
    assert.equal(await ledgerCount(), 0);
    assert.equal((await pay('"k-8"')).status, 201);
  });
});

/** The API in a process of its own over `dbPath`; resolves its URL once it listens. */
function apiProcess(dbPath: string) {
  const code = `const { startApiServer } = await import(${JSON.stringify(new URL('./api-server.ts', import.meta.url).href)});
    const api = await startApiServer({ dbPath: ${JSON.stringify(dbPath)} });
    console.log(api.url);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (exit) => reject(new Error(`the API process exited (${exit}) before listening`)));
  });
  return { child, url };
}

test('the API SIGKILLed after a commit whose answer was dropped: the restarted API replays it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-selfcheck-'));
  const dbPath = join(dir, 'payments.sqlite');
  const first = apiProcess(dbPath);
  let second: ApiServer | undefined;
  try {
    const url = await first.url;
    const post = (base: string) =>
      fetch(`${base}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': '"committed"' },
        body: JSON.stringify(body),
      });
    await fetch(`${url}/__control`, { method: 'POST', body: JSON.stringify({ drop: 1 }) });
    await assert.rejects(post(url)); // committed, the answer never left
    first.child.kill('SIGKILL');
    second = await startApiServer({ dbPath });
    const retry = await post(second.url);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true', 'the commit survived the kill');
    assert.equal(second.charges().length, 1);
  } finally {
    first.child.kill('SIGKILL');
    await second?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the API SIGKILLed with a payment held inside its transaction: nothing committed, the retry charges once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-selfcheck-'));
  const dbPath = join(dir, 'payments.sqlite');
  const first = apiProcess(dbPath);
  let second: ApiServer | undefined;
  try {
    const url = await first.url;
    const post = (base: string) =>
      fetch(`${base}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': '"killed"' },
        body: JSON.stringify(body),
      });
    await fetch(`${url}/__control`, { method: 'POST', body: JSON.stringify({ hold: true }) });
    const held = post(url).catch((error: unknown) => error);
    await waitUntil(async () => {
      const state = (await (await fetch(`${url}/__control`)).json()) as { faults: { held: number } };
      return state.faults.held === 1; // the key row and the charge are written, not committed
    });
    first.child.kill('SIGKILL');
    assert.ok((await held) instanceof Error, 'the held request got no answer');
    second = await startApiServer({ dbPath });
    assert.equal(await (await fetch(`${second.url}/ledger`)).json().then((l) => (l as { count: number }).count), 0);
    const retry = await post(second.url);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), null, 'the key died with its transaction: it runs now');
    const replay = await post(second.url);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.charges().length, 1);
  } finally {
    first.child.kill('SIGKILL');
    await second?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
