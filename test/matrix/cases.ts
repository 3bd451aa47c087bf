/**
 * The fault matrix of issue 17: every boundary the engine hands control to, every fault,
 * every moment, generated from the tables below. Exported so docs can list the cases.
 */
import { isDeepStrictEqual } from 'node:util';
import { type Client, intentFetch, isOncelyError, LocalCoordinator, run } from '../../src/index.js';
import { ietf } from '../../src/profiles/index.js';
import { BUDGET, type Env } from './env.js';
import { STORE_FAULTS, STORE_OPS, type StoreOp } from './faulty-store.js';
import { foreignCases, networkCases } from './foreign-code.js';
import { WIRE_FAULTS, type WireFault } from './ledger-server.js';
import { STORE_BOUNDARY_CASES } from './store-boundary.js';

export interface Case {
  id: string;
  point: string;
  fault: string;
  moment: string;
  /** Installs the fault and runs the call under test; its rejection is checked. */
  act(env: Env): Promise<unknown>;
  /** The act itself forgets the intent on purpose (reset/clear after it settled): skip 6 and 8. */
  forgets?: boolean;
  /** Resume with another act than the default POST (run, fetch must resend the same way). */
  resume?(env: Env, client: Client): Promise<unknown>;
}

const nthOf = (moment: string) => (moment.startsWith('call-') ? Number(moment.replace('call-', '')) : 1);
const cases: Case[] = [];
const add = (c: Omit<Case, 'id'>) => cases.push({ ...c, id: `${c.point} × ${c.fault} × ${c.moment}` });

// Store calls: the flow that reaches each kind of call, then the call's fault at its nth use.
const FOLLOW_UP: Partial<Record<StoreOp, (env: Env, c: Client) => Promise<unknown>>> = {
  get: async (env, c) => (await env.intent(c)).refresh(),
  delete: async (env, c) => (await env.intent(c)).reset(),
  list: (_env, c) => c.pending(),
  sweep: (_env, c) => c.sweep(),
  clear: (_env, c) => c.clear(),
  close: (_env, c) => c.close(),
};
// Only writes made more than once per call get a second moment; the outcome write one after
// a success and one after an outcome left unknown (every attempt reset after its effect).
const STORE_MOMENTS = (op: StoreOp) =>
  op === 'update:count' || op === 'update:renew'
    ? ['call-1', 'call-2']
    : op === 'update:settle'
      ? ['call-1', 'after-unanswered']
      : ['call-1'];
for (const op of STORE_OPS)
  for (const fault of STORE_FAULTS)
    for (const moment of STORE_MOMENTS(op)) {
      const follow = FOLLOW_UP[op];
      add({
        point: `store.${op}`,
        fault,
        moment,
        forgets: op === 'delete' || op === 'clear',
        async act(env) {
          env.store.fault = { op, kind: fault, nth: nthOf(moment) };
          // A slow answer so the lease is renewed (every third of leaseTtl) while it is on the wire.
          if (op === 'update:renew') {
            holdFor(env, 1, 700);
            env.options.retry = { ...BUDGET, timeout: 1200 };
          }
          // Attempt-count writes come with retries: the first two attempts go unanswered.
          if (op === 'update:count') env.ledger.faultFor = (n) => (n <= 2 ? 'reset-after-effect' : 'ok');
          // The undo write follows a call that provably sent nothing: offline until lifted.
          if (op === 'update:undo') offlineUntilLifted(env);
          const client = env.client();
          if (moment === 'after-unanswered') env.ledger.faultFor = () => 'reset-after-effect';
          if (op === 'update:settle') return queuedSettle(env, client, fault);
          if (op === 'get') await follow?.(env, client);
          await env.post(client);
          if (follow && op !== 'get') {
            env.before = env.ledger.requests.length; // the follow-up sends nothing itself
            await follow(env, client);
          }
        },
      });
    }

/**
 * The outcome write is queued (issue 30 §2): the call ends with the decision table's word,
 * never with that write's StoreError; the write's failure comes after, as one `unsaved`
 * event (a StoreError that says sent) once a read waits for it. The resume (invariant 8)
 * then finds the intent still pending under its key.
 */
