/**
 * Issue 26's store dimensions of the fault matrix: every `Store` method through every
 * wrapper the library builds around a store (each argument must arrive, and the races a
 * lost argument opens must be refused), and a store that acknowledges without applying or
 * answers well-typed lies. The lies stop once the case's faults are lifted.
 */
import { isDeepStrictEqual } from 'node:util';
import { LocalCoordinator, MemoryStore } from '../../src/index.js';
import { STORE_METHODS, storeView } from '../../src/store/forward.js';
import { lazyStore } from '../../src/store/lazy-store.js';
import type { IntentRecord, RecordUpdater, Store } from '../../src/store/store.js';
import type { Case } from './cases.js';
import type { Env } from './env.js';
import { writeKind } from './faulty-store.js';

type Call = [method: string, args: unknown[]];

/** Logs every call made on `store` (with its arguments), then makes it on the store itself. */
function recording<S extends object>(store: S, log: Call[]): S {
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        log.push([String(property), args]);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** The wrappers the library builds around a store: node's default (a view of a shared store), the browsers' lazy one. */
export const STORE_WRAPPERS: Record<string, (inner: Store) => Store> = {
  storeView: (inner) => storeView(inner, async () => inner.close?.()),
  lazyStore: (inner) => lazyStore(Promise.resolve(inner)),
};

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every call that went into the wrapper came out of it, with the same arguments (functions by identity). */
function lostArguments(outer: Call[], inner: Call[], store: object): string[] {
  const left = [...inner];
  const lost: string[] = [];
  for (const [method, args] of outer) {
    // A method the store underneath lacks (subscribe, on a store that reports nothing) has nowhere to arrive.
    if (typeof (store as Record<string, unknown>)[method] !== 'function') continue;
    const i = left.findIndex(([m, a]) => m === method && isDeepStrictEqual(a, args));
    if (i >= 0) left.splice(i, 1);
    else
      lost.push(
        `${method}(${args.map((a) => (typeof a === 'function' ? 'fn' : JSON.stringify(a))).join(', ')}) did not arrive as made`,
      );
  }
  for (const method of [...STORE_METHODS, 'close'])
    if (!outer.some(([m]) => m === method)) lost.push(`${method}() was never called through the wrapper`);
  return lost;
}

/** A case's act with the store behind `wrap`, and each call's arguments checked at both ends. */
function wrapperCases(name: string, wrap: (inner: Store) => Store): Omit<Case, 'id'>[] {
  const point = `store-wrapper(${name})`;
  const install = (env: Env) => {
    const outer: Call[] = [];
    const inner: Call[] = [];
    env.options.store = recording(wrap(recording(env.store, inner)), outer);
    return { outer, inner };
  };
  /** reset() or clear() that found the intent ready; its store write lands once the request is on the wire. */
  const race = (op: 'delete' | 'clear'): Omit<Case, 'id'> => ({
    point,
    fault: `${op === 'delete' ? 'reset()' : 'clear()'}-races-send`,
    moment: 'on-the-wire',
    async act(env) {
      install(env);
      const client = env.client();
      const other = env.client({ coordinator: new LocalCoordinator() }); // as another process
      const theirs = await env.intent(other);
      let onWire = () => {};
      const wire = new Promise<void>((resolve) => {
        onWire = resolve;
      });
      env.store.before = { op, run: () => wire };
      const forgetting = (op === 'delete' ? theirs.reset() : other.clear()).then(
        () => env.findings.push(`${op === 'delete' ? 'reset()' : 'clear()'} forgot an intent on the wire`),
        (e: unknown) => void env.sideErrors.push(e),
      );
      env.closers.push(() => forgetting);
      await pause(20); // its read is done: the intent was ready
      env.ledger.faultFor = (n) => (n === 1 ? 'hold' : 'ok');
      env.ledger.onHeld = () => {
        onWire();
        void forgetting.then(() => env.ledger.release());
      };
      return (await env.intent(client)).post('pay', { json: env.body });
    },
  });
  return [
    {
      point,
      fault: 'every-method-every-argument',
      moment: 'one-pass',
      async act(env) {
        const { outer, inner } = install(env);
        // Another scope gets the calls that forget (reset, clear), and a claim in a transaction.
        const side = env.client({ scope: 'matrix-side' });
        await side.intent('side:1', { transaction: { app: 'tx' } });
        await (await side.intent('side:2')).reset();
        await side.pending();
        await side.sweep();
        await side.clear();
        await side.close();
        const client = env.client();
        try {
          const result = await env.post(client);
          await (await env.intent(client)).refresh();
          return result;
        } finally {
          await pause(20); // background calls (the first sweep) reach the store
          for (const lost of lostArguments(outer, inner, env.store)) env.findings.push(lost);
        }
      },
    },
    race('delete'),
    race('clear'),
  ];
}

/** A lie a store tells about one kind of call; every other call is true. */
export const STORE_LIES = {
  /** Resolves with the record as it was, never calling the updater. */
  'update-skips-updater': 'update',
  /** Runs the updater on a copy and answers what it returned, storing nothing. */
  'update-acks-without-applying': 'update',
  /** Writes, then answers the record as it was before. */
  'update-answers-stale': 'update',
  /** Writes, then answers the record under another lease owner. */
  'update-answers-other-lease': 'update',
  /** Answers `{ record: fresh, created: true }`, storing nothing. */
  'claim-acks-without-applying': 'claim',
  /** Resolves, deleting nothing. */
  'delete-acks-without-applying': 'delete',
  /** Resolves, clearing nothing. */
  'clear-acks-without-applying': 'clear',
  /** Answers nothing for a record that is there. */
  'get-answers-nothing': 'get',
  'list-answers-null': 'list',
  'list-answers-[null]': 'list',
  'list-answers-a-string': 'list',
} as const;
type Lie = keyof typeof STORE_LIES;

/** `inner`, lying as `lie` says about the calls of kind `op` until the faults are lifted. */
function lying(env: Env, lie: Lie, op: string): Store {
  const inner: Store = env.store;
  const now = () => !env.lifted;
  return {
    claim: async (fresh, ...rest) =>
      now() && lie === 'claim-acks-without-applying' ? { record: fresh, created: true } : inner.claim(fresh, ...rest),
    get: async (...args) => (now() && lie === 'get-answers-nothing' ? undefined : inner.get(...args)),
    async update(scope, name, updater: RecordUpdater, ...rest) {
      const current = await inner.get(scope, name);
      const kind = writeKind(current, updater(current && structuredClone(current)));
      if (!now() || kind !== op) return inner.update(scope, name, updater, ...rest);
      if (lie === 'update-skips-updater') return current;
      if (lie === 'update-acks-without-applying') return updater(current && structuredClone(current));
      const stored = await inner.update(scope, name, updater, ...rest);
      if (lie === 'update-answers-stale') return current;
      return stored && ({ ...stored, lease: { owner: 'someone-else', until: Date.now() + 60_000 } } as IntentRecord);
    },
    delete: async (...args) => (now() && lie === 'delete-acks-without-applying' ? undefined : inner.delete(...args)),
    async list(...args) {
      if (now() && lie === 'list-answers-null') return null as never;
      if (now() && lie === 'list-answers-[null]') return [null] as never;
      if (now() && lie === 'list-answers-a-string') return 'records' as never;
      return inner.list(...args);
    },
    clear: async (...args) => (now() && lie === 'clear-acks-without-applying' ? undefined : inner.clear(...args)),
    sweep: (...args) => inner.sweep(...args),
    close: () => env.store.close(),
  };
}

/** Checks what the store (the truth under the lie) holds as a request under `key` arrives. */
async function heldAsSent(env: Env, key: string | undefined) {
  const record = await MemoryStore.prototype.get.call(env.store, 'default', env.order);
  if (!record || record.state === 'ready' || `"${record.key}"` !== key)
    env.findings.push(`a request left while the store held the intent ${record ? record.state : 'nowhere'}`);
}

/** What each lie is told about: for `update`, each write of a call. */
const LIE_MOMENTS: Record<string, string[]> = {
  update: ['update:in_flight', 'update:settle', 'update:undo'],
  claim: ['claim'],
  delete: ['delete'],
  clear: ['clear'],
  get: ['get'],
  list: ['list'],
};

/** The flow that reaches each kind of call, after the POST (as the store faults' rows). */
const FOLLOW_UP: Record<string, (env: Env, c: ReturnType<Env['client']>) => Promise<unknown>> = {
  get: async (env, c) => (await env.intent(c)).refresh(),
  delete: async (env, c) => (await env.intent(c)).reset(),
  // Both callers of list(); their errors are checked to be typed.
  list: async (env, c) => {
    for (const r of await Promise.allSettled([c.pending(), c.clear()]))
      if (r.status === 'rejected') env.sideErrors.push(r.reason);
  },
  clear: (_env, c) => c.clear(),
};

function lieCases(): Omit<Case, 'id'>[] {
  const cases: Omit<Case, 'id'>[] = [];
  for (const [lie, method] of Object.entries(STORE_LIES) as [Lie, string][])
    for (const moment of LIE_MOMENTS[method]!) {
      const follow = FOLLOW_UP[method];
      cases.push({
        point: 'store-lies',
        fault: lie,
        moment,
        forgets: method === 'delete' || method === 'clear' || method === 'list',
        async act(env) {
          env.options.store = lying(env, lie, moment);
          // Rule 2: the intent is stored as sent before its first byte leaves. Not checkable for a
          // store that runs the updater and answers its record without keeping it (a lost write, as
          // a broken disk's: the settle write stores the outcome; the claim kept the key).
          if (lie !== 'update-acks-without-applying') env.ledger.onRequest = (req) => void heldAsSent(env, req.key);
          // The undo write follows a call that provably sent nothing: connections refused until lifted.
          if (moment === 'update:undo')
            env.options.fetch = async (input, init) => {
              if (env.lifted) return globalThis.fetch(input, init);
              throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
            };
          const client = env.client();
          await env.post(client);
          if (follow) {
            env.before = env.ledger.requests.length; // the follow-up sends nothing itself
            await follow(env, client);
          }
        },
      });
    }
  return cases;
}

/** The rows of issue 26's store dimensions. */
export const STORE_BOUNDARY_CASES: readonly Omit<Case, 'id'>[] = [
  ...Object.entries(STORE_WRAPPERS).flatMap(([name, wrap]) => wrapperCases(name, wrap)),
  ...lieCases(),
];
