/**
 * A server that stores each answer under its key (read verbatim, as every library measured
 * in issue 31 reads it) and marks a replay with one of the spellings real servers use:
 * `Idempotent-Replayed` (the draft), `Idempotency-Replayed`, `x-idempotent-replayed`.
 * `POST /payments` creates a payment (201); `POST /fail` fails (500), and the failure is
 * stored and replayed too, so a replayed 5xx can be told from a fresh one only by the marker.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readBody, sendJson } from '../check/http.js';
import { closeServer, listen, type TestServer } from './listen.js';

export async function startReplayMarkerServer(marker: string): Promise<TestServer & { requests: () => number }> {
  let effects = 0;
  let requests = 0;
  const stored = new Map<string, { status: number; body: string }>();
  const server = createServer(async (req, res) => {
    await readBody(req);
    requests += 1;
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') return sendJson(res, 400, { title: 'Idempotency-Key is required' });
    const found = stored.get(key);
    if (found) return sendJson(res, found.status, found.body, { [marker]: 'true' });
    const answer =
      req.url === '/fail'
        ? { status: 500, body: JSON.stringify({ title: 'The payment provider failed' }) }
        : { status: 201, body: JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}` }) };
    if (answer.status === 201) effects += 1;
    stored.set(key, answer);
    sendJson(res, answer.status, answer.body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, requests: () => requests, close: () => closeServer(server) };
}