async function queuedSettle(env: Env, client: Client, fault: string): Promise<unknown> {
  const unsaved: unknown[] = [];
  client.on('unsaved', (event) => unsaved.push(event.error));
  const ended = await env.post(client).then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  // A write that hangs or answers late is still held when the call ends: it did not wait.
  if ((fault === 'hang' || fault === 'late') && unsaved.length > 0)
    env.findings.push('the call ended after its outcome write gave up: it waited for the write');
  if ('error' in ended && isOncelyError(ended.error) && ended.error.code === 'STORE_FAILED')
    env.findings.push('the call ended with its outcome write’s StoreError: that write is queued, not awaited');
  await client.pending().catch((error: unknown) => void env.sideErrors.push(error));
  const [error] = unsaved;
  if (unsaved.length !== 1 || !isOncelyError(error) || error.code !== 'STORE_FAILED' || !error.sent)
    env.findings.push(
      `the failed outcome write gave ${unsaved.length} unsaved event(s), not one StoreError that says sent`,
    );
  if ('error' in ended) throw ended.error;
  return ended.value;
}

function offlineUntilLifted(env: Env) {
  env.options.network = { online: false, onOnline: () => () => {} };
  Object.defineProperty(env.options.network, 'online', { get: () => env.lifted });
  env.options.offlineWait = 50;
}

function holdFor(env: Env, attempt: number, ms: number) {
  env.ledger.faultFor = (n) => (n === attempt ? 'hold' : 'ok');
  env.ledger.onHeld = () => setTimeout(() => env.ledger.release(), ms);
}

// The wire: the ledger misbehaves on the first attempt, or on every attempt.
for (const fault of WIRE_FAULTS.filter((f) => f !== 'ok' && f !== 'stall-error-body'))
  for (const moment of ['attempt-1', 'every-attempt'])
    add({
      point: 'wire',
      fault,
      moment,
      act(env) {
        env.ledger.faultFor = (n) => (moment === 'every-attempt' || n === 1 ? fault : 'ok');
        if (fault === 'hold') env.ledger.onHeld = () => setTimeout(() => env.ledger.release(), 500);
        return env.post(env.client());
      },
    });

// A custom fetch (ClientOptions.fetch).
const TRANSPORT_FAULTS = {
  'throws-before-sending': async () => {
    throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
  },
  'sends-then-TypeError': async (send: () => Promise<Response>) => {
    await (await send()).text();
    throw new TypeError('terminated');
  },
  'sends-then-Error': async (send: () => Promise<Response>) => {
    await (await send()).text();
    throw new Error('proxy hiccup');
  },
  'sends-then-string': async (send: () => Promise<Response>) => {
    await (await send()).text();
    throw 'socket gone';
  },
  'never-returns-ignores-signal': async (send: () => Promise<Response>) => {
    void send().catch(() => {});
    return new Promise<Response>(() => {});
  },
  'returns-non-Response': async (send: () => Promise<Response>) => {
    await send();
    return { status: 200, ok: true } as unknown as Response;
  },
  'returns-Response.error()': async (send: () => Promise<Response>) => {
    await (await send()).text();
    return Response.error();
  },
} as const;
for (const [fault, behave] of Object.entries(TRANSPORT_FAULTS))
  for (const moment of ['attempt-1', 'every-attempt'])
    add({
      point: 'transport.fetch',
      fault,
      moment,
      act(env) {
        let n = 0;
        env.options.fetch = (input, init) => {
          const send = () => globalThis.fetch(input, init);
          n++;
          if (env.lifted || (moment === 'attempt-1' && n > 1)) return send();
          if (fault !== 'throws-before-sending') env.mayHaveSent = true;
          return behave(send);
        };
        return env.post(env.client());
      },
    });

// run(fn): a transport of the app's own, and its classify option.
const runSend = (env: Env, headers: Record<string, string>, signal?: AbortSignal) =>
  fetch(`${env.ledger.url}pay`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(env.body),
    signal,
  });
const RUN_FAULTS = [
  'sends-then-throws-Error',
  'hangs-ignoring-signal',
  'returns-dripping-body',
  'returns-garbage',
  'classify-throws',
];
for (const fault of RUN_FAULTS)
  for (const moment of ['attempt-1', 'every-attempt']) {
    const send = async (env: Env, client: Client, faulted: boolean) =>
      run(
        await env.intent(client),
        async ({ headers, signal, attempt }) => {
          if (!faulted || env.lifted || (moment === 'attempt-1' && attempt > 1)) {
            const res = await runSend(env, headers, signal);
            return res.json();
          }
          env.mayHaveSent = true;
          if (fault === 'hangs-ignoring-signal') {
            void runSend(env, headers).catch(() => {});
            return new Promise(() => {});
          }
          if (fault === 'returns-dripping-body') {
            env.ledger.faultFor = () => 'drip-body';
            return runSend(env, headers); // a Response whose body never ends
          }
          await (await runSend(env, headers, signal)).text();
          if (fault === 'returns-garbage') return Object.create(Response.prototype);
          throw new Error('SDK bug after sending');
        },
        {
          request: env.body,
          ...(fault === 'classify-throws' && faulted
            ? {
                classify: () => {
                  if (env.lifted) return undefined;
                  throw new Error('classify bug');
                },
              }
            : {}),
        },
      );
    add({
      point: 'run(fn)',
      fault,
      moment,
      act: (env) => send(env, env.client(), true),
      resume: (env, client) => send(env, client, false),
    });
  }

