/**
 * The chaos model: a schedule of client steps (sends, duplicate sends from two clients,
 * restarts, aborts, body changes) against a contract server whose behaviour is chosen
 * per request (commit and respond, drop after commit, 5xx before commit, 409 in
 * progress, 429, hang past the timeout, late commit, stored errors), then the
 * invariants that must hold whatever happened. Runs in virtual time (see
 * `virtual-time.ts`), so a schedule with 30 s waits takes a few milliseconds.
 */
import fc from 'fast-check';
import { expect, vi } from 'vitest';
import { LocalCoordinator } from '../../src/coordinator/coordinator.js';
import {
  type Client,
  createClient,
  type Intent,
  type IntentCoordinator,
  type IntentRecord,
  MemoryStore,
  OncelyError,
  type OncelyEvent,
  type RetryOptions,
  run,
} from '../../src/index.js';
import { canonicalJson } from '../../src/intent/canonical-json.js';
import { fingerprint } from '../../src/intent/fingerprint.js';
import { type ContractServer, createContractServer, type FaultSpec } from '../../src/mock/index.js';
import { profiles } from '../../src/profiles/index.js';
import { ModelOrigin, ModelTab } from './model-tabs.js';
import { drain, drive } from './virtual-time.js';

export const BASE = 'https://api.test/';
export const PATH = 'payments';
export const SCOPE = 'u1';

// ---------------------------------------------------------------- the schedule

/** What the server does with one request (in arrival order; `respond` once the list runs out). */
export type Behaviour =
  | { kind: 'respond' }
  | { kind: 'drop' }
  | { kind: 'fail'; status: number; retryAfter?: number }
  | { kind: 'in-progress'; ms: number; retryAfter: number }
  | { kind: 'throttle'; status: number; header?: string; value?: RetryAfterValue }
  | { kind: 'hang' }
  | { kind: 'delay'; ms: number; when: 'before-commit' | 'after-commit' }
  | { kind: 'stored-error'; status: number };

/** A Retry-After value, some of them relative to the server's clock when it answers. */
export type RetryAfterValue =
  | { text: string }
  | { seconds: number }
  | { dateOffsetMs: number }
  | { ms: number | string }
  | { several: string[] };

export type Step =
  | { kind: 'send'; client: number; intent: number; variant: number; transport: Transport; abortAfter?: number }
  | { kind: 'dup'; clients: [number, number]; intent: number; variant: number; variantB: number; transport: Transport }
  | { kind: 'restart'; client: number }
  | { kind: 'wait'; ms: number };

export type Transport = 'post' | 'run';

export interface Schedule {
  profile: 'ietf' | 'stripe';
  retry: Required<RetryOptions>;
  /** All clients share one coordinator (tabs with Web Locks) or each has its own (processes). */
  sharedCoordinator: boolean;
  /**
   * With a shared coordinator: each client is a tab that keeps its intents' locks and
   * reuses one `Intent` per name, as the hook does (the engine's kept-lock path).
   */
  held?: boolean;
  intents: number;
  steps: Step[];
  server: Behaviour[];
}

const retryAfterValue: fc.Arbitrary<RetryAfterValue> = fc.oneof(
  fc.record({ seconds: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom(30, 3600, 86_400, 1e9)) }),
  fc.record({ dateOffsetMs: fc.oneof(fc.integer({ min: -86_400_000, max: 86_400_000 }), fc.constant(1e13)) }),
  fc.record({ ms: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constantFrom('-5', '1.5', 'NaN', '1e12', '')) }),
  fc.record({ text: fc.constantFrom('soon', '-1', '1e12', 'NaN', '', ' 3 ', '5, 7', 'Infinity', '0x10', '\u00b2') }),
  fc.record({ several: fc.array(fc.constantFrom('1', '2', 'soon', '0'), { minLength: 2, maxLength: 3 }) }),
);

