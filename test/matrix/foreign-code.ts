/**
 * Matrix dimensions of issue 26: foreign code that does several things inside one attempt
 * (a `run()` function or a client `fetch` that charges, then makes a second request that is
 * refused, reset, hangs or throws), and the `network` option as a boundary of its own.
 */
import { createServer, type Socket } from 'node:net';
import { type Client, type Network, run } from '../../src/index.js';
import type { Case } from './cases.js';
import type { Env } from './env.js';

type Planned = Omit<Case, 'id'>;

/** Where the second request of an attempt goes: a port that refuses, a server that resets or never answers. */
async function side(env: Env, mode: 'refused' | 'reset' | 'hang'): Promise<string> {
  const sockets = new Set<Socket>();
  const srv = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    if (mode === 'reset') socket.once('data', () => socket.resetAndDestroy());
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/receipt`;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      srv.close(() => resolve());
    });
  if (mode === 'refused') await close();
  else env.closers.push(close);
  return url;
}

/** The second request of an attempt, after the charge: each fault as the platform gives it. */
const SECOND: Record<string, (env: Env, signal: AbortSignal | undefined) => Promise<unknown>> = {
  'charges-then-refused': async (env, signal) => fetch(await side(env, 'refused'), { signal }),
  'charges-then-dns': async () => {
    throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ENOTFOUND' } });
  },
  'charges-then-reset': async (env, signal) => fetch(await side(env, 'reset'), { signal }),
  'charges-then-hangs': async (env, signal) => fetch(await side(env, 'hang'), { signal }),
  'charges-then-throws': async () => {
    throw new Error('SDK bug after charging');
  },
};

const faultedNow = (env: Env, moment: string, attempt: number) =>
  !env.lifted && (moment === 'every-attempt' || attempt === 1);

export function foreignCases(): Planned[] {
  const cases: Planned[] = [];
  for (const [fault, second] of Object.entries(SECOND))
    for (const moment of ['attempt-1', 'every-attempt']) {
      // run(): the function charges through the ledger, then makes its second request.
      const viaRun = async (env: Env, client: Client, faulted: boolean) =>
        run(
          await env.intent(client),
          async ({ headers, signal, attempt }) => {
            env.mayHaveSent = true;
            const paid = await fetch(`${env.ledger.url}pay`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              body: JSON.stringify(env.body),
              signal,
            });
            const value = await paid.json();
            if (faulted && faultedNow(env, moment, attempt)) await second(env, signal);
            return value;
          },
          { request: env.body },
        );
      cases.push({
        point: 'foreign(2 requests).run',
        fault,
        moment,
        act: (env) => viaRun(env, env.client(), true),
        resume: (env, client) => viaRun(env, client, false),
      });
      // A client fetch: sends the request it is given (the charge), then a second one.
      cases.push({
        point: 'foreign(2 requests).fetch',
        fault,
        moment,
        act(env) {
          let attempt = 0;
          env.options.fetch = async (input, init) => {
            attempt++;
            if (!env.lifted) env.mayHaveSent = true;
            const paid = await globalThis.fetch(input, init);
            if (!faultedNow(env, moment, attempt)) return paid;
            await paid.text();
            await second(env, init?.signal ?? (input instanceof Request ? input.signal : undefined));
            return paid;
          };
          return env.post(env.client());
        },
      });
    }
  // A client fetch that retries a network error by itself: the charge's answer is lost, its retry refused.
  for (const moment of ['attempt-1', 'every-attempt'])
    cases.push({
      point: 'foreign(2 requests).fetch',
      fault: 'self-retry-after-lost-answer-refused',
      moment,
      act(env) {
        let attempt = 0;
        env.ledger.faultFor = (n) => (moment === 'every-attempt' || n === 1 ? 'reset-after-effect' : 'ok');
        env.options.fetch = async (input, init) => {
          attempt++;
          if (!env.lifted) env.mayHaveSent = true;
          const request = new Request(input, init);
          try {
            return await globalThis.fetch(request.clone());
          } catch (error) {
            if (!faultedNow(env, moment, attempt)) throw error;
            return globalThis.fetch(await side(env, 'refused'), { signal: request.signal });
          }
        };
        return env.post(env.client());
      },
    });
  return cases;
}

/** The `network` option misbehaving: offline with a broken `onOnline`, or a probe that throws. */
const NETWORK: Record<string, (env: Env, on: () => boolean) => Network> = {
  'online-throws': (_env, on) => ({
    get online() {
      if (on()) throw new Error('network probe bug');
      return true;
    },
    onOnline: () => () => {},
  }),
  'onOnline-throws': (_env, on) => ({
    get online() {
      return !on();
    },
    onOnline: () => {
      throw new Error('onOnline bug');
    },
  }),
  'onOnline-returns-nothing': (_env, on) =>
    ({
      get online() {
        return !on();
      },
      onOnline: () => undefined,
    }) as unknown as Network,
  'onOnline-calls-back-at-once': (_env, on) =>
    ({
      get online() {
        return !on();
      },
      onOnline: (listener: () => void) => void listener(),
    }) as unknown as Network,
  'unsubscribe-throws-listener-twice': (_env, on) => ({
    get online() {
      return !on();
    },
    onOnline: (listener) => {
      setTimeout(() => {
        listener();
        listener();
      }, 20);
      return () => {
        throw new Error('unsubscribe bug');
      };
    },
  }),
  'offline-forever': (_env, on) => ({
    get online() {
      return !on();
    },
    onOnline: () => () => {},
  }),
};

export function networkCases(): Planned[] {
  const cases: Planned[] = [];
  for (const [fault, network] of Object.entries(NETWORK))
    for (const moment of ['attempt-1', 'attempt-2'])
      cases.push({
        point: 'network',
        fault,
        moment,
        act(env) {
          // attempt-2: the first attempt charged and lost its answer; the network misbehaves after.
          if (moment === 'attempt-2') env.ledger.faultFor = (n) => (n === 1 ? 'reset-after-effect' : 'ok');
          const on = () => !env.lifted && (moment === 'attempt-1' || env.ledger.requests.length > 0);
          env.options.network = network(env, on);
          return env.post(env.client());
        },
      });
  return cases;
}
