import type { ServerAnswer } from '../errors.js';
import { serializeSfString } from './sf-string.js';

/**
 * What a server's answer means for an intent:
 * - `success`: done (2xx).
 * - `in_progress`: the first request with this key is still running (409): wait, same key.
 * - `mismatch`: the key was used with another request: `KeyReusedError`, never retried.
 * - `retryable`: transient (408, 429, 5xx): retry with the same key.
 * - `failed`: a definitive error (other 4xx): `HttpError`, not retried.
 */
export type Outcome = 'success' | 'in_progress' | 'mismatch' | 'retryable' | 'failed';

/**
 * How one server speaks idempotency. A plain object: adding a provider is data.
 * @example
 * const acme: Profile = { ...ietf, name: 'acme', header: 'X-Request-Id', encodeKey: (k) => k };
 */
export interface Profile {
  name: string;
  /** Request header that carries the key. @default 'Idempotency-Key' */
  header: string;
  /** Encodes the key for the header (quoted Structured Field string, or bare). */
  encodeKey(key: string): string;
  /** Response headers whose value `true` marks a replayed (stored) response. */
  replayHeaders: readonly string[];
  /**
   * Recognises a replayed answer, for servers that mark replays otherwise (a body field,
   * another header). Replaces the `replayHeaders` rule when given.
   * @example isReplay: (answer) => answer.headers.get('x-cache') === 'idempotent-hit'
   */
  isReplay?(answer: ServerAnswer): boolean;
  /** Maps a server answer to an outcome. */
  classify(answer: ServerAnswer): Outcome;
  /** How long the server remembers a key (ms). A sent intent older than this is never resent. */
  keyTtl: number;
  /** Methods that carry the key unless the request says otherwise. @default ['POST', 'PATCH'] */
  keyedMethods: readonly string[];
}

export const DAY = 24 * 60 * 60 * 1000;
const TRANSIENT = new Set([408, 429, 500, 502, 503, 504]);

/** Classification shared by the built-in profiles for everything but the mismatch signal. */
export function classifyStatus(status: number): Outcome {
  if (status >= 200 && status < 300) return 'success';
  if (status === 409) return 'in_progress';
  if (status === 422) return 'mismatch';
  if (TRANSIENT.has(status)) return 'retryable';
  return 'failed';
}

/**
 * True when any of `names` is set to `true` (or the Structured Field boolean `?1`): case
 * and spaces ignored, and a repeated header (`true, true`) counts when every value does.
 */
export function hasReplayMarker(headers: Headers, names: readonly string[]): boolean {
  return names.some((name) => {
    const value = headers.get(name);
    return value?.split(',').every((part) => /^(true|\?1)$/i.test(part.trim())) === true;
  });
}

/** The profile's replay rule: its own `isReplay`, else its `replayHeaders`. */
export const isReplay = (profile: Profile, answer: ServerAnswer): boolean =>
  profile.isReplay ? profile.isReplay(answer) === true : hasReplayMarker(answer.headers, profile.replayHeaders);

/**
 * draft-ietf-httpapi-idempotency-key-header: the key as a quoted Structured Field
 * string; 409 in progress; 422 key reused with another payload; replay marked by
 * `Idempotent-Replayed: true`, or by the other spellings servers use (docs/profiles.md).
 */
export const ietf: Profile = {
  name: 'ietf',
  header: 'Idempotency-Key',
  encodeKey: serializeSfString,
  replayHeaders: ['Idempotent-Replayed', 'Idempotency-Replayed', 'X-Idempotent-Replayed'],
  classify: ({ status }) => classifyStatus(status),
  keyTtl: DAY,
  keyedMethods: ['POST', 'PATCH'],
};
