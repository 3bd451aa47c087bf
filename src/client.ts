import type { KyInstance, Options as KyOptions } from 'ky';
import { coordinatorFor, type IntentCoordinator, LocalCoordinator } from './coordinator/coordinator.js';
import { IntentPendingError, InvalidArgumentError, InvalidKeyError } from './errors.js';
import { type ClientStats, EventHub, type EventOf, type OncelyEvent, type OncelyEventType } from './events.js';
import { type Network, platformNetwork } from './http/network.js';
import type { StandardSchemaV1 } from './http/schema.js';
import { isFormedElsewhere } from './intent/call.js';
import type { ClientContext } from './intent/context.js';
import { type DataOf, Intent, type IntentResponse, type RequestOptions } from './intent/intent.js';
import { type KeyDeriver, type KeyKind, mintKey, validateKey } from './intent/keys.js';
import { normalizeBase } from './intent/request-spec.js';
import { storeCall } from './intent/store-call.js';
import { newRecord } from './intent/transitions.js';
import { ietf, type Profile } from './profiles/profiles.js';
import { checkMs, MAX_TIMER, type RetryOptions, resolveRetryOptions } from './retry/policy.js';
import { checkedStore } from './store/checked-store.js';
import { MemoryStore } from './store/memory-store.js';
import { queuedWritesFor } from './store/queued-writes.js';
import { intentId, isPending, PENDING_STATES, pastRetention, wellFormed } from './store/record-rules.js';
import type { IntentRecord, IntentState, ObservableStore, Store } from './store/store.js';

export interface ClientOptions {
  /**
   * Base URL that request paths are resolved against.
   * @example 'https://api.example.com/v1/'
   */
  baseUrl: string;
  /**
   * The account or tenant the intents belong to. Intents of one scope are never seen,
   * reused or cleared through another: use the signed-in user's or tenant's id.
   * @default 'default'
   */
  scope?: string;
  /**
   * How the server speaks idempotency: a `Profile` from `oncely/profiles` (`ietf`, the draft
   * standard; `stripe`; `ietfBare`; `profileVariant(…)`) or your own object.
   * @default ietf
   */
  profile?: Profile;
  /**
   * Where keys live. `oncely` picks IndexedDB in browsers and SQLite in Node; the core
   * entry (and edge runtimes) need one passed, e.g. a `PostgresStore`. `new MemoryStore()`
   * loses keys on reload: tests only.
   */
  store?: Store;
  /**
   * Coordinates clients sharing the store: one call in flight per intent. Clients of one
   * process sharing a store instance always coordinate; across processes and machines the
   * lease in the record does.
   * @default Web Locks across tabs in browsers; in-process otherwise
   */
  coordinator?: IntentCoordinator;
  /** The retry budget of each call. */
  retry?: RetryOptions;
  /**
   * Age (ms) past which a sent intent is never resent automatically, because the server
   * may have forgotten its key. Set it to at most the server's retention.
   * @default the profile's keyTtl (24 h for ietf and stripe)
   */
  keyTtl?: number;
  /** How new keys are made: `'v7'`, `'v4'`, or `derivedKeys` (imported from `oncely`). @default 'v7' */
  keys?: KeyKind;
  /** Headers sent with every request (e.g. Authorization). A function is called per call. */
  headers?: HeadersInit | (() => HeadersInit);
  /**
   * The fetch to use. A fetch of yours is code oncely does not own: once it has the
   * request, nothing it throws proves that nothing left (`sent: true`, the outcome unknown).
   * @default globalThis.fetch
   */
  fetch?: typeof globalThis.fetch;
  /**
   * Extra ky options (hooks for logging, credentials…). oncely owns `retry`, `timeout`,
   * `redirect` and `throwHttpErrors`: ky sends exactly one attempt per call of its, so its
   * hooks run once per attempt, retried ones (409, 503…) included.
   */
  ky?: KyOptions;
  /**
   * Longest wait for one store call (ms): a store that does not answer ends the call with
   * a `StoreError` instead of hanging it.
   * @default 10_000
   */
  storeTimeout?: number;
  /**
   * How long an in-flight call's lease on its intent lasts unless renewed (ms). The lease
   * is renewed every third of it while the call runs; a client that died holds the intent
   * at most this long before another process or machine may resume it.
   * @default 15_000
   */
  leaseTtl?: number;
  /**
   * Longest wait (ms) of one call for the network while the platform says it is offline
   * (`navigator.onLine === false`), within the call's deadline. No attempt leaves while
   * offline; a call that never got online and sent nothing ends `NotSentError`.
   * @default the call's deadline
   */
  offlineWait?: number;
  /**
   * How oncely knows the platform is offline. `false` never waits.
   * @default `navigator.onLine` and the `online` event where they exist (browsers); none in Node
   */
  network?: Network | false;
  /**
   * Sends requests whose body is at most 32 KiB of UTF-8 with `keepalive`, so that one
   * already sent reaches the server even if the page closes (the next visit gets the
   * replay). Chromium refuses keepalive requests past 64 KiB of bodies in flight per page:
   * oncely's together take at most 32 KiB, and one that does not fit goes without; an
   * attempt that gets no answer is retried without it.
   * @default true from `oncely` in browsers (`oncely/browser`), false elsewhere
   */
  keepalive?: boolean;
  /** Hears every event (same as `client.on('*', listener)`). */
  onEvent?: (event: OncelyEvent) => void;
  /** Wall clock (ms since epoch) for record times and expiry, for tests. @default Date.now */
  now?: () => number;
  /** Monotonic clock (ms) for deadlines, for tests. @default performance.now */
  monotonic?: () => number;
  /** Source of jitter in [0, 1), for tests. Keys never use it. @default Math.random */
  random?: () => number;
}

