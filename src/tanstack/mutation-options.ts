/**
 * Mutation options for TanStack Query 5 whose mutationFn sends under an oncely intent. The
 * intent name is derived from the variables, because after a reload the variables are all
 * TanStack restores: a resumed mutation finds the same intent, so the same key.
 */
import type {
  DefaultError,
  Mutation,
  MutationFunctionContext,
  MutationKey,
  MutationMeta,
  MutationOptions,
  QueryClient,
} from '@tanstack/query-core';
import type { Client } from '../client.js';
import { type Intent, queuedOutcome } from '../intent/intent.js';
import { sendReclaiming } from '../observer/reclaim.js';

/** TanStack's mutationFn context, plus the claimed intent. */
export interface IdempotentMutationContext extends MutationFunctionContext {
  intent: Intent;
}

export interface IdempotentMutationConfig<T, V, C = unknown>
  extends Omit<MutationOptions<T, DefaultError, V, C>, 'mutationFn' | 'mutationKey' | 'retry' | 'retryDelay'> {
  /** The oncely client whose store holds the keys. */
  client: Client;
  /**
   * Required: a restored mutation finds its mutationFn through
   * `queryClient.setMutationDefaults(mutationKey, options)`.
   * @example ['checkout']
   */
  mutationKey: MutationKey;
  /**
   * The intent name of these variables: one name per user operation. Keep what it reads in
   * the variables (TanStack persists them; functions and closures are lost on reload).
   * @example (vars) => `checkout:${vars.cartId}`
   */
  intent: (variables: V) => string;
  /**
   * Sends through `context.intent` (`intent.post(…)`, or `run(intent, …)` for another
   * transport). Called again with the same variables when a mutation is resumed.
   * @example (vars, { intent }) => intent.post('payments', { json: vars.body, schema: Payment })
   */
  mutationFn: (variables: V, context: IdempotentMutationContext) => Promise<T>;
}

/** Options for `useMutation` and `setMutationDefaults`, plus `claim` and `hold`. */
export type IdempotentMutationOptions<T, V, C = unknown> = MutationOptions<T, DefaultError, V, C> & {
  mutationKey: MutationKey;
  mutationFn: NonNullable<MutationOptions<T, DefaultError, V, C>['mutationFn']>;
  /** oncely retries, with the same key and one budget; TanStack's retries would multiply it. */
  retry: 0;
  /**
   * Claims the intent of these variables (mints and stores its key, or finds it). Call it
   * when the intent forms, e.g. on mount, so the key is durable before the click.
   */
  claim: (variables: V) => Promise<Intent>;
  /**
   * Claims the intent of these variables and keeps its cross-tab lock until the returned
   * function is called, as `useIdempotentMutation` does while mounted: a mutation of these
   * variables then sends at once after a click, instead of one frame later (Chromium defers
   * lock and IndexedDB answers after input). Another tab that needs the intent gets the lock
   * as soon as no call runs here. Without Web Locks (Node) it only claims.
   * @example useEffect(() => payment.hold(vars), [vars]); // instead of claim(vars)
   */
  hold: (variables: V) => () => void;
  /**
   * The outcome of the last mutation of these variables could not be stored (a full disk,
   * the storage quota): its `StoreError`, as the hook's `warning`; else `undefined`. A success
   * stays a success (the server's data); the intent stays in flight in the store, so a
   * reload resumes it under its key and gets the replay. It can come after the mutation
   * settled (the outcome write is queued, not awaited): `subscribe` hears of it.
   * @example const warning = useSyncExternalStore(payment.subscribe, () => payment.warning(vars));
   */
  warning: (variables: V) => unknown;
  /** Calls `listener` whenever a `warning` changes; returns the function that stops it. */
  subscribe: (listener: () => void) => () => void;
};

/** Marks oncely's mutations in `meta` (persisted with them), so a restored one is recognised. */
const MARK = 'oncely';

/** An intent held by `hold()` callers (counted: React's StrictMode holds twice), sent through by mutationFn. */
interface Held {
  intent: Promise<Intent>;
  holders: number;
  release: () => void;
}

/**
 * Turns an oncely intent into TanStack mutation options.
 *
 * @example
 * const payment = idempotentMutationOptions({
 *   client: api,
 *   mutationKey: ['checkout'],
 *   intent: (vars: { cartId: string; body: PaymentBody }) => `checkout:${vars.cartId}`,
 *   mutationFn: (vars, { intent }) => intent.post('payments', { json: vars.body, schema: Payment }),
 * });
 * queryClient.setMutationDefaults(payment.mutationKey, payment); // before restoring a persisted client
 * // in the component: the key is stored on mount, and the click's request leaves at once
 * useEffect(() => payment.hold(vars), [vars]);
 * const pay = useMutation(payment);
 */
