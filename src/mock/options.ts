/** Options of `createContractServer`, documented in place. */
import type { CorsOptions } from './cors.js';
import type { Routes } from './routes.js';

/** How the server reads the `Idempotency-Key` header value. */
export type KeyFormat = 'sf-string' | 'bare' | 'any';

export interface ContractServerOptions {
  /**
   * The handlers that perform the effects. When omitted, a small in-memory resource
   * store answers: `POST /x` creates `{ ...body, id }` (201), `PATCH /x/id` merges
   * (200, or 201 when new), `GET /x/id` reads it (200 or 404).
   * @example
   * routes: {
   *   'POST /payments': async ({ json, key }) => ({ status: 201, body: { id: 'pay_1', ...(json as object) } }),
   * }
   */
  routes?: Routes;

  /**
   * Generates ids for the default routes.
   * @default () => `id_${n}` (1, 2, … per server, restarting on `reset()`)
   */
  generateId?: () => string;

  /**
   * The request header carrying the key.
   * @default 'Idempotency-Key'
   */
  headerName?: string;

  /**
   * How the key is encoded. `'sf-string'`: a quoted Structured Field String, as the
   * IETF draft says (`"abc"`); a bare value is a 400. `'bare'`: the raw header value is
   * the key, Stripe-style (`abc`; `"abc"` is the 5-character key with its quotes).
   * `'any'`: a valid Structured Field String is decoded, anything else is taken bare.
   * @default 'sf-string'
   */
  keyFormat?: KeyFormat;

  /**
   * Longest accepted key (decoded), in characters, 1 to 255 (the server core's bound);
   * longer is a 400.
   * @default 255
   */
  maxKeyLength?: number;

  /**
   * Methods that must carry a key (400 without one). A key on any other method is
   * honoured too.
   * @default ['POST', 'PATCH']
   */
  requireKeyFor?: readonly string[];

  /**
   * The request header whose value scopes keys (an account, a tenant): the same key
   * under two scopes is two keys. A request without the header is in scope `''`. Prefer
   * a stable account id over `Authorization`: with a fresh token per call, a resume would
   * land in another scope and count as a second effect.
   * @default undefined (every request in one scope, `''`)
   * @example scopeHeader: 'X-Account-Id'
   */
  scopeHeader?: string;

  /**
   * Computes the scope instead of `scopeHeader`.
   * @default undefined (every request in one scope, `''`)
   * @example scope: (request) => new URL(request.url).searchParams.get('tenant') ?? ''
   */
  scope?: (request: Request) => string | Promise<string>;

  /**
   * `Retry-After` seconds on a 409 (request still in progress).
   * @default 1
   */
  retryAfter?: number;

  /**
   * How long a completed key is remembered, from its first request. After that the key
   * is forgotten and a retry runs again — as on a real server.
   * @default 86_400_000 (24 h)
   */
  retentionMs?: number;

  /**
   * The clock for retention and `in-progress` holds, in ms. Inject one to test expiry
   * without waiting.
   * @default () => Date.now()
   * @example let t = 0; createContractServer({ now: () => t }); t += 86_400_000;
   */
  now?: () => number;

  /**
   * Which responses are stored and replayed. `'all'`: every answer of a route, errors
   * included (the draft and Stripe). `'2xx'`: only successes; after an error the record
   * is deleted, so a retry runs again.
   * @default 'all'
   */
  storeResponses?: 'all' | '2xx';

  /**
   * CORS. `false`: no CORS headers, and OPTIONS goes to the routes.
   * @default { allowOrigin: '*' }
   */
  cors?: CorsOptions | false;
}

/** Options with defaults applied. */
export interface ResolvedOptions {
  headerName: string;
  keyFormat: KeyFormat;
  maxKeyLength: number;
  requireKeyFor: ReadonlySet<string>;
  scopeHeader: string | undefined;
  scope: ((request: Request) => string | Promise<string>) | undefined;
  retryAfter: number;
  retentionMs: number;
  now: () => number;
  storeResponses: 'all' | '2xx';
  cors: CorsOptions | false;
}

export function resolveOptions(options: ContractServerOptions): ResolvedOptions {
  const keyFormat = options.keyFormat ?? 'sf-string';
  if (!['sf-string', 'bare', 'any'].includes(keyFormat)) {
    throw new TypeError(`keyFormat must be 'sf-string', 'bare' or 'any', got ${JSON.stringify(keyFormat)}.`);
  }
  const retentionMs = options.retentionMs ?? 86_400_000;
  if (!(retentionMs > 0)) throw new TypeError(`retentionMs must be > 0, got ${retentionMs}.`);
  const maxKeyLength = options.maxKeyLength ?? 255;
  if (!Number.isInteger(maxKeyLength) || maxKeyLength < 1 || maxKeyLength > 255)
    throw new TypeError(`maxKeyLength must be 1 to 255, got ${maxKeyLength}.`);
  return {
    headerName: options.headerName ?? 'Idempotency-Key',
    keyFormat,
    maxKeyLength,
    requireKeyFor: new Set((options.requireKeyFor ?? ['POST', 'PATCH']).map((method) => method.toUpperCase())),
    scopeHeader: options.scopeHeader,
    scope: options.scope,
    retryAfter: options.retryAfter ?? 1,
    retentionMs,
    now: options.now ?? (() => Date.now()),
    storeResponses: options.storeResponses ?? 'all',
    cors: options.cors ?? {},
  };
}
