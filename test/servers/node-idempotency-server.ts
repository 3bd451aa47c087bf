/**
 * `@node-idempotency/core` 1.0.11 behind a small Express 5 adapter of ours. The adapter
 * maps the core's answers to HTTP the way its own Express plugin does (read in its
 * sources): a mismatch is 422, a request in progress 409 + `Retry-After: 1`, a missing
 * or too long key 400, a replay `Idempotent-Replayed: true`; bodies of 4xx/5xx are kept as
 * `error` and replayed too. The storage adapter is an in-memory map whose
 * `setIfNotExists` is atomic (no await between the read and the write).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Idempotency, IdempotencyError, IdempotencyErrorCodes } from '@node-idempotency/core';
import express, { type NextFunction, type Request, type Response } from 'express';
import { closeServer, invalidPayment, listen, sleep, slowMs, type TestServer } from './listen.js';

/** The core's StorageAdapter over a Map, TTL per entry. */
class MemoryStorage {
  readonly #entries = new Map<string, { value: string; until: number }>();
  #live(key: string) {
    const entry = this.#entries.get(key);
    if (entry && entry.until <= Date.now()) this.#entries.delete(key);
    return this.#entries.get(key);
  }
  async setIfNotExists(key: string, value: string, { ttl = 86_400_000 }: { ttl?: number } = {}) {
    if (this.#live(key)) return false;
    this.#entries.set(key, { value, until: Date.now() + ttl });
    return true;
  }
  async set(key: string, value: string, { ttl = 86_400_000 }: { ttl?: number }) {
    this.#entries.set(key, { value, until: Date.now() + ttl });
  }
  async get(key: string) {
    return this.#live(key)?.value;
  }
}

const STATUS: Record<string, number> = {
  [IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH]: 422,
  [IdempotencyErrorCodes.IDEMPOTENCY_KEY_LEN_EXEEDED]: 400,
  [IdempotencyErrorCodes.IDEMPOTENCY_KEY_MISSING]: 400,
  [IdempotencyErrorCodes.REQUEST_IN_PROGRESS]: 409,
};

/** The adapter: one middleware in front of the routes. */
function nodeIdempotency(core: Idempotency) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const params = { headers: req.headers, body: req.body, path: req.url, method: req.method };
    let stored: Awaited<ReturnType<Idempotency['onRequest']>>;
    try {
      stored = await core.onRequest(params);
    } catch (error) {
      if (!(error instanceof IdempotencyError)) return next(error);
      const status = STATUS[error.code] ?? 500;
      if (error.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS) res.setHeader('Retry-After', '1');
      res.status(status).json({ error: { code: error.code, message: error.message } });
      return;
    }
    if (stored) {
      const status = Number(stored.additional?.statusCode ?? 200);
      res.setHeader('Idempotent-Replayed', 'true');
      res.status(status).json(status < 400 ? stored.body : stored.error);
      return;
    }
    // First request: record what the route sends, then let it run.
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const statusCode = res.statusCode;
      void core.onResponse(params, {
        additional: { statusCode },
        ...(statusCode < 400 ? { body } : { error: body }),
      });
      return json(body);
    };
    next();
  };
}

export async function startNodeIdempotencyServer(): Promise<TestServer> {
  let effects = 0;
  const core = new Idempotency(new MemoryStorage());
  const app = express();
  app.use(express.json());
  app.post('/payments', nodeIdempotency(core), async (req: Request, res: Response) => {
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
  const server = createServer(app);
  const url = await listen(server);
  return { url, effects: () => effects, close: () => closeServer(server) };
}