export function idempotentMutationOptions<T, V, C = unknown>(
  config: IdempotentMutationConfig<T, V, C>,
): IdempotentMutationOptions<T, V, C> {
  const { client, intent: nameOf, mutationFn, meta, ...rest } = config;
  const holds = new Map<string, Held>();
  const warnings = new Map<string, unknown>();
  const listeners = new Set<() => void>();
  const warn = (name: string, warning: unknown) => {
    if (warning === undefined ? !warnings.delete(name) : warnings.get(name) === warning) return;
    if (warning !== undefined) warnings.set(name, warning);
    for (const listener of listeners) listener();
  };
  // A held intent is the one whose lock and record are kept: a call through it takes the fast path.
  const claim = (variables: V) => {
    const name = nameOf(variables);
    return holds.get(name)?.intent.catch(() => client.intent(name)) ?? client.intent(name);
  };
  /** Claims `name` for `entry` and, once claimed, keeps its lock (unless let go meanwhile). */
  const claimHeld = (name: string, entry: Held): Promise<Intent> => {
    const intent = client.intent(name);
    intent.then(
      (claimed) => {
        if (holds.get(name) === entry && entry.intent === intent) entry.release = claimed.hold();
      },
      () => undefined,
    );
    return intent;
  };
  const hold = (variables: V) => {
    const name = nameOf(variables);
    let entry = holds.get(name);
    if (!entry) {
      const fresh = { holders: 0, release: () => {} } as Held;
      fresh.intent = claimHeld(name, fresh);
      holds.set(name, fresh);
      entry = fresh;
    }
    const held = entry;
    held.holders++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--held.holders > 0) return;
      if (holds.get(name) === held) holds.delete(name);
      held.release();
    };
  };
  return {
    ...rest,
    meta: { ...meta, [MARK]: true } as MutationMeta,
    retry: 0,
    claim,
    hold,
    warning: (variables) => warnings.get(nameOf(variables)),
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    mutationFn: async (variables, context) => {
      const name = nameOf(variables);
      const held = holds.get(name);
      warn(name, undefined);
      // Heard until this call's outcome write has landed or failed (it is queued, not awaited).
      const off = client.on('unsaved', (e) => {
        if (e.scope === client.scope && e.intent === name) warn(name, e.error);
      });
      let sentThrough: Intent | undefined;
      try {
        return await sendReclaiming(
          () => claim(variables),
          (intent) => {
            sentThrough = intent;
            return mutationFn(variables, { ...context, intent });
          },
          () => {
            // A held intent forgotten elsewhere: hold the one stored now.
            if (held) {
              held.release();
              held.release = () => {};
              held.intent = claimHeld(name, held);
            }
            return claim(variables);
          },
        );
      } finally {
        const landing = sentThrough && queuedOutcome(sentThrough);
        if (landing) void landing.then(off);
        else off();
      }
    },
  };
}

/** Structural, so a second copy of query-core (e.g. one nested under a persister) fits too. */
interface MutationLike {
  state: Pick<Mutation['state'], 'isPaused' | 'status'>;
  options: { meta?: MutationMeta };
}

/** True for a mutation made from {@link idempotentMutationOptions} (restored ones included). */
export const isIdempotentMutation = (mutation: MutationLike): boolean => mutation.options.meta?.[MARK] === true;

/**
 * `dehydrateOptions.shouldDehydrateMutation` for `persistQueryClient`: TanStack's default
 * (paused mutations) plus oncely mutations still pending, so a reload mid-flight resumes them.
 */
export const shouldDehydrateMutation = (mutation: MutationLike): boolean =>
  mutation.state.isPaused || (mutation.state.status === 'pending' && isIdempotentMutation(mutation));

/**
 * After a persisted client is restored (`PersistQueryClientProvider`'s `onSuccess`): resumes
 * the paused mutations, as `resumePausedMutations()` does, and the oncely mutations that were
 * in flight when the page went away, each with its variables and so its key. Call it once,
 * right after restoring.
 */
export function resumeMutations(queryClient: QueryClient): Promise<unknown> {
  const inFlight = queryClient
    .getMutationCache()
    .getAll()
    .filter((m) => !m.state.isPaused && m.state.status === 'pending' && isIdempotentMutation(m));
  return Promise.all([queryClient.resumePausedMutations(), ...inFlight.map((m) => m.continue().catch(() => {}))]);
}
