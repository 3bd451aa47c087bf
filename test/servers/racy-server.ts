/**
 * A deliberately racy idempotency server: its key store reads, then writes. A request
 * looks its key up, runs the effect if nothing is stored, and stores the answer only
 * afterwards — no claim, no "in progress" — so simultaneous first requests with one key
 * all run. Sequential retries are replayed (no marker), which is why it looks fine until
 * two requests overlap. The check must catch it.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import { closeServer, invalidPayment, listen, sleep, slowMs, type TestServer } from './listen.js';

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

export async function startRacyServer(): Promise<TestServer> {
  let effects = 0;
  const stored = new Map<string, { status: number; body: string }>();
  // A remote store: every read and write takes a round trip.
  const store = {
    async get(key: string) {
      await sleep(1);
      return stored.get(key);
    },
    async set(key: string, value: { status: number; body: string }) {
      await sleep(1);
      stored.set(key, value);
    },
  };
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/payments') return send(404, { error: 'not found' });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return send(400, { error: 'invalid JSON' });
    }
    const invalid = invalidPayment(json);
    if (invalid) return send(400, { error: invalid });
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string') return send(400, { error: 'Idempotency-Key is required' });
    const found = await store.get(key);
    if (found) return send(found.status, found.body);
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    const body = JSON.stringify({ id: `pay_${randomUUID().slice(0, 8)}`, ...(json as object) });
    await store.set(key, { status: 201, body });
    send(201, body);
  });
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
