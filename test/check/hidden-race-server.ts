/**
 * A read-then-write key store whose window only opens when the effect is slow: without
 * `X-Slow` a request is read, run and stored in one synchronous step, so requests with one
 * key never overlap at the server and each repeat gets the stored answer; with `X-Slow: ms`
 * the effect awaits that long between the read and the write, and overlapping requests all
 * run. Without --slow the check sees no overlap: it must say the race was not measured
 * (not PASSED) and how to measure it; with --slow it must find the race.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';
import { readBody, readPayment, sendJson } from './http.js';

export async function startHiddenRaceServer(): Promise<TestServer> {
  let effects = 0;
  const stored = new Map<string, string>();
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/payments') return sendJson(res, 404, { title: 'Not found' });
    const json = readPayment(res, text);
    if (json === undefined) return;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') return sendJson(res, 400, { title: 'Idempotency-Key is required' });
    const found = stored.get(key); // the read …
    if (found) return sendJson(res, 201, found, { 'Idempotent-Replayed': 'true' });
    effects += 1;
    const body = JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) });
    const slow = slowMs(req.headers['x-slow']);
    if (slow > 0) await sleep(slow); // … the window, only when slowed …
    stored.set(key, body); // … the write.
    sendJson(res, 201, body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
