/**
 * `oncely/react`: {@link useIdempotentMutation}, a thin binding over the framework-free
 * {@link IdempotentMutationObserver} (exported from `oncely` itself too). React is an
 * optional peer dependency; only this entry imports it.
 */
export {
  IdempotentMutationObserver,
  type IdempotentMutationOptions,
  initialMutationState,
  type MutationAction,
  type MutationFnOptions,
  type MutationState,
  type MutationStatus,
  type RequestContext,
  type RequestMutationOptions,
  reduceMutation,
} from '../observer/mutation-observer.js';
export {
  type UseIdempotentMutationOptions,
  type UseIdempotentMutationResult,
  useIdempotentMutation,
} from './use-idempotent-mutation.js';
