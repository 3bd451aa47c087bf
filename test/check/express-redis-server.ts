/**
 * express-idempotency 1.0.6 on a real Redis, its key store as its Redis adapter
 * (express-idempotency-redis-adapter 1.0.8) writes it: `GET key`, then after the effect
 * `SET key <json> EX 86400`, on one pipelined connection. A read and a later write: the
 * first requests with one key that all reach GET before the first SET all run. The adapter
 * itself is not a dependency here (it would bring @redis/client); this is its four methods.
 */
import type { IdempotencyResource } from 'express-idempotency';
import { startExpressIdempotencyServer } from '../servers/express-idempotency-server.js';
import type { TestServer } from '../servers/listen.js';
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
  const client = new RespClient(redisSocket);
  return startExpressIdempotencyServer({ dataAdapter: new RedisAdapter(client), closing: () => client.close() });
}