// intentFetch(): a stalled error body, and a Request object as input.
const fetchAct = (env: Env, client: Client) =>
  env.intent(client).then((i) =>
    intentFetch(i, 'pay', {
      method: 'POST',
      body: JSON.stringify(env.body),
      headers: { 'content-type': 'application/json' },
    }),
  );
add({
  point: 'intent.fetch',
  fault: 'error-body-stalls',
  moment: 'attempt-1',
  act(env) {
    env.ledger.faultFor = (n) => (n === 1 ? 'stall-error-body' : 'ok');
    return fetchAct(env, env.client());
  },
  resume: fetchAct,
});
const requestAct = async (env: Env, client: Client) => {
  const intent = await env.intent(client);
  const request = new Request(`${env.ledger.url}pay`, { method: 'POST', body: JSON.stringify(env.body) });
  return intentFetch(intent, request as unknown as string);
};
add({
  point: 'intent.fetch',
  fault: 'Request-object-input',
  moment: 'first-call',
  async act(env) {
    try {
      return await requestAct(env, env.client());
    } finally {
      for (const r of env.ledger.requests)
        if (r.method !== 'POST' || r.body !== JSON.stringify(env.body) || r.url.includes('object'))
          env.findings.push(`fetch(Request) sent ${r.method} ${r.url} body ${JSON.stringify(r.body.slice(0, 40))}`);
    }
  },
  resume: requestAct,
});

// The app's callbacks.
const boom = (env: Env, first: () => boolean) => {
  if (!env.lifted && first()) throw new Error('app callback bug');
};
const CALLBACKS: Record<string, (env: Env, first: () => boolean) => void> = {
  'headers()-throws': (env, first) => {
    env.options.headers = () => {
      boom(env, first);
      return { 'x-app': '1' };
    };
  },
  'ky.beforeRequest-throws': (env, first) => {
    env.options.ky = { hooks: { beforeRequest: [() => boom(env, first)] } };
  },
  'ky.afterResponse-throws': (env, first) => {
    env.options.ky = { hooks: { afterResponse: [() => boom(env, first)] } };
  },
  'profile.classify-throws': (env, first) => {
    env.options.profile = {
      ...ietf,
      name: 'buggy',
      classify: (a) => {
        boom(env, first);
        return ietf.classify(a);
      },
    };
  },
  'onEvent-throws': (env, first) => {
    env.options.onEvent = () => boom(env, first);
  },
};
for (const [fault, install] of Object.entries(CALLBACKS))
  for (const moment of ['first-call', 'every-call'])
    add({
      point: 'callback',
      fault,
      moment,
      act(env) {
        let n = 0;
        install(env, () => moment === 'every-call' || ++n === 1);
        return env.post(env.client());
      },
    });
for (const fault of ['schema.validate-throws', 'schema.validate-never-resolves'])
  add({
    point: 'callback',
    fault,
    moment: 'first-call',
    async act(env) {
      const schema = {
        '~standard': {
          version: 1 as const,
          vendor: 'matrix',
          validate: (value: unknown) => {
            if (env.lifted) return { value };
            if (fault === 'schema.validate-throws') throw new Error('schema bug');
            return new Promise<never>(() => {});
          },
        },
      };
      return (await env.intent(env.client())).post('pay', { json: env.body, schema });
    },
  });

// Clocks: the wall clock jumps hours before the send or while the request is on the wire.
for (const fault of ['now+6h', 'now-6h'])
  for (const moment of ['before-send', 'on-the-wire'])
    add({
      point: 'clock',
      fault,
      moment,
      async act(env) {
        let offset = 0;
        const jump = (fault === 'now+6h' ? 6 : -6) * 3600_000;
        env.options.now = () => Date.now() + (env.lifted ? 0 : offset);
        const client = env.client();
        const intent = await env.intent(client);
        if (moment === 'before-send') offset = jump;
        else
          env.ledger.onRequest = () => {
            offset = jump;
          };
        return intent.post('pay', { json: env.body });
      },
    });

