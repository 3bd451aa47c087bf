/**
 * A server that binds a body to the first key that sent it: a new key with a body another
 * key already sent gets a 409 "fingerprint conflict" (for its retention, here the server's
 * life). Its key store also reads, then writes one 1 ms timer later, so first requests with
 * one key that arrive together all run. With one fixed body the check cannot make fresh
 * first requests: it must say "not measured", never PASSED, and must not read the body's
 * refusals as facts about keys. With a body template (`{{key}}`) it must find the race.
 * Keys are read verbatim (a quoted key is another key), as every library measured reads them.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';
import { readBody, readPayment, sendJson } from './http.js';

export async function startFingerprintBoundServer(): Promise<TestServer> {
  let effects = 0;
  const stored = new Map<string, { fingerprint: string; body: string }>();
  const owners = new Map<string, string>(); // fingerprint → the key that first sent it
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/payments') return sendJson(res, 404, { title: 'Not found' });
    const json = readPayment(res, text);
    if (json === undefined) return;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length > 255)
      return sendJson(res, 400, { title: 'Idempotency-Key is missing or too long' });
    const fingerprint = createHash('sha256').update(text).digest('hex');
    const owner = owners.get(fingerprint);
    if (owner !== undefined && owner !== key)
      return sendJson(res, 409, { title: 'Fingerprint conflict: this body was sent with another key' });
    const found = stored.get(key); // the read …
    if (found) {
      if (found.fingerprint !== fingerprint) return sendJson(res, 422, { title: 'Idempotency-Key is already used' });
      return sendJson(res, 201, found.body, { 'Idempotent-Replayed': 'true' });
    }
    effects += 1;
    const body = JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) });
    await sleep(1 + slowMs(req.headers['x-slow'])); // … the window …
    stored.set(key, { fingerprint, body }); // … the write.
    owners.set(fingerprint, key);
    sendJson(res, 201, body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
