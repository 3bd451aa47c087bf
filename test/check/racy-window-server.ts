/**
 * A server that follows the draft in every way the check measures (quoted Structured Field
 * key, replays marked `Idempotent-Replayed: true`, 422 for another body, 400 without a key)
 * but whose key store reads, then writes one 1 ms timer later: two first requests with one
 * key that arrive within that window both run. The check must still fail it, every run.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen, sleep, type TestServer } from '../servers/listen.js';
import { readBody, readPayment, sendJson } from './http.js';

export async function startRacyWindowServer(): Promise<TestServer> {
  let effects = 0;
  const stored = new Map<string, { fingerprint: string; body: string }>();
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/payments') return sendJson(res, 404, { title: 'Not found' });
    const json = readPayment(res, text);
    if (json === undefined) return;
    const header = req.headers['idempotency-key'];
    const key = typeof header === 'string' ? /^"([^"\\]+)"$/.exec(header)?.[1] : undefined;
    if (key === undefined) return sendJson(res, 400, { title: 'Idempotency-Key is missing or not a string' });
    const fingerprint = createHash('sha256').update(text).digest('hex');
    const found = stored.get(key); // the read …
    if (found) {
      if (found.fingerprint !== fingerprint) return sendJson(res, 422, { title: 'Idempotency-Key is already used' });
      return sendJson(res, 201, found.body, { 'Idempotent-Replayed': 'true' });
    }
    effects += 1;
    const body = JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) });
    await sleep(1); // … the window: a store round trip …
    stored.set(key, { fingerprint, body }); // … the write.
    sendJson(res, 201, body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
