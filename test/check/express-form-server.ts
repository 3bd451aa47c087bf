/**
 * express-idempotency 1.0.6 (memory adapter) in front of a Stripe-style endpoint that takes
 * `application/x-www-form-urlencoded` bodies, for `oncely check --form`. It records the
 * content types it was sent, so the test can see every request went out as a form.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { getSharedIdempotencyService, idempotency } from 'express-idempotency';
import { closeServer, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';

export async function startExpressFormServer(): Promise<TestServer & { contentTypes: Set<string> }> {
  let effects = 0;
  const contentTypes = new Set<string>();
  const app = express();
  app.use((req, _res, next) => {
    if (req.method === 'POST') contentTypes.add(req.headers['content-type'] ?? 'none');
    next();
  });
  app.use(express.urlencoded({ extended: false }));
  app.post('/v1/charges', idempotency());
  app.post('/v1/charges', async (req: Request, res: Response) => {
    if (getSharedIdempotencyService().isHit(req)) return;
    const { amount, currency } = (req.body ?? {}) as Record<string, string | undefined>;
    if (!amount || !/^\d+$/.test(amount) || !currency) {
      res.status(400).json({ error: { type: 'invalid_request_error', message: 'amount and currency are required' } });
      return;
    }
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    res.status(200).json({ id: `ch_${randomUUID().slice(0, 8)}`, object: 'charge', amount: Number(amount), currency });
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    const status = res.statusCode >= 400 ? res.statusCode : 500;
    res.status(status).json({ error: { code: `http_${status}`, message: error.message } });
  });
  const server = createServer(app);
  const url = await listen(server);
  return { url, contentTypes, effects: () => effects, close: () => closeServer(server) };
}