export const behaviourArb: fc.Arbitrary<Behaviour> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: 'respond' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'drop' as const }) },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('fail' as const),
        status: fc.constantFrom(500, 502, 503, 504),
        retryAfter: fc.constantFrom(0, 1, 2, 30, 3600),
      },
      { requiredKeys: ['kind', 'status'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('in-progress' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.constant(3_600_000)),
      retryAfter: fc.constantFrom(0, 1, 2, 5, 120, 86_400),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        kind: fc.constant('throttle' as const),
        status: fc.constantFrom(429, 503, 408),
        header: fc.constantFrom('Retry-After', 'retry-after', 'RETRY-AFTER', 'retry-after-ms'),
        value: retryAfterValue,
      },
      { requiredKeys: ['kind', 'status'] },
    ),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'hang' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('delay' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 30_000 })),
      when: fc.constantFrom('before-commit' as const, 'after-commit' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('stored-error' as const),
      status: fc.constantFrom(400, 402, 409, 422, 500),
    }),
  },
);

export const retryArb: fc.Arbitrary<Required<RetryOptions>> = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 6 }),
  deadline: fc.constantFrom(100, 2_000, 15_000, 60_000),
  timeout: fc.constantFrom(50, 1_000, 10_000),
  baseDelay: fc.constantFrom(0, 1, 300),
  maxDelay: fc.constantFrom(0, 5, 10_000),
  maxRetryAfter: fc.constantFrom(0, 5, 1_000, 30_000),
  inProgressDelay: fc.constantFrom(0, 5, 1_000),
});

const stepArb = (intents: number, transports: readonly Transport[]): fc.Arbitrary<Step> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record(
        {
          kind: fc.constant('send' as const),
          client: fc.integer({ min: 0, max: 1 }),
          intent: fc.integer({ min: 0, max: intents - 1 }),
          variant: fc.constantFrom(0, 0, 0, 1),
          transport: fc.constantFrom(...transports),
          abortAfter: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 60_000 })),
        },
        { requiredKeys: ['kind', 'client', 'intent', 'variant', 'transport'] },
      ),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('dup' as const),
        clients: fc.constantFrom<[number, number]>([0, 1], [0, 1], [0, 0]),
        intent: fc.integer({ min: 0, max: intents - 1 }),
        variant: fc.constantFrom(0, 0, 0, 1),
        variantB: fc.constantFrom(0, 0, 0, 1),
        transport: fc.constantFrom(...transports),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('restart' as const), client: fc.integer({ min: 0, max: 1 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 10_000 }) }),
    },
  );

export interface ScheduleOptions {
  transports?: readonly Transport[];
  profiles?: readonly ('ietf' | 'stripe')[];
  sharedCoordinator?: readonly boolean[];
}

export function scheduleArb(options: ScheduleOptions = {}): fc.Arbitrary<Schedule> {
  const transports = options.transports ?? ['post', 'post', 'post', 'run'];
  return fc.integer({ min: 1, max: 3 }).chain((intents) =>
    fc.record({
      profile: fc.constantFrom(...(options.profiles ?? (['ietf', 'ietf', 'stripe'] as const))),
      retry: retryArb,
      sharedCoordinator: fc.constantFrom(...(options.sharedCoordinator ?? [true, false])),
      held: fc.boolean(),
      intents: fc.constant(intents),
      steps: fc.array(stepArb(intents, transports), { minLength: 1, maxLength: 8 }),
      server: fc.array(behaviourArb, { maxLength: 24 }),
    }),
  );
}

// ---------------------------------------------------------------- the world

export const intentName = (i: number) => `pay:${i}`;
/** The request body of an intent: derived from its name, so a resume can re-issue it. */
export const bodyOf = (name: string, variant: number) => ({ intent: name, amount: 100 + variant, currency: 'eur' });

/** Thrown by the `run()` transport of the model, so the checks can tell it from a library error. */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly headers?: Headers,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = status === undefined ? 'TransportError' : 'HttpStatusError';
  }
}
class TransportTimeout extends Error {
  override name = 'TimeoutError';
}

