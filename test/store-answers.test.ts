/**
 * Issue 26, points 3 and 7: the engine believes no answer of a store before checking it.
 * A custom store that acknowledges a write it did not apply, or answers garbage, ends the
 * call with a typed StoreError naming the store method and what was wrong, sends nothing it
 * could not record, and loses nothing that was stored.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClaimResult,
  type Client,
  type ClientOptions,
  createClient,
  type IntentRecord,
  type IntentState,
  MemoryStore,
  type RecordUpdater,
  StoreError,
} from '../src/index.js';
import { stripe } from '../src/profiles/index.js';
import { type WireServer, wireServer } from './helpers/wire-server.js';

const closing: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

const STATES: readonly IntentState[] = ['ready', 'in_flight', 'succeeded', 'failed', 'unknown'];
const FAST = { baseDelay: 1, maxDelay: 5, timeout: 500, deadline: 2_000, maxAttempts: 2 };

async function server(): Promise<WireServer> {
  const s = await wireServer(() => ({ status: 201, body: { id: 'p1' } }));
  closing.push(() => s.close());
  return s;
}

/** A store whose answers a test replaces, method by method (`lie`), keeping the rest true. */
class Liar extends MemoryStore {
  lies: Partial<Record<'claim' | 'get' | 'list' | 'sweep', () => unknown>> = {};
  /** Replaces the answer of update(): gets the true store and the call, answers what it likes. */
  updateLie:
    | ((real: () => Promise<IntentRecord | undefined>, current: IntentRecord | undefined) => unknown)
    | undefined;

  override async claim(fresh: IntentRecord) {
    const real = await super.claim(fresh);
    return (this.lies.claim ? this.lies.claim() : real) as ClaimResult;
  }
  override async get(scope: string, name: string) {
    const real = await super.get(scope, name);
    return (this.lies.get ? this.lies.get() : real) as IntentRecord | undefined;
  }
  override async list(scope: string, states?: readonly IntentState[]) {
    const real = await super.list(scope, states);
    return (this.lies.list ? this.lies.list() : real) as IntentRecord[];
  }
  override async sweep(scope: string, now: number) {
    const real = await super.sweep(scope, now);
    return (this.lies.sweep ? this.lies.sweep() : real) as number;
  }
  override async update(scope: string, name: string, updater: RecordUpdater) {
    const lie = this.updateLie;
    if (!lie) return super.update(scope, name, updater);
    return lie(() => super.update(scope, name, updater), await super.get(scope, name)) as never;
  }
}

function client(store: MemoryStore, url = 'http://127.0.0.1:9/', extra: Partial<ClientOptions> = {}): Client {
  const api = createClient({ baseUrl: url, store, retry: FAST, storeTimeout: 1_000, ...extra });
  closing.push(() => api.close());
  return api;
}

/** The call's error: a StoreError (never a raw TypeError) whose message names `method`. */
async function storeErrorOf(call: Promise<unknown>, method: string) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  expect((error as StoreError).message).toContain(`${method}()`);
  return error as StoreError;
}

describe('issue 26, 3: the in_flight write before the first byte is verified', () => {
  const LIES: Record<string, (real: () => Promise<unknown>, current: IntentRecord | undefined) => unknown> = {
    'resolves without running the updater, answering the record as it was': (_real, current) => current,
    'resolves without running the updater, answering undefined': () => undefined,
    'answers a record of another lease owner': async (real) => {
      const written = (await real()) as IntentRecord;
      return { ...written, lease: { owner: 'someone-else', until: Date.now() + 60_000 } };
    },
    'answers the stale record after writing (state ready)': async (real, current) => {
      await real();
      return current;
    },
    'answers a record of another intent': async (real) => ({ ...((await real()) as IntentRecord), name: 'other' }),
  };
  for (const [lie, answer] of Object.entries(LIES))
    it(`a store whose update() ${lie}: StoreError, sent: false, nothing sent`, async () => {
      const s = await server();
      const store = new Liar();
      const api = client(store, s.url);
      const intent = await api.intent('order:1');
      store.updateLie = (real, current) => (current?.state === 'ready' ? answer(real, current) : real());
      const error = await storeErrorOf(intent.post('pay', { json: { amount: 1 } }), 'update');
      expect(error.sent).toBe(false);
      expect(s.requests).toHaveLength(0);
      expect(intent.state).toBe('ready');
      expect(intent.key).toBe((await store.get('default', 'order:1'))?.key);
      // The store works again: the same intent is sent, once, under its key.
      store.updateLie = undefined;
      await expect(intent.post('pay', { json: { amount: 1 } })).resolves.toMatchObject({ status: 201 });
      expect(s.requests.map((r) => r.headers['idempotency-key'])).toEqual([`"${intent.key}"`]);
    });

  it('client.send() (claim and in_flight in one write) checks it too', async () => {
    const s = await server();
    const store = new Liar();
    store.updateLie = () => undefined;
    const error = await storeErrorOf(client(store, s.url).send('order:2', 'POST', 'pay', { json: {} }), 'update');
    expect(error.sent).toBe(false);
    expect(s.requests).toHaveLength(0);
  });
});

