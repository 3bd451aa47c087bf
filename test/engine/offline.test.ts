/**
 * Offline is a state (DESIGN rule 14, issue 18 §1): while the platform says it is offline
 * no attempt leaves and none is spent; the call waits for the network within its deadline
 * and `offlineWait`, and one that never got online and sent nothing ends `NotSentError`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  createClient,
  IdempotentMutationObserver,
  MemoryStore,
  type Network,
  type OncelyEvent,
} from '../../src/index.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A network a test switches, as the browser's `online` event would tell. */
class Switch implements Network {
  online = true;
  readonly #listeners = new Set<() => void>();
  onOnline(listener: () => void) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  set(online: boolean) {
    this.online = online;
    if (online) this.fire();
  }
  /** An `online` event, whatever `navigator.onLine` says (Chromium fires one in a page it unloads). */
  fire() {
    for (const listener of [...this.#listeners]) listener();
  }
}

async function setup(
  reply: (n: number) => Reply = () => ({ status: 201, body: { id: 'p' } }),
  extra: Partial<ClientOptions> = {},
) {
  const server = await wireServer((_req, n) => reply(n));
  servers.push(server);
  const network = new Switch();
  const events: OncelyEvent[] = [];
  const api = createClient({
    baseUrl: server.url,
    store: new MemoryStore(),
    network,
    retry: { baseDelay: 1, maxDelay: 5, deadline: 2_000 },
    onEvent: (e) => events.push(e),
    ...extra,
  });
  const phases = () => events.flatMap((e) => (e.type === 'offline' ? [e.phase] : []));
  return { server, network, api, phases };
}

const tick = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));

describe('offline', () => {
  it('an online event while the platform still says offline sends nothing: the property decides, not the event (issue 32 §4)', async () => {
    const { server, network, api, phases } = await setup();
    const intent = await api.intent('pay');
    network.set(false);
    const call = intent.post('payments', { json: { amount: 1 } });
    await tick();
    network.fire(); // `online` arrives, navigator.onLine is still false
    await tick(100);
    expect(server.requests).toHaveLength(0);
    expect(phases()).toEqual(['paused']);
    network.set(true);
    await expect(call).resolves.toMatchObject({ status: 201, attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });

  it('offline before the click: nothing leaves until the network is back, then one request under the key', async () => {
    const { server, network, api, phases } = await setup();
    network.set(false);
    const intent = await api.intent('order:1');
    const call = intent.post('orders', { json: { order: 1 } });
    await tick();
    expect(server.requests).toHaveLength(0);
    expect(phases()).toEqual(['paused']);
    network.set(true);
    const response = await call;
    expect(response).toMatchObject({ status: 201, attempts: 1 });
    expect(server.requests).toHaveLength(1);
    expect(phases()).toEqual(['paused', 'resumed']);
  });

  it('a call that never got online ends NotSentError, the intent as it was', async () => {
    const { server, network, api } = await setup(undefined, { offlineWait: 100 });
    network.set(false);
    const intent = await api.intent('order:2');
    const error = await intent.post('orders', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NOT_SENT', sent: false });
    expect(server.requests).toHaveLength(0);
    expect(intent.state).toBe('ready');
    expect(intent.record.fingerprint).toBeUndefined();
  });

  it('offline mid-call (the request left, no answer): waits, then retries under the same key once back: one effect', async () => {
    const { server, network, api } = await setup((n) => {
      if (n === 1) {
        network.set(false); // the connection drops with the network
        return 'drop';
      }
      return { status: 201, body: {} };
    });
    const intent = await api.intent('order:3');
    const call = intent.post('orders', { json: {} });
    await tick(60);
    expect(server.requests).toHaveLength(1);
    network.set(true);
    await call;
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(intent.state).toBe('succeeded');
  });

  it('offline mid-call and never back: may have happened (unknown), never not-sent', async () => {
    const { network, api } = await setup(
      () => {
        network.set(false);
        return 'drop';
      },
      { offlineWait: 100 },
    );
    const intent = await api.intent('order:4');
    const error = await intent.post('orders', { json: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true });
    expect(intent.state).toBe('unknown');
  });

  it('the observer says isPaused while the call waits for the network', async () => {
    const { network, api } = await setup();
    network.set(false);
    const observer = new IdempotentMutationObserver({
      client: api,
      intent: 'order:5',
      request: (_v: undefined, { intent, signal }) => intent.post('orders', { json: {}, signal }),
    });
    const off = observer.subscribe(() => {});
    await expect.poll(() => observer.getState().key).toBeDefined();
    const done = observer.mutate();
    await expect.poll(() => observer.getState().isPaused).toBe(true);
    expect(observer.getState().isPending).toBe(true);
    network.set(true);
    await done;
    await expect.poll(() => observer.getState().status).toBe('success');
    expect(observer.getState().isPaused).toBe(false);
    off();
  });
});