/** One call of the schedule, as the checks see it. */
export interface CallLog {
  step: number;
  client: number;
  name: string;
  variant: number;
  transport: Transport;
  key: string;
  start: number;
  end: number;
  /** Times of this call's attempts (`attempt` events of its client and intent, during the call). */
  attempts: number[];
  retryDelays: number[];
  ok: boolean;
  replayed?: boolean;
  error?: unknown;
  aborted: boolean;
  /** Another call could hold the intent's lock while this one waited. */
  mayWait: boolean;
  /** The budget of the client that made the call. */
  retry: Required<RetryOptions>;
}

export interface WireLog {
  at: number;
  name: string | undefined;
  key: string | undefined;
  behaviour: Behaviour['kind'];
}

export interface World {
  schedule: Schedule;
  contract: ContractServer;
  store: MemoryStore;
  calls: CallLog[];
  wire: WireLog[];
  /** Every key seen for an intent name: from `intent()`, the store, the wire. */
  keys: Map<string, Set<string>>;
  trace: string[];
  clientsMade: number;
}

const toHeaderValue = (value: RetryAfterValue, now: number): string => {
  if ('text' in value) return value.text;
  if ('seconds' in value) return String(value.seconds);
  if ('dateOffsetMs' in value) {
    const date = new Date(now + value.dateOffsetMs);
    return Number.isNaN(date.getTime()) ? 'Sat, 13 Sep 275760 00:00:00 GMT' : date.toUTCString();
  }
  if ('ms' in value) return String(value.ms);
  return value.several.join(', ');
};

function faultFor(behaviour: Behaviour, now: number): FaultSpec | undefined {
  switch (behaviour.kind) {
    case 'respond':
      return undefined;
    case 'drop':
      return { fault: 'drop-after-commit' };
    case 'fail':
      return { fault: 'fail-before-commit', status: behaviour.status, retryAfter: behaviour.retryAfter };
    case 'in-progress':
      return { fault: 'in-progress', ms: behaviour.ms, retryAfter: behaviour.retryAfter };
    case 'throttle':
      return {
        fault: 'status',
        status: behaviour.status,
        headers:
          behaviour.header && behaviour.value
            ? { [behaviour.header]: toHeaderValue(behaviour.value, now) }
            : ({} as Record<string, string>),
      };
    case 'hang':
      return { fault: 'hang' };
    case 'delay':
      return { fault: 'delay', ms: behaviour.ms, when: behaviour.when };
    case 'stored-error':
      return {
        fault: 'status',
        status: behaviour.status,
        store: true,
        headers: { 'content-type': 'application/problem+json' },
        body: { type: 'about:blank', title: 'stored error', status: behaviour.status },
      };
  }
}

const noteKey = (world: World, name: string, key: string) => {
  const set = world.keys.get(name) ?? new Set<string>();
  world.keys.set(name, set);
  set.add(key);
};

/**
 * The server as the clients see it: the contract server, with the schedule's next
 * behaviour injected in front of each request. A drop (`Response.error()`) is passed
 * through as it is, as `createContractServer().fetch` gives it.
 */
function serverFetch(world: World, healthy: () => boolean): typeof globalThis.fetch {
  let next = 0;
  return (input, init) => {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    const behaviour: Behaviour = healthy()
      ? { kind: 'respond' }
      : (world.schedule.server[next++] ?? { kind: 'respond' });
    const fault = faultFor(behaviour, Date.now());
    const entry: WireLog = { at: Date.now(), name: undefined, key: undefined, behaviour: behaviour.kind };
    world.wire.push(entry);
    // Injected and taken in the same synchronous step: no other request can take it.
    if (fault) world.contract.inject(fault);
    const copy = request.clone();
    const answer = world.contract.fetch(request);
    entry.key = world.contract.requests.at(-1)?.key;
    void copy.text().then((text) => {
      try {
        entry.name = (JSON.parse(text) as { intent?: string }).intent;
      } catch {
        entry.name = undefined;
      }
      if (entry.name !== undefined && entry.key !== undefined) noteKey(world, entry.name, entry.key);
    });
    return answer.then((response) => {
      world.trace.push(`${entry.at}:${behaviour.kind}:${response.type === 'error' ? 'error' : response.status}`);
      return response;
    });
  };
}

