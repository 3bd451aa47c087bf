/**
 * Issue 30 §2: a call ends once its outcome write is queued, not once it has landed. The
 * key and the in_flight record are durable before the first byte; the outcome write goes on
 * after the caller has its answer. Reads through the clients of the store see it (they wait
 * for it); its failure is an `unsaved` event and the intent stays pending, resumable under
 * its key. Against a real HTTP server with its own effect ledger.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  createClient,
  type IntentRecord,
  MemoryStore,
  type RecordUpdater,
} from '../../src/index.js';
import { type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/**
 * A payments endpoint: one effect per key, replays stored answers. `status` answers the
 * first request: a 4xx is stored (the server's word), a 5xx neither stored nor an effect.
 */
async function payments(status = 201) {
  const effects = new Map<string, number>();
  const stored = new Map<string, { status: number; body: unknown }>();
  const server = await wireServer(async (req, n) => {
    const key = String(req.headers['idempotency-key'] ?? '');
    const done = stored.get(key);
    if (done) return { ...done, headers: { 'idempotent-replayed': 'true' } };
    if (n === 1 && status >= 500) return { status, body: {} };
    effects.set(key, (effects.get(key) ?? 0) + 1);
    const reply = { status: n === 1 ? status : 201, body: { id: `pay_${effects.size}` } };
    stored.set(key, reply);
    return reply;
  });
  servers.push(server);
  return { server, effects: (key: string) => effects.get(`"${key}"`) ?? 0 };
}

/** The outcome write: one that takes an in_flight record out of flight. */
const settling = (next: IntentRecord | undefined, current: IntentRecord | undefined) =>
  current?.state === 'in_flight' && next !== undefined && next.state !== 'in_flight';

/** A memory store whose outcome writes wait for `release()`, then land (or fail, with `fail`). */
class GatedStore extends MemoryStore {
  gate: Promise<void> | undefined;
  release = () => {};
  fail = false;
  outcomeWrites = 0;
  hold() {
    this.gate = new Promise<void>((resolve) => {
      this.release = resolve;
    });
  }
  override async update(scope: string, name: string, updater: RecordUpdater) {
    const current = await super.get(scope, name);
    if (settling(updater(current && structuredClone(current)), current)) {
      this.outcomeWrites++;
      await this.gate;
      if (this.fail) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }
    return super.update(scope, name, updater);
  }
}

const client = (server: WireServer, store: GatedStore, extra: Partial<ClientOptions> = {}) =>
  createClient({ baseUrl: server.url, store, retry: { baseDelay: 1, maxDelay: 5, deadline: 2_000 }, ...extra });

const settled = <T>(p: Promise<T>) => {
  const state = { done: false };
  void p.then(
    () => (state.done = true),
    () => (state.done = true),
  );
  return state;
};
const turns = () => new Promise((resolve) => setTimeout(resolve, 30));

