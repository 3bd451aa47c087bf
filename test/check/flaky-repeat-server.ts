/**
 * A server whose store fails on a repeat of a key with other bytes than the first (as
 * Powertools on Redis did in 7 of 7 runs): a 500, never the server's word about the key.
 * The store is asked before the body is validated. The same bytes are replayed
 * (`Idempotent-Replayed: true`); a key in progress is a 409.
 * The check must not judge key order or number type from a 500.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';
import { readBody, readPayment, sendJson } from './http.js';

export async function startFlakyRepeatServer(): Promise<TestServer> {
  let effects = 0;
  const stored = new Map<string, { text: string; body: string } | 'running'>();
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/payments') return sendJson(res, 404, { title: 'Not found' });
    const key = req.headers['idempotency-key'];
    const found = typeof key === 'string' ? stored.get(key) : undefined;
    if (found === 'running') return sendJson(res, 409, { title: 'In progress' }, { 'Retry-After': '1' });
    if (found) {
      if (found.text !== text) return sendJson(res, 500, { title: 'Internal Server Error' });
      return sendJson(res, 201, found.body, { 'Idempotent-Replayed': 'true' });
    }
    const json = readPayment(res, text);
    if (json === undefined) return;
    if (typeof key !== 'string') return sendJson(res, 400, { title: 'Idempotency-Key is required' });
    stored.set(key, 'running');
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    const body = JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) });
    stored.set(key, { text, body });
    sendJson(res, 201, body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
