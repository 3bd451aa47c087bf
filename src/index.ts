export type { Client, ClientOptions, IntentOptions, PendingIntent } from './client.js';
export { createClient, MAX_INTENT_NAME_LENGTH } from './client.js';
export { type IntentCoordinator, LocalCoordinator } from './coordinator.js';
export * from './errors.js';
export type { ClientStats, EventOf, OncelyEvent, OncelyEventType } from './events.js';
export { canonicalJson, fingerprint } from './fingerprint.js';
export type { DataOf, IntentResponse, RequestOptions, RunContext, RunOptions } from './intent.js';
export { Intent } from './intent.js';
export { type KeyKind, MAX_KEY_LENGTH, mintKey, validateKey } from './keys.js';
export {
  classifyStatus,
  ietf,
  isReplayed,
  type Outcome,
  type Profile,
  type ProfileName,
  profiles,
  stripe,
} from './profiles.js';
export { parseRecord } from './record.js';
export { DEFAULT_RETRY, parseRetryAfter, type RetryOptions } from './retry-policy.js';
export type { InferOutput, StandardSchemaV1 } from './schema.js';
export { parseSfString, serializeSfString } from './sf-string.js';
export * from './store.js';
export type { RunClassifier } from './thrown.js';
