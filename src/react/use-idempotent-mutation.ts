import { useEffect, useState, useSyncExternalStore } from 'react';
import { IdempotentMutationObserver, type IdempotentMutationOptions } from '../observer/mutation-observer.js';
import type { MutationState } from '../observer/reduce-mutation.js';

export type UseIdempotentMutationOptions<T, V = void> = IdempotentMutationOptions<T, V>;

export interface UseIdempotentMutationResult<T, V = void> extends MutationState<T> {
  /** Sends, or joins the call in flight (a double click sends once). Errors land in `error`. */
  mutate: (variables?: V) => void;
  /** Like `mutate`, returning the call's promise: the same one for every click while pending. */
  mutateAsync: (variables?: V) => Promise<T>;
  /** Clears the UI state (TanStack's `reset()`); the key stays, so the next `mutate()` cannot pay twice. */
  reset: () => void;
  /**
   * Forgets the intent and claims a new key, for a new operation. Rejects while the outcome
   * is unknown or in flight; `{ force: true }` only after reconciling.
   */
  forget: (options?: { force?: boolean }) => Promise<void>;
}

/**
 * Sends a request exactly once, whatever the clicks, retries, reloads and tabs. The
 * intent is claimed on mount (the key is durable before the first click); an intent
 * left `in_flight` or `unknown` by a reload is resumed with the same key
 * (`resume: 'auto'`), and another tab's send is shown without sending again.
 *
 * All logic lives in {@link IdempotentMutationObserver}; this hook only subscribes.
 * `client` and `intent` pick the observer: change either and a new intent is formed.
 *
 * @example
 * const pay = useIdempotentMutation({
 *   client: api,
 *   intent: `checkout:${cart.id}`,
 *   // Auto-resume calls this with no variables after a reload: build it from component state.
 *   request: (_vars, { intent, signal }) => intent.post('payments', { json: cart, schema: Payment, signal }),
 * });
 * <button onClick={() => pay.mutate()} disabled={pay.isPending}>Pay</button>
 */
export function useIdempotentMutation<T, V = void>(
  options: UseIdempotentMutationOptions<T, V>,
): UseIdempotentMutationResult<T, V> {
  const [stored, setObserver] = useState(() => new IdempotentMutationObserver<T, V>(options));
  // One observer per (client, intent): a new pair is a new observer, adopted during render.
  let observer = stored;
  if (stored.client !== options.client || stored.intent !== options.intent) {
    observer = new IdempotentMutationObserver<T, V>(options);
    setObserver(observer);
  }
  useEffect(() => observer.setOptions(options));
  const state = useSyncExternalStore(observer.subscribe, observer.getState, observer.getState);
  const { mutate, mutateAsync, reset, forget } = observer;
  return { ...state, mutate, mutateAsync, reset, forget };
}
