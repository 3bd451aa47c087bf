/**
 * express-idempotency 1.0.6 on a real Redis, its key store as its Redis adapter
 * (express-idempotency-redis-adapter 1.0.8) writes it: `GET key`, then after the effect
 * `SET key <json> EX 86400`, on one pipelined connection. A read and a later write: the
 * first requests with one key that all reach GET before the first SET all run. The adapter
 * itself is not a dependency here (it would bring @redis/client); this is its four methods.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { getSharedIdempotencyService, type IdempotencyResource, idempotency } from 'express-idempotency';
import { closeServer, invalidPayment, listen, sleep, slowMs, type TestServer } from '../servers/listen.js';
import { RespClient } from './redis-server.js';

/** express-idempotency-redis-adapter 1.0.8's `RedisAdapter`, method for method. */
class RedisAdapter {
  readonly client: RespClient;
  readonly ttl: number;
  constructor(client: RespClient, ttl = 86_400) {
    this.client = client;
    this.ttl = ttl;
  }
  async findByIdempotencyKey(idempotencyKey: string) {
    const dump = await this.client.command('GET', idempotencyKey);
    return typeof dump === 'string' ? { idempotencyKey, ...JSON.parse(dump) } : null;
  }
  create = (resource: IdempotencyResource) => this.#createOrUpdate(resource);
  update = (resource: IdempotencyResource) => this.#createOrUpdate(resource);
  async delete(idempotencyKey: string) {
    await this.client.command('DEL', idempotencyKey);
  }
  async #createOrUpdate({ idempotencyKey, ...payload }: IdempotencyResource) {
    await this.client.command('SET', idempotencyKey, JSON.stringify(payload), 'EX', String(this.ttl));
  }
}

export async function startExpressRedisServer(redisSocket: string): Promise<TestServer> {
  let effects = 0;
  const client = new RespClient(redisSocket);
  const app = express();
  app.use(express.json());
  app.post('/payments', idempotency({ dataAdapter: new RedisAdapter(client) }));
  app.post('/payments', async (req: Request, res: Response) => {
    if (getSharedIdempotencyService().isHit(req)) return;
    const invalid = invalidPayment(req.body);
    if (invalid) {
      res.status(400).json({ error: { code: 'invalid_request', message: invalid } });
      return;
    }
    await sleep(slowMs(req.headers['x-slow']));
    effects += 1;
    res.status(201).json({ id: `pay_${randomUUID().slice(0, 8)}`, ...req.body });
  });
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
    const status = res.statusCode >= 400 ? res.statusCode : 500;
    res.status(status).json({ error: { code: `http_${status}`, message: error.message } });
  });
  const server = createServer(app);
  const url = await listen(server);
  return {
    url,
    effects: () => effects,
    close: async () => {
      await closeServer(server);
      await client.close();
    },
  };
}