describe('the outcome write resolves the call once it is queued', () => {
  it('post() resolves while its outcome write is held; the intent shows the outcome at once; every read waits for the write', async () => {
    const { server, effects } = await payments();
    const store = new GatedStore();
    store.hold();
    const api = client(server, store);
    const intent = await api.intent('pay:1');
    const res = await intent.post('payments', { json: { amount: 1 } });
    expect(res).toMatchObject({ status: 201, replayed: false });
    expect(store.outcomeWrites).toBe(1);
    expect(intent.state).toBe('succeeded');
    // Not landed: the store still has it in flight under its key.
    expect(await MemoryStore.prototype.get.call(store, 'default', 'pay:1')).toMatchObject({
      key: intent.key,
      state: 'in_flight',
    });
    // Reads of the client wait for it: pending(), refresh(), and another client of the same store.
    const pending = settled(api.pending());
    const refreshed = settled(intent.refresh());
    const other = createClient({ baseUrl: server.url, store });
    const formed = other.intent('pay:1');
    const seen = settled(formed);
    await turns();
    expect([pending.done, refreshed.done, seen.done]).toEqual([false, false, false]);
    store.release();
    expect(await api.pending()).toEqual([]);
    expect((await intent.refresh()).state).toBe('succeeded');
    expect((await formed).state).toBe('succeeded');
    expect(effects(intent.key)).toBe(1);
    await other.close();
    await api.close();
  });

  it('client.send() resolves before its outcome write lands; close() waits for it', async () => {
    const { server } = await payments();
    const store = new GatedStore();
    store.hold();
    const api = client(server, store);
    const res = await api.send('pay:2', 'POST', 'payments', { json: { amount: 2 } });
    expect(res.status).toBe(201);
    const closing = settled(api.close());
    await turns();
    expect(closing.done).toBe(false);
    store.release();
    await turns();
    expect(closing.done).toBe(true);
    expect(await store.get('default', 'pay:2')).toMatchObject({ key: res.key, state: 'succeeded' });
  });

  it('the next call of the intent waits for the queued write and sees its outcome (a success sent again stays succeeded)', async () => {
    const { server, effects } = await payments();
    const store = new GatedStore();
    store.hold();
    const api = client(server, store);
    const intent = await api.intent('pay:3');
    await intent.post('payments', { json: { amount: 3 } });
    const again = intent.post('payments', { json: { amount: 3 } });
    const second = settled(again);
    await turns();
    expect(second.done).toBe(false);
    expect(store.outcomeWrites).toBe(1); // the second call's in_flight write waits too
    store.release();
    await expect(again).resolves.toMatchObject({ replayed: true });
    expect((await intent.refresh()).state).toBe('succeeded');
    expect(effects(intent.key)).toBe(1);
  });

  for (const [status, code, state] of [
    [201, undefined, 'succeeded'],
    [402, 'HTTP_ERROR', 'failed'],
    [503, 'OUTCOME_UNKNOWN', 'unknown'],
  ] as const)
    it(`a ${status} whose outcome write fails later: the caller gets the table's answer (${code ?? 'the response'}), then an unsaved event; the intent stays in flight; a resume gets the replay, one effect`, async () => {
      const { server, effects } = await payments(status);
      const store = new GatedStore();
      store.hold();
      store.fail = true;
      const api = client(server, store, { retry: { baseDelay: 1, maxDelay: 5, maxAttempts: 1, deadline: 2_000 } });
      const unsaved: unknown[] = [];
      api.on('unsaved', (event) => unsaved.push(event.error));
      const intent = await api.intent('pay:4');
      const outcome = await intent.post('payments', { json: { amount: 4 } }).then(
        (value) => ({ value, error: undefined }),
        (error: unknown) => ({ value: undefined, error }),
      );
      if (code) expect(outcome.error).toMatchObject({ code });
      else expect(outcome.value).toMatchObject({ status: 201 });
      expect(intent.state).toBe(state);
      expect(unsaved).toEqual([]);
      store.release();
      await intent.refresh();
      expect(unsaved).toMatchObject([{ code: 'STORE_FAILED', sent: true, intent: 'pay:4', cause: { code: 'ENOSPC' } }]);
      expect((unsaved[0] as Error).message).toMatch(/stays in flight/);
      expect(intent.state).toBe('in_flight');
      expect(await api.pending()).toMatchObject([{ name: 'pay:4', key: intent.key, state: 'in_flight' }]);
      // The write works again: the same request under the same name resumes under the key.
      store.fail = false;
      const resumed = await (await client(server, store).intent('pay:4'))
        .post('payments', { json: { amount: 4 } })
        .then(
          (v) => v,
          (e: unknown) => e,
        );
      // A stored answer is replayed; after a 503 (no effect) the resend is the first effect.
      expect(resumed).toMatchObject({ replayed: status !== 503, key: intent.key });
      expect(effects(intent.key)).toBe(1);
      expect((await store.get('default', 'pay:4'))?.state).toBe(state === 'unknown' ? 'succeeded' : state);
    });
});
