/** Options of `createIdempotency`, documented in place. */
import { InvalidArgumentError } from '../errors.js';
import type { KeyFormat } from '../mock/options.js';
import { ietf, type Profile } from '../profiles/profiles.js';
import type { RequestEvent } from './idempotency.js';
import type { KeyStore } from './store.js';

export interface IdempotencyOptions<Tx> {
  /** Where keys live: `MemoryKeyStore` (tests) or `PostgresKeyStore` (`oncely/postgres`). */
  store: KeyStore<Tx>;
  /**
   * The client profile this server answers: its key header, how the key is encoded (a
   * quoted Structured Field string for `ietf`, bare for `stripe` and `ietfBare`) and its
   * replay marker. Import it from `oncely/profiles`.
   * @default ietf
   */
  profile?: Profile;
  /**
   * Overrides the profile's key encoding: `'sf-string'` (`"abc"`; bare is a 400), `'bare'`
   * (the header value as is), `'any'` (a valid quoted string is decoded, else bare).
   * @default 'sf-string' for a profile that quotes keys, else 'bare'
   */
  keyFormat?: KeyFormat;
  /** Longest accepted key, decoded; longer is a 400. @default 255 */
  maxKeyLength?: number;
  /**
   * The scope of a request's key (the account or tenant): keys of two scopes never meet.
   * Prefer a stable account id over a token that changes per call.
   * @default every request in scope ''
   * @example scope: (request) => request.headers.get('x-account-id') ?? ''
   */
  scope?: (request: Request) => string | Promise<string>;
  /** `Retry-After` seconds on a 409 (the first request is still running). @default 1 */
  retryAfter?: number;
  /**
   * The path the API is mounted at (the path of the client's `baseUrl`): routes and the
   * fingerprint's path are taken relative to it.
   * @default '/'
   * @example basePath: '/api'
   */
  basePath?: string;
  /**
   * Which of the handler's response headers are stored and replayed. `Set-Cookie`, `Date`
   * and hop-by-hop headers are never stored.
   * @default every other header
   * @example storeHeader: (name) => name === 'content-type' || name === 'location'
   */
  storeHeader?: (name: string) => boolean;
  /** Largest request body read, in bytes; larger is a 413. @default 1_048_576 */
  maxBodyBytes?: number;
  /**
   * Hears how each request ended (S7: measure the replay rate, 409s and 422s per
   * operation). Called after the answer is ready; what it throws is ignored.
   * @example onRequest: ({ operation, outcome }) => counter.add(1, { operation, outcome })
   */
  onRequest?: (event: RequestEvent) => void;
}

export interface ResolvedOptions<Tx> {
  store: KeyStore<Tx>;
  profile: Profile;
  header: string;
  keyFormat: KeyFormat;
  maxKeyLength: number;
  scope: (request: Request) => string | Promise<string>;
  retryAfter: number;
  basePath: string;
  storeHeader: (name: string) => boolean;
  maxBodyBytes: number;
  replayHeader: string;
  onRequest: ((event: RequestEvent) => void) | undefined;
}

const NEVER_STORED = new Set([
  'set-cookie',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'upgrade',
]);

export function resolveOptions<Tx>(options: IdempotencyOptions<Tx>): ResolvedOptions<Tx> {
  if (typeof options?.store?.execute !== 'function')
    throw new InvalidArgumentError('createIdempotency needs a `store` (MemoryKeyStore, or PostgresKeyStore).');
  const profile = options.profile ?? ietf;
  const keyFormat = options.keyFormat ?? (profile.encodeKey('k') === '"k"' ? 'sf-string' : 'bare');
  if (!['sf-string', 'bare', 'any'].includes(keyFormat))
    throw new InvalidArgumentError(`keyFormat must be 'sf-string', 'bare' or 'any', got ${JSON.stringify(keyFormat)}.`);
  const retryAfter = options.retryAfter ?? 1;
  if (!Number.isInteger(retryAfter) || retryAfter < 0)
    throw new InvalidArgumentError(`retryAfter must be whole seconds ≥ 0, got ${retryAfter}.`);
  const maxKeyLength = options.maxKeyLength ?? 255;
  if (!Number.isInteger(maxKeyLength) || maxKeyLength < 1 || maxKeyLength > 255)
    throw new InvalidArgumentError(`maxKeyLength must be 1 to 255, got ${maxKeyLength}.`);
  const basePath = `/${(options.basePath ?? '/').replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  const chosen = options.storeHeader ?? (() => true);
  return {
    store: options.store,
    profile,
    header: profile.header,
    keyFormat,
    maxKeyLength,
    scope: options.scope ?? (() => ''),
    retryAfter,
    basePath,
    storeHeader: (name) => !NEVER_STORED.has(name.toLowerCase()) && chosen(name.toLowerCase()),
    maxBodyBytes: options.maxBodyBytes ?? 1_048_576,
    replayHeader: profile.replayHeaders[0] ?? 'Idempotent-Replayed',
    onRequest: options.onRequest,
  };
}
