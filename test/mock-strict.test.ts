/**
 * The contract server behaves like a strict server in an app's tests: one key scope unless
 * told otherwise, 404 for what no route serves, and MSW handlers that leave the app's
 * other requests to the app's other handlers.
 */
import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { describe, expect, onTestFinished, test } from 'vitest';
import { createClient, MemoryStore, OutcomeUnknownError } from '../src/index.js';
import { type ContractServerOptions, createContractServer } from '../src/mock/index.js';
import { mswHandlers } from '../src/mock/msw.js';

const BASE = 'https://api.test';

const payments = (): NonNullable<ContractServerOptions['routes']> => {
  let n = 0;
  return { 'POST /payments': ({ json }) => ({ status: 201, body: { id: `pay_${++n}`, ...(json as object) } }) };
};

const post = (url: string, headers: Record<string, string> = {}) =>
  new Request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: '{}' });

function mount(...handlers: Parameters<typeof setupServer>) {
  const msw = setupServer(...handlers);
  msw.listen({ onUnhandledFrame: 'error' });
  onTestFinished(() => msw.close());
  return msw;
}

describe('key scope', () => {
  /** A resume after an unknown outcome, sent with a fresh bearer token, as apps do. */
  async function resumeWithFreshToken(options: ContractServerOptions) {
    const contract = createContractServer({ routes: payments(), ...options });
    mount(...mswHandlers(contract, { baseUrl: BASE }));
    let token = 0;
    const api = createClient({
      baseUrl: `${BASE}/`,
      store: new MemoryStore(),
      headers: () => ({ Authorization: `Bearer t${++token}` }),
      retry: { maxAttempts: 1 },
    });
    const intent = await api.intent('checkout:1');
    contract.inject({ fault: 'drop-after-commit', times: 1 });
    await expect(intent.post('payments', { json: { amount: 1 } })).rejects.toBeInstanceOf(OutcomeUnknownError);
    const resumed = await intent.post('payments', { json: { amount: 1 } });
    return { contract, resumed, key: intent.key };
  }

  test('by default every request is in one scope: a resume with a fresh token is a replay, one effect', async () => {
    const { contract, resumed, key } = await resumeWithFreshToken({});
    expect(resumed.replayed).toBe(true);
    expect(contract.effects(key)).toBe(1);
    expect(contract.requests.map((r) => r.scope)).toEqual(['', '']);
  });

  test('scoping by Authorization is explicit, and then a fresh token is another scope (two effects)', async () => {
    const { contract, resumed, key } = await resumeWithFreshToken({ scopeHeader: 'Authorization' });
    expect(resumed.replayed).toBe(false);
    expect(contract.effects(key)).toBe(2);
  });

  test('scopeHeader names the header that tells accounts apart', async () => {
    const contract = createContractServer({ routes: payments(), scopeHeader: 'X-Account' });
    const key = { 'Idempotency-Key': '"k1"' };
    await contract.fetch(post(`${BASE}/payments`, { ...key, 'X-Account': 'alice', Authorization: 'Bearer 1' }));
    const again = await contract.fetch(post(`${BASE}/payments`, { ...key, 'X-Account': 'alice', Authorization: 'x' }));
    await contract.fetch(post(`${BASE}/payments`, { ...key, 'X-Account': 'bob' }));
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(contract.effects('k1', 'alice')).toBe(1);
    expect(contract.effects('k1', 'bob')).toBe(1);
  });
});

test('without a scope function a request is logged in the step it arrives (harnesses read requests.at(-1))', () => {
  const contract = createContractServer({ routes: payments(), scopeHeader: 'X-Account' });
  const answer = contract.fetch(post(`${BASE}/payments`, { 'Idempotency-Key': '"k1"', 'X-Account': 'a' }));
  expect(contract.requests.at(-1)).toMatchObject({ key: 'k1', scope: 'a' });
  return answer;
});