// Other writers: another client of the same store, in this process (shared lock) or as
// another process would be (its own coordinator: only the lease coordinates).
const ACTIONS: Record<string, (env: Env, other: Client) => Promise<unknown>> = {
  'intent.reset()': async (env, o) => (await env.intent(o)).reset(),
  'client.clear()': (_env, o) => o.clear(),
  'client.sweep()': (_env, o) => o.sweep(),
  'claims-and-sends': (env, o) => env.post(o),
};
for (const writer of ['same-process', 'other-process'])
  for (const [fault, action] of Object.entries(ACTIONS))
    for (const moment of ['before-send', 'on-the-wire', 'after-answer'])
      add({
        point: `other-writer(${writer})`,
        fault,
        moment,
        // A reset or clear of this process waits for the outcome write it would race (read your
        // writes) and then forgets a succeeded intent, as the app asked: nothing to resume.
        forgets:
          writer === 'same-process' &&
          moment === 'after-answer' &&
          (fault === 'intent.reset()' || fault === 'client.clear()'),
        async act(env) {
          const other = env.client(writer === 'other-process' ? { coordinator: new LocalCoordinator() } : {});
          let sideDone: Promise<unknown> = Promise.resolve();
          // Another writer's call may wait for this one's lock (or outcome write): give it a moment, then go on.
          const side = () => {
            const p = action(env, other).catch((e: unknown) => void env.sideErrors.push(e));
            env.closers.push(() => p);
            sideDone = p;
            return Promise.race([p, new Promise((r) => setTimeout(r, 300))]);
          };
          const client = env.client();
          const intent = await env.intent(client);
          if (moment === 'before-send') await side();
          if (moment === 'on-the-wire') {
            env.ledger.faultFor = (n) => (n === 1 ? 'hold' : 'ok');
            env.ledger.onHeld = () => void side().then(() => env.ledger.release());
          }
          if (moment === 'after-answer')
            env.store.before = { op: 'update:settle', run: async () => void (await side()) };
          const result = await intent.post('pay', { json: env.body });
          // The call ended once its outcome write was queued: let the other writer finish before the checks.
          await Promise.race([sideDone, new Promise((r) => setTimeout(r, 1_000))]);
          return result;
        },
      });

// Bodies and unkeyed methods.
add({
  point: 'body',
  fault: 'sparse-array',
  moment: 'first-send',
  async act(env) {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the fault under test
    env.body = { order: env.order, items: [1, , 3] };
    try {
      return await env.post(env.client());
    } finally {
      // Canonical JSON (members sorted): the same value as JSON.stringify gives, holes as null.
      const expected = JSON.stringify(env.body);
      for (const r of env.ledger.requests) {
        let same = false;
        try {
          same = isDeepStrictEqual(JSON.parse(r.body), JSON.parse(expected));
        } catch {
          // not JSON at all
        }
        if (!same) env.findings.push(`sent ${r.body} for ${expected}`);
      }
    }
  },
});
add({
  point: 'unkeyed-method',
  fault: 'PUT-unanswered',
  moment: 'every-attempt',
  forgets: true,
  async act(env) {
    env.ledger.faultFor = () => 'stall-headers' as WireFault;
    try {
      return await (await env.intent(env.client())).request('PUT', 'pay', { json: env.body });
    } finally {
      if (env.ledger.requests.length > 1)
        env.findings.push(`unkeyed PUT sent ${env.ledger.requests.length} times, unanswered`);
    }
  },
});

// Issue 26: every Store method through every wrapper the library builds; a store that lies.
for (const c of STORE_BOUNDARY_CASES) add(c);
// Foreign code doing several things inside one attempt, and the network option (issue 26).
for (const c of [...foreignCases(), ...networkCases()]) add(c);

export const CASES: readonly Case[] = cases;

/** A deterministic sample covering every point and every fault at least once. */
export function fastSubset(all: readonly Case[] = CASES): Case[] {
  const seen = new Set<string>();
  return all.filter((c) => {
    const fresh = !seen.has(`p:${c.point}`) || !seen.has(`f:${c.point}:${c.fault}`);
    seen.add(`p:${c.point}`);
    seen.add(`f:${c.point}:${c.fault}`);
    return fresh;
  });
}
