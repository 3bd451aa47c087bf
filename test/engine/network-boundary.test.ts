/**
 * Issue 26 §5: the `network` option is the app's code, a boundary like any other (DESIGN
 * rule 11): an `online` getter or `onOnline()` that throws, an `onOnline()` that returns no
 * unsubscribe or calls back at once, end every call with a typed error within its deadline,
 * never a raw throw, an uncaught exception from a timer, or a record left `in_flight` with
 * nothing sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ClientOptions, createClient, MemoryStore, type Network } from '../../src/index.js';
import { type Reply, type WireServer, wireServer } from '../helpers/wire-server.js';

const servers: WireServer[] = [];
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => void uncaught.push(error);
process.on('uncaughtException', onUncaught);
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const DEADLINE = 3_000;

async function setup(network: Network, reply: (n: number) => Reply = () => ({ status: 201, body: {} })) {
  const server = await wireServer((_req, n) => reply(n));
  servers.push(server);
  const store = new MemoryStore();
  const options: ClientOptions = {
    baseUrl: server.url,
    store,
    network,
    offlineWait: 200,
    retry: { baseDelay: 1, maxDelay: 5, timeout: 1_000, deadline: DEADLINE, maxAttempts: 3 },
  };
  const api = createClient(options);
  const intent = await api.intent('order:1');
  return { server, store, intent };
}

/** The call's error, or 'hung' past the deadline and a bound. */
async function settle(call: Promise<unknown>) {
  const start = performance.now();
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), DEADLINE + 2_000).unref());
  const error = await Promise.race([
    call.then(
      () => undefined,
      (e: unknown) => e,
    ),
    hung,
  ]);
  return { error, ms: performance.now() - start };
}

const boom = () => {
  throw new Error('network probe bug');
};

describe('the network option, before anything is sent', () => {
  const cases: [string, Network][] = [
    [
      'an online getter that throws',
      {
        get online(): boolean {
          return boom();
        },
        onOnline: () => () => {},
      },
    ],
    ['an onOnline() that throws', { online: false, onOnline: boom }],
  ];
  for (const [what, network] of cases)
    it(`${what}: NotSentError with the throw as cause, the record as it was, nothing sent`, async () => {
      const { server, store, intent } = await setup(network);
      const { error } = await settle(intent.post('pay', { json: { amount: 1 } }));
      expect(error).toMatchObject({ code: 'NOT_SENT', sent: false, cause: { message: 'network probe bug' } });
      const record = await store.get('default', 'order:1');
      expect(record).toMatchObject({ state: 'ready', attempts: 0 });
      expect(record?.fingerprint).toBeUndefined();
      expect(server.requests).toHaveLength(0);
    });

  it('an onOnline() that returns no unsubscribe and never calls back: NotSentError at offlineWait, no uncaught throw', async () => {
    uncaught.length = 0;
    const network = { online: false, onOnline: () => undefined } as unknown as Network;
    const { server, store, intent } = await setup(network);
    const { error, ms } = await settle(intent.post('pay', { json: {} }));
    expect(error).toMatchObject({ code: 'NOT_SENT', sent: false });
    expect(ms).toBeLessThan(DEADLINE);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(uncaught).toEqual([]);
    expect(await store.get('default', 'order:1')).toMatchObject({ state: 'ready' });
    expect(server.requests).toHaveLength(0);
  });

  it('an onOnline() that calls back at once and returns nothing: the call goes on and sends once', async () => {
    // Back online (the property decides, issue 32 §4) by the time it calls back.
    const network = {
      online: false,
      onOnline: (listener: () => void) => {
        network.online = true;
        listener();
      },
    } as unknown as Network & { online: boolean };
    const { server, intent } = await setup(network);
    expect(await intent.post('pay', { json: {} })).toMatchObject({ status: 201 });
    expect(server.requests).toHaveLength(1);
  });

  it('an unsubscribe that throws, and a listener called twice: the call goes on and sends once', async () => {
    const network: { online: boolean } & Network = {
      online: false,
      onOnline: (listener) => {
        setTimeout(() => {
          network.online = true;
          listener();
          listener();
        }, 20);
        return boom;
      },
    };
    const { server, intent } = await setup(network);
    expect(await intent.post('pay', { json: {} })).toMatchObject({ status: 201 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('the network option, after an attempt went out', () => {
  it('an online getter that throws before the second attempt: unknown, sent, the key and fingerprint kept', async () => {
    let reads = 0;
    const network: Network = {
      get online() {
        if (++reads > 1) boom();
        return true;
      },
      onOnline: () => () => {},
    };
    const { store, intent } = await setup(network, () => ({ status: 503 }));
    const { error } = await settle(intent.post('pay', { json: {} }));
    expect(error).toMatchObject({ code: 'OUTCOME_UNKNOWN', sent: true, cause: { message: 'network probe bug' } });
    const record = await store.get('default', 'order:1');
    expect(record).toMatchObject({ state: 'unknown', key: intent.key });
    expect(record?.fingerprint).toMatch(/^v2\./);
  });
});
