/**
 * A server whose key store claims atomically but never replays: the first request with a
 * key runs, and every later one with that key — the same body, another body, or one that
 * overlaps the first — is a 422. The check must take 422 for the mismatch and never for
 * "in progress", and must not judge replays it never saw.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';
import { readBody, readPayment, sendJson } from './http.js';

export async function startRefuseRepeatsServer(): Promise<TestServer> {
  let effects = 0;
  const claimed = new Set<string>();
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/payments') return sendJson(res, 404, { title: 'Not found' });
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') return sendJson(res, 400, { title: 'Idempotency-Key is required' });
    if (claimed.has(key)) return sendJson(res, 422, { title: 'Idempotency-Key has been used' });
    claimed.add(key);
    const json = readPayment(res, text);
    if (json === undefined) return;
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    sendJson(
      res,
      201,
      { id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) },
      { 'Idempotent-Replayed': 'false' },
    );
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
