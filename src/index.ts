export type { Client, ClientOptions, IntentOptions, PendingIntent } from './client.js';
export { createClient, MAX_INTENT_NAME_LENGTH } from './client.js';
export { type IntentCoordinator, LocalCoordinator } from './coordinator/coordinator.js';
export * from './errors.js';
export type { ClientStats, EventOf, OncelyEvent, OncelyEventType } from './events.js';
export type { InferOutput, StandardSchemaV1 } from './http/schema.js';
export type { RunClassifier } from './http/thrown.js';
export { canonicalJson, fingerprint } from './intent/fingerprint.js';
export type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './intent/intent.js';
export { Intent } from './intent/intent.js';
export { type KeyKind, MAX_KEY_LENGTH, mintKey, validateKey } from './intent/keys.js';
export {
  classifyStatus,
  ietf,
  isReplayed,
  type Outcome,
  type Profile,
  type ProfileName,
  profiles,
  stripe,
} from './profiles/profiles.js';
export { parseSfString, serializeSfString } from './profiles/sf-string.js';
export { DEFAULT_RETRY, parseRetryAfter, type RetryOptions } from './retry/policy.js';
export { parseRecord } from './store/record-schema.js';
export * from './store/store.js';
