/** What only the node:http adapter does: sockets. */
import { request as httpRequest } from 'node:http';
import { expect, onTestFinished, test, vi } from 'vitest';
import { listenContractServer } from '../node/mock-server.js';
import { type ContractServerOptions, createContractServer } from '../src/mock/index.js';

async function setup(options: ContractServerOptions = {}) {
  const contract = createContractServer(options);
  const http = await listenContractServer(contract);
  onTestFinished(() => http.close());
  return { contract, http };
}

/** A raw node:http POST, to see socket-level outcomes. */
function rawPost(url: string, key: string, body: string) {
  const req = httpRequest(url, {
    method: 'POST',
    headers: { 'Idempotency-Key': `"${key}"`, 'Content-Type': 'application/json', Connection: 'close' },
  });
  const outcome = new Promise<{ status: number } | { error: NodeJS.ErrnoException }>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('error', (error) => resolve({ error }));
  });
  req.end(body);
  return { req, outcome };
}

test('listens on 127.0.0.1 with a free port', async () => {
  const { http } = await setup();
  expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(Number(new URL(http.url).port)).toBeGreaterThan(0);
});

test('drop-after-commit destroys the socket: fetch rejects, a raw client sees a reset, the effect ran', async () => {
  const { contract, http } = await setup();
  contract.inject({ fault: 'drop-after-commit', times: 2 });
  const error = await fetch(`${http.url}/orders`, {
    method: 'POST',
    headers: { 'Idempotency-Key': '"k1"' },
    body: '{}',
  }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(TypeError);
  expect((error as TypeError).cause).toBeDefined();

  const { outcome } = rawPost(`${http.url}/orders`, 'k2', '{}');
  const result = await outcome;
  expect('error' in result && result.error.code).toBe('ECONNRESET');
  expect(contract.effects()).toBe(2);
  expect(contract.keyState('k2')).toBe('completed');
});

test('hang is released when the client closes its socket', async () => {
  const { contract, http } = await setup();
  contract.inject({ fault: 'hang' });
  const { req, outcome } = rawPost(`${http.url}/orders`, 'k1', '{"a":1}');
  await vi.waitFor(() => expect(contract.keyState('k1')).toBe('in_progress'));
  req.destroy();
  await outcome;
  await vi.waitFor(() => expect(contract.keyState('k1')).toBeUndefined());
  expect(contract.effects()).toBe(0);
  expect(contract.requests[0]).toMatchObject({ key: 'k1', status: null, fault: 'hang' });
});

test('close() ends hung requests and releases their keys', async () => {
  const contract = createContractServer();
  const http = await listenContractServer(contract);
  contract.inject({ fault: 'hang' });
  const pending = fetch(`${http.url}/orders`, { method: 'POST', headers: { 'Idempotency-Key': '"k1"' }, body: '{}' });
  await vi.waitFor(() => expect(contract.keyState('k1')).toBe('in_progress'));
  await http.close();
  await expect(pending).rejects.toThrow(TypeError);
  await vi.waitFor(() => expect(contract.keyState('k1')).toBeUndefined());
});

test('passes method, query, headers and a binary body through, and every Set-Cookie back', async () => {
  let seen: { method: string; search: string; auth: string | null; bytes: number[] } | undefined;
  const { http } = await setup({
    routes: {
      'PUT /blobs/:id': async ({ request, url }) => {
        const bytes = [...new Uint8Array(await request.arrayBuffer())];
        seen = { method: request.method, search: url.search, auth: request.headers.get('authorization'), bytes };
        const headers = new Headers({ 'Content-Type': 'application/octet-stream' });
        headers.append('Set-Cookie', 'a=1');
        headers.append('Set-Cookie', 'b=2');
        return new Response(new Uint8Array([0, 255, 1]), { status: 200, headers });
      },
    },
  });
  const res = await fetch(`${http.url}/blobs/x?v=2`, {
    method: 'PUT',
    headers: { Authorization: 'Bearer t', 'Idempotency-Key': '"k1"' },
    body: new Uint8Array([9, 0, 200]),
  });
  expect(res.status).toBe(200);
  expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([0, 255, 1]);
  expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
  expect(seen).toEqual({ method: 'PUT', search: '?v=2', auth: 'Bearer t', bytes: [9, 0, 200] });
});
