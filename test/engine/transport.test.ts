/**
 * How an attempt reaches the wire (issue 30 §1): without ky options it goes to the fetch
 * directly (oncely's own fetch gets the URL and init, an app's fetch a Request, as ky
 * handed it); with ky options, through ky, its hooks once per attempt. The client's
 * headers go with every transport. What fetch would refuse to build is refused before
 * anything is sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, intentFetch, MemoryStore } from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server() {
  const s = await wireServer(() => ({ status: 201, body: { id: 'p' } }));
  servers.push(s);
  return s;
}

describe('transport', () => {
  it("the client's static headers go with request() and intentFetch(), the call's own headers over them", async () => {
    const s = await server();
    const api = createClient({
      baseUrl: s.url,
      store: new MemoryStore(),
      headers: { authorization: 'Bearer static', 'x-app': 'client' },
    });
    await (await api.intent('a')).post('orders', { json: { n: 1 }, headers: { 'x-app': 'call' } });
    await intentFetch(await api.intent('b'), 'orders', { method: 'POST', body: '{}' });
    expect(s.requests.map((r) => [r.headers.authorization, r.headers['x-app']])).toEqual([
      ['Bearer static', 'call'],
      ['Bearer static', 'client'],
    ]);
  });

  it("an app's fetch gets one Request carrying the key, the body and manual redirects; oncely's own gets the URL", async () => {
    const s = await server();
    const seen: unknown[][] = [];
    const api = createClient({
      baseUrl: s.url,
      store: new MemoryStore(),
      fetch: (input, init) => {
        seen.push([input, init]);
        return fetch(input, init);
      },
    });
    const intent = await api.intent('a');
    await intent.post('orders', { json: { n: 1 } });
    expect(seen).toHaveLength(1);
    const [request, init] = seen[0] as [Request, RequestInit | undefined];
    expect(request).toBeInstanceOf(Request);
    expect(init).toBeUndefined();
    expect(request.headers.get('idempotency-key')).toBe(`"${intent.key}"`);
    expect(request.redirect).toBe('manual');
    expect(s.requests[0]!.body).toBe('{"n":1}');
  });

  it('with ky options the attempt goes through ky: a hook runs once per attempt, retries included', async () => {
    let n = 0;
    const s = await wireServer(() => (++n === 1 ? { status: 503, headers: { 'retry-after': '0' } } : { status: 201 }));
    servers.push(s);
    const hooked: string[] = [];
    const api = createClient({
      baseUrl: s.url,
      store: new MemoryStore(),
      ky: { hooks: { beforeRequest: [({ request }) => void hooked.push(request.headers.get('idempotency-key')!)] } },
    });
    const intent = await api.intent('a');
    expect(await intent.post('orders', { json: {} })).toMatchObject({ status: 201, attempts: 2 });
    expect(hooked).toEqual([`"${intent.key}"`, `"${intent.key}"`]);
  });

  it('resolved paths are remembered per base URL: two clients, one path, each to its own server; a foreign origin stays refused', async () => {
    const [a, b] = [await server(), await server()];
    const clients = [a, b].map((s) => createClient({ baseUrl: `${s.url}v1/`, store: new MemoryStore() }));
    for (let round = 0; round < 2; round++)
      for (const [i, api] of clients.entries()) await (await api.intent(`p${round}:${i}`)).post('orders', { json: {} });
    expect([a, b].map((s) => s.requests.map((r) => r.url))).toEqual([
      ['/v1/orders', '/v1/orders'],
      ['/v1/orders', '/v1/orders'],
    ]);
    const foreign = `${b.url}v1/orders`;
    for (let round = 0; round < 2; round++)
      await expect((await clients[0]!.intent(`f${round}`)).post(foreign, { json: {} })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    expect(b.requests).toHaveLength(2);
  });

  it('a method fetch refuses (CONNECT, TRACE, TRACK) or a URL with credentials is refused before anything is sent', async () => {
    const s = await server();
    const api = createClient({ baseUrl: s.url, store: new MemoryStore() });
    const intent = await api.intent('a');
    for (const method of ['CONNECT', 'trace', 'TRACK'])
      await expect(intent.request(method, 'orders')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const withCredentials = s.url.replace('http://', 'http://user:secret@');
    await expect(intent.post(`${withCredentials}orders`, { json: {} })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(s.requests).toHaveLength(0);
    expect(intent.state).toBe('ready');
  });
});