/** The `run()` transport: one POST with the key, its own per-attempt timeout, HTTP errors thrown with their status. */
function runTransport(fetchImpl: typeof globalThis.fetch, world: World, name: string, variant: number) {
  const profile = profiles[world.schedule.profile];
  return async ({ key, signal }: { key: string; signal: AbortSignal | undefined }) => {
    const timer = new AbortController();
    const timeout = setTimeout(
      () => timer.abort(new TransportTimeout('attempt timed out')),
      world.schedule.retry.timeout,
    );
    const combined = signal ? AbortSignal.any([signal, timer.signal]) : timer.signal;
    try {
      const request = new Request(new URL(PATH, BASE), {
        method: 'POST',
        headers: { [profile.header]: profile.encodeKey(key), 'content-type': 'application/json' },
        body: canonicalJson(bodyOf(name, variant)),
        signal: combined,
      });
      const gaveUp = new Promise<never>((_, reject) => {
        if (combined.aborted) reject(combined.reason);
        combined.addEventListener('abort', () => reject(combined.reason), { once: true });
      });
      gaveUp.catch(() => undefined);
      const response = await Promise.race([fetchImpl(request), gaveUp]);
      if (response.type === 'error') throw new TypeError('fetch failed');
      const text = await Promise.race([response.text(), gaveUp]);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      if (!response.ok) throw new TransportError(`HTTP ${response.status}`, response.status, response.headers, body);
      return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', body };
    } finally {
      clearTimeout(timeout);
    }
  };
}

/** Fingerprint of an intent's request, as the client computes it, per transport and body variant. */
async function fingerprintOf(name: string, variant: number, transport: Transport): Promise<string> {
  const body = canonicalJson(bodyOf(name, variant));
  return transport === 'post'
    ? fingerprint({ method: 'POST', path: PATH, body })
    : fingerprint({ method: 'RUN', path: name, body });
}

// ---------------------------------------------------------------- running a schedule

export interface RunResult {
  world: World;
  /** Names resumed after the schedule, and how that went. */
  resumed: { name: string; ok: boolean; error?: unknown }[];
  /** Calls that sent under a kept lock, their `in_flight` write going out with the first attempt. */
  keptLockSends: number;
}

export interface RunOptions {
  /** Sanity check of the checks: a restart loses the store (as a memory-only key would). */
  loseStoreOnRestart?: boolean;
}

