/**
 * `express-idempotency` 1.0.6 with its in-memory adapter, on Express 5, as its README
 * wires it: the middleware on POST, the route checks `isHit` (a replay was already sent)
 * and performs the effect otherwise. Its own conflict (409) and misuse (417) errors go
 * through `next(error)` with the status set; a small error handler answers them as JSON.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { getSharedIdempotencyService, idempotency } from 'express-idempotency';

type IdempotencyDataAdapter = NonNullable<NonNullable<Parameters<typeof idempotency>[0]>['dataAdapter']>;

import { closeServer, invalidPayment, listen, sleep, slowMs, type TestServer } from './listen.js';

/** `dataAdapter`: another key store than the in-memory one (test/check's Redis); `closing` runs after the server closes. */
export async function startExpressIdempotencyServer(
  options: { dataAdapter?: IdempotencyDataAdapter; closing?: () => Promise<void> } = {},
): Promise<TestServer> {
  let effects = 0;
  const app = express();
  app.use(express.json());
  app.post('/payments', idempotency(options.dataAdapter ? { dataAdapter: options.dataAdapter } : undefined));
  app.post('/payments', async (req: Request, res: Response) => {
    if (getSharedIdempotencyService().isHit(req)) return;
    const invalid = invalidPayment(req.body);
    if (invalid) {
      res.status(400).json({ error: { code: 'invalid_request', message: invalid } });
      return;
    }
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    res
      .status(201)
      .json({ id: `pay_${randomUUID().slice(0, 8)}`, amount: req.body.amount, currency: req.body.currency });
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    const status = res.statusCode >= 400 ? res.statusCode : 500;
    res.status(status).json({ error: { code: `http_${status}`, message: error.message } });
  });
  const server = createServer(app);
  const url = await listen(server);
  const close = async () => {
    await closeServer(server);
    await options.closing?.();
  };
  return { url, effects: () => effects, close };
}
