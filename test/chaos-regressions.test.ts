/**
 * Counter-examples the chaos model and the fuzzers found, kept as fixed cases: the shrunk
 * schedule fast-check printed, replayed through the same model and invariants, plus a
 * plain test of the same path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCoordinator } from '../src/coordinator/coordinator.js';
import {
  createClient,
  HttpError,
  IntentMismatchError,
  InvalidKeyError,
  MemoryStore,
  OutcomeUnknownError,
  run,
} from '../src/index.js';
import { createContractServer } from '../src/mock/index.js';
import { stripe } from '../src/profiles/index.js';
import { runAndCheck, type Schedule } from './chaos/model.js';
import { drive, useVirtualTime } from './chaos/virtual-time.js';

let restore: () => void;
beforeAll(() => {
  restore = useVirtualTime();
});
afterAll(() => restore());

describe('regressions found by the chaos model and the fuzzers', () => {
  it('a dropped connection seen through `createContractServer().fetch` (Response.error()) is no answer, not a definitive "HTTP 0"', async () => {
    // seed -1038996693, path 11:1:0:0:0:0:0:0:0:0:0:0:4: the intent ended `failed` with one effect.
    const schedule: Schedule = {
      profile: 'ietf',
      retry: {
        maxAttempts: 1,
        deadline: 100,
        timeout: 50,
        baseDelay: 0,
        maxDelay: 0,
        maxRetryAfter: 0,
        inProgressDelay: 1,
      },
      sharedCoordinator: true,
      intents: 2,
      steps: [{ kind: 'send', client: 0, intent: 0, variant: 0, transport: 'post' }],
      server: [{ kind: 'drop' }],
    };
    await runAndCheck(schedule);
  });

  it('the same, without the model: unknown with the key kept, then one effect on resume', async () => {
    const contract = createContractServer({ now: () => Date.now() });
    const store = new MemoryStore();
    const client = () =>
      createClient({
        baseUrl: 'https://api.test/',
        store,
        fetch: contract.fetch as typeof fetch,
        retry: { maxAttempts: 1 },
      });
    contract.inject({ fault: 'drop-after-commit' });
    const intent = await drive(client().intent('checkout'));
    const error = await drive(intent.post('payments', { json: { amount: 1 } })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(intent.state).toBe('unknown');
    expect(contract.effects(intent.key)).toBe(1);
    const again = await drive((await drive(client().intent('checkout'))).post('payments', { json: { amount: 1 } }));
    expect(again).toMatchObject({ key: intent.key, replayed: true, status: 201 });
    expect(contract.effects(intent.key)).toBe(1);
  });

  it("run(): a replayed 5xx thrown by the transport is the server's final answer, not retried", async () => {
    // seed -1552240401, path 300:2:0:0:0:0:0:0:1:3: two tabs; the second got the stored 500
    // replayed, retried it as transient, and the intent stayed `unknown` through every resume.
    const schedule: Schedule = {
      profile: 'ietf',
      retry: {
        maxAttempts: 1,
        deadline: 100,
        timeout: 50,
        baseDelay: 0,
        maxDelay: 0,
        maxRetryAfter: 0,
        inProgressDelay: 1,
      },
      sharedCoordinator: true,
      intents: 3,
      steps: [{ kind: 'dup', clients: [0, 1], intent: 0, variant: 0, variantB: 0, transport: 'run' }],
      server: [{ kind: 'stored-error', status: 500 }],
    };
    await runAndCheck(schedule);
  });

  it('the same, without the model: one attempt, an HttpError with the transport error as cause, the intent failed', async () => {
    const client = createClient({ baseUrl: 'https://api.test/', store: new MemoryStore(), retry: { maxAttempts: 5 } });
    const intent = await drive(client.intent('payout'));
    let calls = 0;
    const stored = Object.assign(new Error('HTTP 500'), {
      statusCode: 500,
      headers: { 'idempotent-replayed': 'true' },
    });
    const error = await drive(
      run(intent, async () => {
        calls++;
        throw stored;
      }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 500, replayed: true, cause: stored });
    expect(calls).toBe(1);
    expect(intent.state).toBe('failed');
  });

  it('two clients without a shared lock send one intent with different bodies at once: one is a local mismatch', async () => {
    // seed 42, path 84:3:0:1:1:1:1:2:2:4: both read `ready`, both sent under the one key; the
    // server's 422 for the second settled `failed` over the first's `succeeded`, one effect.
    const schedule: Schedule = {
      profile: 'ietf',
      retry: {
        maxAttempts: 2,
        deadline: 100,
        timeout: 50,
        baseDelay: 0,
        maxDelay: 0,
        maxRetryAfter: 0,
        inProgressDelay: 1,
      },
      sharedCoordinator: false,
      intents: 3,
      steps: [{ kind: 'dup', clients: [0, 1], intent: 0, variant: 0, variantB: 1, transport: 'run' }],
      server: [],
    };
    await runAndCheck(schedule);
    await runAndCheck({ ...schedule, steps: [{ ...schedule.steps[0]!, transport: 'post' }] as Schedule['steps'] });
  });

  it('the same, without the model: one request on the wire, the intent succeeded', async () => {
    const contract = createContractServer({ now: () => Date.now() });
    const store = new MemoryStore();
    // Two processes over one store: each its own coordinator (no cross-process lock).
    const client = () =>
      createClient({
        baseUrl: 'https://api.test/',
        store,
        coordinator: new LocalCoordinator(),
        fetch: contract.fetch as typeof fetch,
      });
    const [a, b] = await drive(Promise.all([client().intent('checkout'), client().intent('checkout')]));
    const results = await drive(
      Promise.allSettled([a.post('payments', { json: { amount: 1 } }), b.post('payments', { json: { amount: 2 } })]),
    );
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect((rejected[0] as PromiseRejectedResult).reason).toBeInstanceOf(IntentMismatchError);
    expect(contract.attempts(a.key)).toBe(1);
    expect(contract.effects(a.key)).toBe(1);
    expect((await drive(store.get('default', 'checkout')))?.state).toBe('succeeded');
  });

  it('a caller key with surrounding spaces is refused: HTTP trims header values, so a bare key would reach the server as another key', async () => {
    // Found by fuzz-keys: with the stripe profile, intent b (key "abc ") reached the
    // server as "abc", got intent a's stored response replayed, and was marked
    // `succeeded` with no effect of its own. run() hands keys to bare transports too.
    const contract = createContractServer({ keyFormat: 'bare', now: () => Date.now() });
    const client = createClient({
      baseUrl: 'https://api.test/',
      store: new MemoryStore(),
      profile: stripe,
      fetch: contract.fetch as typeof fetch,
    });
    const a = await drive(client.intent('a', { key: 'abc' }));
    await drive(a.post('charges', { json: { amount: 1 } }));
    for (const key of ['abc ', ' abc', ' abc ']) {
      const formed = await drive(client.intent(`b${key.length}${key.indexOf('a')}`, { key }).catch((e: unknown) => e));
      expect(formed, JSON.stringify(key)).toBeInstanceOf(InvalidKeyError);
    }
    expect(contract.requests).toHaveLength(1);
    expect(contract.effects()).toBe(1);
  });
});

describe('a definitive failure after an attempt whose outcome was unknown', () => {
  // A call used to end `failed` on its last answer even when an earlier attempt may have
  // taken effect (a 401 from an auth layer in front of the idempotency layer, a transport
  // bug thrown on a retry in run()); an app showing "failed, try again" would then form a
  // new intent: a second effect. Now it settles `unknown` with the key kept.
  it('post(): drop after commit, then a 401 in front of the idempotency layer: not `failed`', async () => {
    const contract = createContractServer({ now: () => Date.now() });
    contract.inject({ fault: 'drop-after-commit' }, { fault: 'status', status: 401 });
    const client = createClient({
      baseUrl: 'https://api.test/',
      store: new MemoryStore(),
      fetch: contract.fetch as typeof fetch,
      retry: { baseDelay: 1 },
    });
    const intent = await drive(client.intent('checkout'));
    await drive(intent.post('payments', { json: { amount: 1 } }).catch(() => undefined));
    expect(contract.effects(intent.key)).toBe(1);
    expect(intent.state).not.toBe('failed');
  });

  it('run(): a network error, then a transport bug on the retry: not `failed`', async () => {
    const client = createClient({ baseUrl: 'https://api.test/', store: new MemoryStore(), retry: { maxAttempts: 3 } });
    const intent = await drive(client.intent('payout'));
    await drive(
      run(intent, async ({ attempt }) => {
        if (attempt === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
        throw new Error('cannot read properties of undefined');
      }).catch(() => undefined),
    );
    expect(intent.state).not.toBe('failed');
  });
});