/** Runs a schedule (call inside virtual time): its steps, the background work, then a resume of every pending intent. */
export async function runSchedule(schedule: Schedule, options: RunOptions = {}): Promise<RunResult> {
  vi.clearAllTimers();
  vi.setSystemTime(Date.parse('2026-11-30T12:00:00Z'));
  let healthy = false;
  const contract = createContractServer({
    now: () => Date.now(),
    keyFormat: schedule.profile === 'stripe' ? 'bare' : 'sf-string',
    routes: {
      'POST /payments': ({ json }) => ({ status: 201, body: { id: `pay_${(json as { intent?: string })?.intent}` } }),
    },
  });
  const world: World = {
    schedule,
    contract,
    store: new MemoryStore(),
    calls: [],
    wire: [],
    keys: new Map(),
    trace: [],
    clientsMade: 0,
  };
  const fetchImpl = serverFetch(world, () => healthy);
  const shared = new LocalCoordinator();
  const held = schedule.sharedCoordinator && schedule.held === true;
  const origin = new ModelOrigin();
  /** Per client (kept-lock tabs): one Intent per name, kept as the hook keeps it. */
  const formed = new Map<Client, Map<string, Promise<Intent>>>();
  const tabs = new Map<Client, ModelTab>();
  let seed = 0x9e3779b9;
  const random = () => {
    // Deterministic jitter (mulberry32): keys never use it.
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const events = new Map<Client, { at: number; event: OncelyEvent }[]>();
  const budgets = new Map<Client, Required<RetryOptions>>();
  const makeClient = (retry: Required<RetryOptions> = schedule.retry, coordinator?: IntentCoordinator) => {
    world.clientsMade++;
    const log: { at: number; event: OncelyEvent }[] = [];
    const tab = held && !coordinator ? new ModelTab(origin) : undefined;
    const client = createClient({
      baseUrl: BASE,
      scope: SCOPE,
      profile: profiles[schedule.profile],
      store: world.store,
      coordinator: coordinator ?? tab ?? (schedule.sharedCoordinator ? shared : new LocalCoordinator()),
      retry,
      fetch: fetchImpl,
      now: () => Date.now(),
      random,
      onEvent: (event) => log.push({ at: Date.now(), event }),
    });
    events.set(client, log);
    budgets.set(client, retry);
    if (tab) tabs.set(client, tab);
    return client;
  };
  /** The client's Intent for `name`: a new one per call, or, in a kept-lock tab, one kept with its lock. */
  const intentOf = (client: Client, name: string): Promise<Intent> => {
    if (!held) return client.intent(name);
    const mine = formed.get(client) ?? new Map<string, Promise<Intent>>();
    formed.set(client, mine);
    let intent = mine.get(name);
    if (!intent) {
      intent = client.intent(name).then((formedIntent) => {
        formedIntent.hold();
        return formedIntent;
      });
      intent.catch(() => mine.delete(name));
      mine.set(name, intent);
    }
    return intent;
  };
  const clients = [makeClient(), makeClient()];

  const call = async (
    stepIndex: number,
    clientIndex: number,
    name: string,
    variant: number,
    transport: Transport,
    abortAfter: number | undefined,
    mayWait: boolean,
  ): Promise<CallLog> => {
    const client = clients[clientIndex]!;
    const log = events.get(client)!;
    const start = Date.now();
    const from = log.length;
    const intent = await intentOf(client, name);
    noteKey(world, name, intent.key);
    const controller = abortAfter === undefined ? undefined : new AbortController();
    const reason = new Error(`aborted by the schedule at step ${stepIndex}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (controller && abortAfter === 0) controller.abort(reason);
    else if (controller) timer = setTimeout(() => controller.abort(reason), abortAfter);
    const entry: CallLog = {
      step: stepIndex,
      client: clientIndex,
      name,
      variant,
      transport,
      key: intent.key,
      start,
      end: start,
      attempts: [],
      retryDelays: [],
      ok: false,
      aborted: false,
      mayWait,
      retry: budgets.get(client)!,
    };
    try {
      if (transport === 'post') {
        const res = await intent.post(PATH, { json: bodyOf(name, variant), signal: controller?.signal });
        entry.replayed = res.replayed;
        expect(res.key, 'a response carries the intent key').toBe(intent.key);
      } else {
        const res = await run(intent, runTransport(fetchImpl, world, name, variant), {
          request: bodyOf(name, variant),
          signal: controller?.signal,
        });
        entry.replayed = res.replayed;
      }
      entry.ok = true;
    } catch (error) {
      entry.error = error;
      entry.aborted = error === reason;
    } finally {
      clearTimeout(timer);
    }
    entry.end = Date.now();
    for (const { at, event } of log.slice(from)) {
      if (!('intent' in event) || event.intent !== name) continue;
      if (event.type === 'attempt') entry.attempts.push(at);
      if (event.type === 'retry') entry.retryDelays.push(event.delay);
    }
    world.calls.push(entry);
    checkCall(world, entry);
    return entry;
  };

  for (const [index, step] of schedule.steps.entries()) {
    switch (step.kind) {
      case 'send':
        await call(index, step.client, intentName(step.intent), step.variant, step.transport, step.abortAfter, false);
        break;
      case 'dup': {
        const [a, b] = step.clients;
        // Same client twice: joins its single flight. Two clients: two tabs or processes.
        await Promise.all([
          call(index, a, intentName(step.intent), step.variant, step.transport, undefined, true),
          call(index, b, intentName(step.intent), step.variantB, step.transport, undefined, true),
        ]);
        break;
      }
      case 'restart':
        if (options.loseStoreOnRestart) world.store = new MemoryStore();
        // A kept-lock tab that dies frees its locks (its calls still running go on, as in a live tab).
        tabs.get(clients[step.client]!)?.close();
        clients[step.client] = makeClient();
        break;
      case 'wait':
        await new Promise((resolve) => setTimeout(resolve, step.ms));
        break;
    }
  }
  world.trace.push('-- steps done');

  checkWorld(world, 'after the schedule');

  // Resume: a healthy server, a fresh client over the same store, every pending intent re-issued.
  // An hour later (virtual): late commits have landed, injected holds have run out.
  await new Promise((resolve) => setTimeout(resolve, 3_600_001));
  healthy = true;
  clients[2] = makeClient(
    { ...schedule.retry, maxAttempts: 3, deadline: 60_000, timeout: 10_000 },
    held ? new ModelTab(origin) : shared,
  );
  const resumer = clients[2];
  const resumed: RunResult['resumed'] = [];
  for (const pending of await resumer.pending()) {
    noteKey(world, pending.name, pending.key);
    const record = (await world.store.get(SCOPE, pending.name))!;
    const match = await requestOf(record);
    expect(match, `the fingerprint of pending intent ${pending.name} matches a request the model sent`).toBeDefined();
    const { variant, transport } = match!;
    const entry = await call(-1, 2, pending.name, variant, transport, undefined, false);
    resumed.push({ name: pending.name, ok: entry.ok, error: entry.error });
  }
  world.trace.push('-- resumed');
  return { world, resumed, keptLockSends: origin.noted };

  async function requestOf(record: IntentRecord): Promise<{ variant: number; transport: Transport } | undefined> {
    for (const transport of ['post', 'run'] as const)
      for (const variant of [0, 1])
        if ((await fingerprintOf(record.name, variant, transport)) === record.fingerprint)
          return { variant, transport };
    return undefined;
  }
}

// ---------------------------------------------------------------- the invariants

/** The longest wait allowed: a backoff, a server's hint, or a 409's floor (`inProgressDelay` may exceed `maxDelay`). */
/** A 409 without a hint waits between inProgressDelay and twice it, or up to maxDelay when larger. */
const cap = (retry: Required<RetryOptions>) => Math.max(retry.maxDelay, retry.maxRetryAfter, 2 * retry.inProgressDelay);

/** Checks on one finished call. */
export function checkCall(world: World, call: CallLog): void {
  const { retry } = call;
  const where = `step ${call.step} (${call.transport} ${call.name} from client ${call.client})`;
  // Typed errors only (or the caller's own abort reason, or the run() transport's own error).
  if (!call.ok && !call.aborted) {
    const typed =
      call.error instanceof OncelyError || (call.transport === 'run' && call.error instanceof TransportError);
    expect(typed, `${where}: an untyped error: ${String(call.error)}`).toBe(true);
  }
  // No wait past the cap.
  for (const delay of call.retryDelays) {
    expect(Number.isFinite(delay) && delay >= 0, `${where}: retry delay ${delay}`).toBe(true);
    expect(delay, `${where}: a retry waits ${delay} ms, past the cap`).toBeLessThanOrEqual(cap(retry));
  }
  // Attempts within maxAttempts; no attempt starts, and the call ends, within the deadline.
  const own = call.attempts;
  if (!call.mayWait) expect(own.length, `${where}: attempts`).toBeLessThanOrEqual(retry.maxAttempts);
  if (own.length > 0 && !call.mayWait) {
    const budgetStart = own[0]!;
    const slack = call.transport === 'run' ? retry.timeout + retry.maxAttempts : 1;
    for (const at of own)
      expect(at - budgetStart, `${where}: an attempt starts past the deadline`).toBeLessThan(
        retry.deadline + (call.transport === 'run' ? retry.maxAttempts : 0),
      );
    expect(call.end - budgetStart, `${where}: the call took longer than the deadline`).toBeLessThanOrEqual(
      retry.deadline + slack,
    );
  }
  // The waits actually taken: between two attempts, at most one attempt timeout and one capped wait.
  if (!call.mayWait) {
    for (let i = 1; i < own.length; i++) {
      const gap = own[i]! - own[i - 1]!;
      const most = retry.timeout + cap(retry) + (call.transport === 'run' ? 1 : 0);
      expect(gap, `${where}: ${gap} ms between attempts ${i} and ${i + 1}, more than ${most}`).toBeLessThanOrEqual(
        most,
      );
    }
  }
  // A success means the effect happened, once.
  if (call.ok) {
    expect(world.contract.effects(call.key, ''), `${where}: succeeded, effects of its key`).toBe(1);
  }
}

/** Checks between phases: one key per intent, at most one effect per intent. */
export function checkWorld(world: World, when: string): void {
  for (const [name, keys] of world.keys) {
    expect(keys.size, `${when}: intent ${name} got a second key: ${[...keys].join(', ')}`).toBe(1);
    const effects = [...keys].reduce((sum, key) => sum + world.contract.effects(key, ''), 0);
    expect(effects, `${when}: intent ${name} has ${effects} effects`).toBeLessThanOrEqual(1);
  }
}

/** Final checks, after the resume: every intent succeeded with one effect, failed with none, or never sent. */
export async function checkEnd(result: RunResult): Promise<void> {
  const { world } = result;
  const records = await world.store.list(SCOPE);
  for (const [name, keys] of world.keys) {
    expect(keys.size, `intent ${name} got a second key: ${[...keys].join(', ')}`).toBe(1);
  }
  for (const record of records) {
    noteKey(world, record.name, record.key);
    const effects = world.contract.effects(record.key, '');
    const sent = world.contract.attempts(record.key, '');
    const where = `intent ${record.name} (${record.state}, ${effects} effect(s), ${sent} request(s))`;
    expect(effects, `${where}: more than one effect`).toBeLessThanOrEqual(1);
    switch (record.state) {
      case 'succeeded':
        expect(effects, `${where}: succeeded without exactly one effect`).toBe(1);
        break;
      case 'failed':
        expect(effects, `${where}: failed, yet the effect happened`).toBe(0);
        break;
      case 'ready':
        expect(sent, `${where}: still ready, yet its key was sent`).toBe(0);
        break;
      default:
        throw new Error(`${where}: still pending after the resume against a healthy server`);
    }
  }
  for (const { name, ok, error } of result.resumed) {
    const record = records.find((r) => r.name === name)!;
    const effects = world.contract.effects(record.key, '');
    if (ok) expect(effects, `resumed ${name}: one effect`).toBe(1);
    else
      expect(
        effects === 0 && record.state === 'failed',
        `resumed ${name} failed (${String(error)}) with ${effects} effect(s), state ${record.state}`,
      ).toBe(true);
  }
  // Every key on the wire belongs to exactly one intent.
  for (const entry of world.wire) {
    if (entry.key === undefined) continue;
    const owners = [...world.keys].filter(([, keys]) => keys.has(entry.key!)).map(([name]) => name);
    expect(owners.length, `key ${entry.key} on the wire belongs to ${owners.length} intents`).toBe(1);
  }
  // A total bound on effects: at most one per intent name.
  expect(world.contract.effects()).toBeLessThanOrEqual(world.schedule.intents);
}

/** Runs one schedule in virtual time and checks every invariant. */
export async function runAndCheck(schedule: Schedule, options: RunOptions = {}): Promise<RunResult> {
  const result = await drive(runSchedule(schedule, options));
  await drain();
  await drive(checkEnd(result));
  return result;
}
