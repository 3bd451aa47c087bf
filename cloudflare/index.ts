/**
 * `oncely/cloudflare`: a durable store for Cloudflare Workers. `DurableObjectStore` (the
 * Worker's side) over `IntentStoreObject` (the Durable Object class your Worker exports).
 * No import of `cloudflare:workers`: the entry loads anywhere, and runs in workerd.
 */
export {
  type DurableObjectNamespaceLike,
  DurableObjectStore,
  type DurableObjectStoreOptions,
} from './durable-object-store.js';
export { IntentStoreObject, type SqlStorageLike } from './intent-object.js';