export interface IntentOptions {
  /** Use this key instead of minting one: 1–255 printable ASCII characters, no space at either end. */
  key?: string;
  /**
   * Form the intent inside your own transaction, for stores that can join one
   * (PostgresStore: a `pg` client inside `BEGIN`): it commits or rolls back with your rows.
   */
  transaction?: unknown;
}

/** An unresolved intent, as `client.pending()` reports it. No bodies. */
export interface PendingIntent {
  name: string;
  key: string;
  state: IntentState;
  attempts: number;
  createdAt: number;
  /** ms since the key was minted. */
  age: number;
  /** Older than keyTtl: will not be resent automatically (reconcile by hand). */
  expired: boolean;
}

/** Longest intent name accepted. */
export const MAX_INTENT_NAME_LENGTH = 1024;

export interface Client {
  readonly scope: string;
  readonly profile: Profile;
  readonly store: Store;
  /** Counters since creation; replay rate = replays / successes. */
  readonly stats: Readonly<ClientStats>;
  /**
   * Forms an intent: returns its stored key, or mints one and stores it durably before
   * resolving. Call it when the user's intent forms (checkout page load, job enqueue),
   * not per attempt.
   */
  intent(name: string, options?: IntentOptions): Promise<Intent>;
  /**
   * Forms the intent and sends its request in one go, for callers that form and send at
   * once (a worker's job, a server handler): the claim and the `in_flight` write are one
   * store write (one flush, one round trip fewer) with every guarantee of `intent()` then
   * `request()` — the key is durable before the first byte, a second client finds it in
   * flight. An intent formed before is sent under its stored key.
   * @example await api.send(`payout:${id}`, 'POST', 'payouts', { json: payout })
   */
  send<S extends StandardSchemaV1 | undefined = undefined>(
    name: string,
    method: string,
    path: string,
    options?: RequestOptions<S>,
  ): Promise<IntentResponse<DataOf<S>>>;
  /** Intents whose outcome is not known yet (`in_flight`, `unknown`): resume or reconcile them. */
  pending(): Promise<PendingIntent[]>;
  /**
   * Removes every intent of this client's scope (on logout). Refuses with
   * `IntentPendingError`, removing nothing, while an intent's request may have taken effect
   * unanswered (`in_flight`, `unknown`, or sent right now by another client or process):
   * resume or reconcile those first, or pass `{ force: true }` to drop them too.
   */
  clear(options?: { force?: boolean }): Promise<void>;
  /** Forgets this scope's completed and never-sent intents past their retention. Resolves with how many. */
  sweep(): Promise<number>;
  on<T extends OncelyEventType | '*'>(
    type: T,
    listener: (event: T extends OncelyEventType ? EventOf<T> : OncelyEvent) => void,
  ): () => void;
  close(): Promise<void>;
}

const isObservable = (store: Store): store is Store & ObservableStore =>
  typeof (store as Partial<ObservableStore>).subscribe === 'function';

const ms = (value: unknown, name: string, fallback: number): number =>
  value === undefined ? fallback : checkMs(value, name, true);

let warmed = false;