describe('issue 26, 7: every answer of a store is checked', () => {
  const record = (extra: Partial<IntentRecord> = {}): IntentRecord => ({
    v: 1,
    scope: 'default',
    name: 'order:1',
    key: 'k-1',
    state: 'unknown',
    attempts: 1,
    createdAt: Date.now(),
    updatedAt: Date.now(),
    ...extra,
  });
  const GARBAGE_LISTS: Record<string, unknown> = {
    null: null,
    '[null]': [null],
    'a string': 'records',
    'an object': { rows: [] },
    '[a malformed record]': [{ ...record(), state: 'bogus' }],
    '[a record of another scope]': [record({ scope: 'someone-else' })],
    '[a record in a state not asked for]': [record({ state: 'succeeded' })],
  };
  for (const [what, answer] of Object.entries(GARBAGE_LISTS))
    it(`list() answering ${what}: pending() and clear() reject with a StoreError, nothing removed`, async () => {
      const store = new Liar();
      const api = client(store);
      await api.intent('order:1');
      store.lies.list = () => structuredClone(answer);
      if (what !== '[a record in a state not asked for]') await storeErrorOf(api.clear(), 'list');
      await storeErrorOf(api.pending(), 'list');
      expect(await store.get('default', 'order:1')).toBeDefined();
    });

  for (const key of ['k\r\nx-injected: 1', 'k\n', ' k', 'k\u0000', 'k\u00e9'])
    it(`claim() answering a key ${JSON.stringify(key)} that cannot go in a header: StoreError, nothing sent`, async () => {
      const s = await server();
      const store = new Liar();
      store.lies.claim = () => ({ record: record({ key, state: 'ready', attempts: 0 }), created: false });
      for (const profile of [undefined, stripe]) {
        const api = client(store, s.url, profile ? { profile } : {});
        const error = await storeErrorOf(api.intent('order:1'), 'claim');
        expect(error.message).toContain('key');
        expect(error.sent).toBe(false);
        await storeErrorOf(api.send('order:1', 'POST', 'pay', { json: {} }), 'claim');
      }
      expect(s.requests).toHaveLength(0);
    });

  it('claim() answering no boolean `created`, or garbage: StoreError', async () => {
    const store = new Liar();
    const api = client(store);
    for (const answer of ['x', null, { record: record() }, { record: 'x', created: true }]) {
      store.lies.claim = () => answer;
      await storeErrorOf(api.intent('order:1'), 'claim');
    }
  });

  const GARBAGE_RECORDS: Record<string, unknown> = {
    'a string': 'in_flight',
    'a number': 7,
    'an empty object': {},
    'a record with a bad state': { ...record(), state: 'bogus' },
    'a record with no key': { ...record(), key: undefined },
    'a record of another intent': record({ name: 'order:2' }),
  };
  for (const [what, answer] of Object.entries(GARBAGE_RECORDS)) {
    it(`update() resolving with ${what} for the in_flight write: StoreError, sent: false, nothing sent`, async () => {
      const s = await server();
      const store = new Liar();
      const intent = await client(store, s.url).intent('order:1');
      store.updateLie = async (real) => {
        await real();
        return structuredClone(answer);
      };
      const error = await storeErrorOf(intent.post('pay', { json: {} }), 'update');
      expect(error.sent).toBe(false);
      expect(s.requests).toHaveLength(0);
      expect(STATES).toContain(intent.state);
      expect((await store.get('default', 'order:1'))?.key).toBe(intent.key);
    });

    it(`update() resolving with ${what} for the outcome write of a success: the answer, an unsaved StoreError, sent: true; the record kept`, async () => {
      const s = await server();
      const store = new Liar();
      const api = client(store, s.url);
      const unsaved: unknown[] = [];
      api.on('unsaved', (event) => unsaved.push(event.error));
      const intent = await api.intent('order:1');
      store.updateLie = async (real, current) => {
        const stored = await real();
        return current?.state === 'in_flight' ? structuredClone(answer) : stored;
      };
      await intent.post('pay', { json: {} });
      await api.pending(); // the outcome write was queued: a read waits for it
      const error = await storeErrorOf(Promise.reject(unsaved[0]), 'update');
      expect(error.sent).toBe(true);
      expect(s.requests).toHaveLength(1);
      expect(STATES).toContain(intent.state);
      expect(await store.get('default', 'order:1')).toMatchObject({ key: intent.key, state: 'succeeded' });
    });

    it(`get() answering ${what}: refresh() and reset() reject with a StoreError, nothing removed`, async () => {
      const store = new Liar();
      const intent = await client(store).intent('order:1');
      store.lies.get = () => structuredClone(answer);
      await storeErrorOf(intent.refresh(), 'get');
      await storeErrorOf(intent.reset(), 'get');
      expect(await store.list('default')).toHaveLength(1);
    });
  }

  it('sweep() answering something else than a count: StoreError', async () => {
    const store = new Liar();
    const api = client(store);
    for (const answer of [-1, 1.5, '3', null, {}]) {
      store.lies.sweep = () => answer;
      await storeErrorOf(api.sweep(), 'sweep');
    }
  });
});
