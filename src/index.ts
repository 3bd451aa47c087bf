/**
 * The public API of `oncely`. What is not here (canonical JSON, key minting, record
 * parsing, Structured Field helpers, state sets) is an implementation detail that may
 * change in any release; store authors find the record rules in the docs.
 */
export type { Client, ClientOptions, IntentOptions, PendingIntent } from './client.js';
export { MAX_INTENT_NAME_LENGTH } from './client.js';
export { type IntentCoordinator, LocalCoordinator } from './coordinator/coordinator.js';
export { createClient } from './core-client.js';
export * from './errors.js';
export type { ClientStats, EventOf, OncelyEvent, OncelyEventType } from './events.js';
export type { Network } from './http/network.js';
export type { InferOutput, StandardSchemaV1 } from './http/schema.js';
export { derivedKeys } from './intent/derived-keys.js';
// A foreign transport's classification: reached only by importing them, so a page that only post()s does not carry it.
export { intentFetch } from './intent/fetch.js';
export type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './intent/intent.js';
export { Intent } from './intent/intent.js';
export { type KeyDeriver, type KeyKind, MAX_KEY_LENGTH } from './intent/keys.js';
export { run } from './intent/run.js';
// The framework-free core of UI bindings: `oncely/react` wraps it; Vue, Svelte, Solid use it directly.
export {
  IdempotentMutationObserver,
  type IdempotentMutationOptions,
  type MutationResult,
  type RequestContext,
} from './observer/mutation-observer.js';
export {
  initialMutationState,
  type MutationAction,
  type MutationError,
  type MutationState,
  type MutationStatus,
  reduceMutation,
} from './observer/reduce-mutation.js';
// Profile values (ietf, stripe, the variants) are in `oncely/profiles`, imported where used.
export type { Outcome, Profile } from './profiles/profiles.js';
export type { RetryOptions } from './retry/policy.js';
export { MemoryStore } from './store/memory-store.js';
// What a store of your own applies in delete/clear (`keepPending`) and sweep: docs/stores.md.
export { isPending, isSweepable } from './store/record-rules.js';
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