/**
 * One call through a client of nothing (memory store, a fetch that answers at once; none
 * of the app's hooks, headers or fetch): a page's first click then finds the request path
 * (ky, the body's serialisation, the hash, the engine) compiled, instead of compiling it
 * before its request leaves (about 6 ms in Chromium here). Once per page.
 */
function warmUp(): void {
  if (warmed) return;
  warmed = true;
  const answer = () => new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  const client = createClient({
    baseUrl: 'http://warm-up.invalid/',
    store: new MemoryStore(),
    coordinator: new LocalCoordinator(),
    fetch: async () => answer(),
    network: false,
    retry: { maxAttempts: 1 },
  });
  client
    .intent('warm-up')
    .then((intent) => intent.post('warm-up', { json: { warm: [1, 'up'] } }))
    .catch(() => undefined)
    .finally(() => client.close());
}

/**
 * Creates a client. See {@link ClientOptions}. `noStore` is what a missing store is told:
 * the browser and Node entries always pass one, so only the core entry's says what to pass
 * (src/core-client.ts), and a page does not carry that text.
 */
export function createClient(options: ClientOptions, noStore = 'createClient needs a store.'): Client {
  if (typeof options?.baseUrl !== 'string' || !URL.canParse(options.baseUrl))
    throw new InvalidArgumentError(`createClient needs an absolute baseUrl, got ${JSON.stringify(options?.baseUrl)}.`);
  const given = options.store;
  if (!given) throw new InvalidArgumentError(noStore);
  const scope = options.scope ?? 'default';
  if (typeof scope !== 'string' || scope === '' || !wellFormed(scope))
    throw new InvalidArgumentError('scope must be a non-empty string of well-formed Unicode (no lone surrogates).');
  const profile = options.profile ?? ietf;
  if (
    typeof profile?.header !== 'string' ||
    typeof profile.encodeKey !== 'function' ||
    typeof profile.classify !== 'function'
  )
    throw new InvalidArgumentError(
      'profile must be a Profile object (header, encodeKey, classify), e.g. `import { stripe } from "oncely/profiles"`.',
    );
  const hub = new EventHub();
  const coordinator: IntentCoordinator = options.coordinator ?? coordinatorFor(given);
  // What the engine calls: every answer checked before it is acted on (a custom store may lie).
  const store = checkedStore(given, (key) => profile.encodeKey(key));
  const keys = options.keys ?? 'v7';
  if (keys !== 'v7' && keys !== 'v4' && typeof (keys as Partial<KeyDeriver> | null)?.derive !== 'function')
    throw new InvalidArgumentError(
      `keys must be 'v7', 'v4' or derivedKeys (\`import { derivedKeys } from 'oncely'\`), got ${JSON.stringify(keys)}.`,
    );
  const now = options.now ?? Date.now;
  const headers = options.headers;
  // ky is loaded for a client given ky options, from here on, so that its first attempt
  // need not wait for it (in a browser: a chunk of its own); a failed load fails the attempts.
  const kyInstance: Promise<KyInstance> | undefined =
    options.ky && import('ky').then(({ default: ky }) => ky.create(options.ky));
  kyInstance?.catch(() => undefined);
  const ctx: ClientContext = {
    scope,
    store,
    profile,
    hub,
    coordinator,
    retry: resolveRetryOptions(options.retry),
    keyTtl: ms(options.keyTtl, 'keyTtl', profile.keyTtl),
    keys,
    ky: kyInstance && (() => kyInstance),
    headers: typeof headers === 'function' ? headers : headers ? () => headers : undefined,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    ownFetch: options.fetch === undefined,
    baseUrl: normalizeBase(options.baseUrl),
    now,
    monotonic: options.monotonic ?? (() => performance.now()),
    random: options.random ?? Math.random,
    storeTimeout: ms(options.storeTimeout, 'storeTimeout', 10_000),
    leaseTtl: ms(options.leaseTtl, 'leaseTtl', 15_000),
    writes: queuedWritesFor(coordinator),
    inflight: new Map(),
    network: options.network === false ? undefined : (options.network ?? platformNetwork()),
    offlineWait: ms(options.offlineWait, 'offlineWait', MAX_TIMER),
    keepalive: options.keepalive === true,
    warmUp,
  };
  if (options.onEvent) hub.on('*', options.onEvent);
  const unsubscribes = [
    coordinator.subscribe((record: IntentRecord) => {
      if (record.scope === scope) hub.emit({ type: 'state', record, source: 'remote' });
    }),
  ];
  if (isObservable(given)) unsubscribes.push(given.subscribe((event) => hub.emit({ type: 'store', event })));

  let sweptOnce = false;
  /** Checks a name and gives the key to form it with; the first forming also sweeps. */
  const keyFor = (name: string, given: string | undefined) => {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_INTENT_NAME_LENGTH || !wellFormed(name))
      throw new InvalidArgumentError(
        `An intent name must be a non-empty string of well-formed Unicode, at most ${MAX_INTENT_NAME_LENGTH} characters, e.g. \`checkout:\${cartId}\`.`,
        { scope },
      );
    const key = given === undefined ? mintKey(keys, scope, name) : validateKey(given, { intent: name, scope });
    if (!sweptOnce) {
      sweptOnce = true;
      // Housekeeping must never fail a payment: a failing sweep is the store's to report.
      sweep().catch(() => 0);
    }
    return key;
  };
  /**
   * A store call of the client, after the outcome writes queued by ended calls have landed
   * (of the intent, or of every one for a call of the scope): reads see those outcomes.
   */
  const guarded = async <T>(what: string, run: () => Promise<T>, extra: { intent?: string } = {}) => {
    const queued = ctx.writes.landed(extra.intent === undefined ? undefined : intentId(scope, extra.intent));
    if (queued) await queued;
    return storeCall(ctx, what, run, { scope, ...extra });
  };
  const sweep = () => guarded('sweeping', () => store.sweep(scope, now()));
  /** Refuses (`clear()`) while an intent of the scope may have taken effect unanswered. */
  const refusePending = async () => {
    const t = now();
    const records = await guarded('listing intents', () => store.list(scope));
    const names = records.filter((r) => isPending(r, t)).map((r) => r.name);
    if (names.length > 0) throw new IntentPendingError({ scope, names });
  };

  const client: Client = {
    scope,
    profile,
    store: given,
    get stats() {
      return { ...hub.stats };
    },
    async intent(name, intentOptions = {}) {
      const context = { intent: name, scope };
      const key = keyFor(name, intentOptions.key);
      // Strict: once intent() resolves the app may act on the key (show the order, hand it on),
      // so it survives a crash of the store (DESIGN rule 13).
      const claimed = await guarded(
        'forming the intent',
        () =>
          store.claim(newRecord(scope, name, key, now(), ctx.keyTtl), {
            durability: 'strict',
            ...(intentOptions.transaction !== undefined ? { transaction: intentOptions.transaction } : {}),
          }),
        { intent: name },
      );
      const { record } = claimed;
      if (intentOptions.key !== undefined && record.key !== intentOptions.key)
        throw new InvalidKeyError(
          `intent "${name}" already has another key stored; reset() it before using a new key`,
          {
            ...context,
            key: record.key,
          },
        );
      return new Intent(ctx, record, intentOptions.transaction !== undefined);
    },
    async send(name, method, path, options) {
      // Not stored yet: the engine's in_flight write stores it (one write: claim and send).
      const fresh = newRecord(scope, name, keyFor(name, undefined), now(), ctx.keyTtl);
      try {
        return await new Intent(ctx, fresh, false, true).request(method, path, options);
      } catch (error) {
        // Formed before (by anyone): sent under the key stored, as intent() + request() would.
        if (!isFormedElsewhere(error)) throw error;
        return (await client.intent(name)).request(method, path, options);
      }
    },
    async pending() {
      const records = await guarded('listing pending intents', () => store.list(scope, PENDING_STATES));
      const t = now();
      return records.map((r) => ({
        name: r.name,
        key: r.key,
        state: r.state,
        attempts: r.attempts,
        createdAt: r.createdAt,
        age: t - r.createdAt,
        expired: pastRetention(r, t, ctx.keyTtl),
      }));
    },
    async clear(clearOptions = {}) {
      if (clearOptions.force === true) {
        await guarded('clearing the scope', () => store.clear(scope, {}));
        coordinator.clearNotes?.(scope); // notes of sent intents go with them
        return;
      }
      await refusePending();
      // Pending ones are kept by the store too: one sent since the list is kept, and refused.
      await guarded('clearing the scope', () => store.clear(scope, { keepPending: now() }));
      await refusePending();
    },
    sweep,
    on: (type, listener) => hub.on(type, listener),
    async close() {
      for (const unsubscribe of unsubscribes) unsubscribe();
      coordinator.close?.();
      // After the outcome writes queued here; a store that hangs or throws while closing is the
      // store's failure, within storeTimeout.
      await guarded('closing the store', async () => store.close?.());
    },
  };
  return client;
}
