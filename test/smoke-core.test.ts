import { HttpResponse, http } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, MemoryStore } from '../src/index.js';

let calls: { key: string | null; n: number }[] = [];
const server = setupServer(
  http.post('http://api.test/pay', ({ request }) => {
    calls.push({ key: request.headers.get('idempotency-key'), n: calls.length });
    if (calls.length === 1) return HttpResponse.error();
    if (calls.length === 2) return HttpResponse.json({ busy: true }, { status: 503, headers: { 'retry-after': '0' } });
    return HttpResponse.json({ id: 'p1' }, { status: 201, headers: { 'idempotent-replayed': 'true' } });
  }),
);
beforeAll(() => server.listen({ onUnhandledFrame: 'error' }));
afterAll(() => server.close());

it('smoke', async () => {
  calls = [];
  const events: string[] = [];
  const api = createClient({ baseUrl: 'http://api.test/', store: new MemoryStore(), retry: { baseDelay: 1 }, onEvent: (e) => events.push(e.type) });
  const intent = await api.intent('checkout:1');
  const res = await intent.post('pay', { json: { amount: 1 } });
  expect(res.status).toBe(201);
  expect(res.replayed).toBe(true);
  expect(res.attempts).toBe(3);
  expect(calls.map((c) => c.key)).toEqual([`"${intent.key}"`, `"${intent.key}"`, `"${intent.key}"`]);
  expect(intent.state).toBe('succeeded');
  console.log(events);
});