describe('paths no route serves', () => {
  test('answer 404 before any key check: without a key, with an invalid key, with a valid one', async () => {
    const contract = createContractServer({ routes: payments() });
    const missing = await contract.fetch(post(`${BASE}/refunds`));
    const invalid = await contract.fetch(post(`${BASE}/refunds`, { 'Idempotency-Key': 'not-quoted' }));
    const valid = await contract.fetch(post(`${BASE}/refunds`, { 'Idempotency-Key': '"k1"' }));
    expect([missing.status, invalid.status, valid.status]).toEqual([404, 404, 404]);
    expect(contract.keyState('k1')).toBeUndefined();
    expect(contract.effects()).toBe(0);
    // A served path still checks the key.
    expect((await contract.fetch(post(`${BASE}/payments`))).status).toBe(400);
  });

  test('a method the route does not serve is a 404 too', async () => {
    const contract = createContractServer({ routes: payments() });
    const res = await contract.fetch(new Request(`${BASE}/payments`, { method: 'DELETE' }));
    expect(res.status).toBe(404);
  });

  test('serves() tells what a route answers; a preflight is served on any routed path', () => {
    const contract = createContractServer({ routes: payments() });
    expect(contract.serves('POST', '/payments')).toBe(true);
    expect(contract.serves('post', '/payments')).toBe(true);
    expect(contract.serves('GET', '/payments')).toBe(false);
    expect(contract.serves('POST', '/refunds')).toBe(false);
    expect(contract.serves('OPTIONS', '/payments')).toBe(true);
    expect(contract.serves('OPTIONS', '/refunds')).toBe(false);
    expect(contract.defaultRoutes).toBe(false);
    expect(createContractServer().defaultRoutes).toBe(true);
  });
});

describe('mswHandlers', () => {
  const appHandlers = () => [
    http.get(`${BASE}/config`, () => HttpResponse.json({ from: 'app' })),
    http.post('https://analytics.test/events', () => HttpResponse.json({ from: 'app' })),
  ];

  test('without baseUrl only requests a route serves reach the server; the app keeps its other handlers', async () => {
    const contract = createContractServer({ routes: payments() });
    mount(...mswHandlers(contract), ...appHandlers());
    const paid = await fetch(post(`${BASE}/payments`, { 'Idempotency-Key': '"k1"' }));
    expect(paid.status).toBe(201);
    expect(await (await fetch(`${BASE}/config`)).json()).toEqual({ from: 'app' });
    expect(await (await fetch(post('https://analytics.test/events'))).json()).toEqual({ from: 'app' });
    expect(contract.requests.map((r) => r.path)).toEqual(['/payments']);
  });

  test('without baseUrl over the default routes (which serve every path) it refuses, asking for one', () => {
    expect(() => mswHandlers(createContractServer())).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => mswHandlers(createContractServer(), { baseUrl: BASE })).not.toThrow();
  });

  test('with baseUrl everything under it is the server (404 when unrouted); other origins reach the app', async () => {
    const contract = createContractServer({ routes: payments() });
    mount(...mswHandlers(contract, { baseUrl: BASE }), ...appHandlers());
    expect((await fetch(`${BASE}/config`)).status).toBe(404);
    expect(await (await fetch(post('https://analytics.test/events'))).json()).toEqual({ from: 'app' });
  });

  test('a baseUrl with a path prefix leaves sibling paths alone', async () => {
    const contract = createContractServer({ routes: { 'POST /v1/payments': payments()['POST /payments']! } });
    mount(
      ...mswHandlers(contract, { baseUrl: `${BASE}/v1/` }),
      http.get(`${BASE}/v10/config`, () => HttpResponse.text('app')),
    );
    expect((await fetch(post(`${BASE}/v1/payments`, { 'Idempotency-Key': '"k1"' }))).status).toBe(201);
    expect(await (await fetch(`${BASE}/v10/config`)).text()).toBe('app');
  });
});
