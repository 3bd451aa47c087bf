import { useEffect, useMemo, useSyncExternalStore } from 'react';
import {
  IdempotentMutationObserver,
  type IdempotentMutationOptions,
  type MutationState,
} from '../observer/mutation-observer.js';

export type UseIdempotentMutationOptions<T, V = void> = IdempotentMutationOptions<T, V>;

export interface UseIdempotentMutationResult<T, V = void> extends MutationState<T> {
  /** Sends, or joins the call in flight (a double click sends once). Errors land in `error`. */
  mutate: (variables?: V) => void;
  /** Like `mutate`, returning the call's promise: the same one for every click while pending. */
  mutateAsync: (variables?: V) => Promise<T>;
  /** Forgets the intent and claims a new key, for a new operation. Rejects while a call is in flight. */
  reset: () => Promise<void>;
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
 *   request: (intent, _vars, { signal }) => intent.post('payments', { json: cart, schema: Payment, signal }),
 * });
 * <button onClick={() => pay.mutate()}>Pay</button> // a double click still sends once
 */
export function useIdempotentMutation<T, V = void>(
  options: UseIdempotentMutationOptions<T, V>,
): UseIdempotentMutationResult<T, V> {
  const { client, intent } = options;
  // One observer per (client, intent); later options arrive through setOptions.
  const observer = useMemo(() => new IdempotentMutationObserver<T, V>(options), [client, intent]);
  useEffect(() => observer.setOptions(options));
  const state = useSyncExternalStore(observer.subscribe, observer.getState, observer.getState);
  return { ...state, mutate: observer.mutate, mutateAsync: observer.mutateAsync, reset: observer.reset };
}
