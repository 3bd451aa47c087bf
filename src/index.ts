/**
 * The public API of `oncely`. What is not here (canonical JSON, key minting, record
 * parsing, Structured Field helpers, state sets) is an implementation detail that may
 * change in any release; store authors find the record rules in the docs.
 */
export type { Client, ClientOptions, IntentOptions, PendingIntent } from './client.js';
export { createClient, MAX_INTENT_NAME_LENGTH } from './client.js';
export { type IntentCoordinator, LocalCoordinator } from './coordinator/coordinator.js';
export * from './errors.js';
export type { ClientStats, EventOf, OncelyEvent, OncelyEventType } from './events.js';
export type { Network } from './http/network.js';
export type { InferOutput, StandardSchemaV1 } from './http/schema.js';
export type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './intent/intent.js';
export { Intent } from './intent/intent.js';
export { type KeyKind, MAX_KEY_LENGTH } from './intent/keys.js';
// The framework-free core of UI bindings: `oncely/react` wraps it; Vue, Svelte, Solid use it directly.
export {
  IdempotentMutationObserver,
  type IdempotentMutationOptions,
  type MutationFnOptions,
  type RequestContext,
  type RequestMutationOptions,
} from './observer/mutation-observer.js';
export {
  initialMutationState,
  type MutationAction,
  type MutationState,
  type MutationStatus,
  reduceMutation,
} from './observer/reduce-mutation.js';
export { ietf, type Outcome, type Profile, stripe } from './profiles/profiles.js';
export { type ProfileName, profiles } from './profiles/registry.js';
export { ietfBare, ietfBareUnmarked, type ProfileChanges, profileVariant } from './profiles/variants.js';
export type { RetryOptions } from './retry/policy.js';
export { MemoryStore } from './store/memory-store.js';
export type {
  ClaimOptions,
  ClaimResult,
  IntentLease,
  IntentRecord,
  IntentState,
  ObservableStore,
  RecordUpdater,
  Store,
  StoreEvent,
  SweepOptions,
  WriteOptions,
} from './store/store.js';
