/**
 * `oncely/server`: the server half. A request's key is claimed in the transaction its effect
 * is written in; a repeat gets the stored answer, a concurrent one 409, another request
 * under the key 422. Platform-free (the Fetch API); stores: `MemoryKeyStore` here (tests),
 * `PostgresKeyStore` in `oncely/postgres`. Adapters: `oncely/server/express`, `oncely/server/fastify`.
 */
export { canonicalBody, receivedFingerprint } from '../intent/fingerprint.js';
export { PROBLEM_TYPES, type Problem } from '../mock/problem.js';
export {
  type Answer,
  createIdempotency,
  type HandlerContext,
  type Idempotency,
  type IdempotentHandler,
  type RequestEvent,
  type RequestOutcome,
  type Routed,
} from './idempotency.js';
export { MemoryKeyStore, type MemoryKeyStoreOptions, type MemoryTransaction } from './memory-store.js';
export { type OnceOptions, type OnceResult, type OnceSpec, once } from './once.js';
export type { IdempotencyOptions } from './options.js';
export type { Execution, KeyClaim, KeyStore, StoredAnswer } from './store.js';
export { Unsettled } from './unsettled.js';
