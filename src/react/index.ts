/**
 * `oncely/react`: {@link useIdempotentMutation}, a thin binding over the framework-free
 * {@link IdempotentMutationObserver} (exported from `oncely` itself too). React is an
 * optional peer dependency; only this entry imports it.
 */
export {
  IdempotentMutationObserver,
  type IdempotentMutationOptions,
  type MutationResult,
  type RequestContext,
} from '../observer/mutation-observer.js';
export {
  initialMutationState,
  type MutationAction,
  type MutationError,
  type MutationState,
  type MutationStatus,
  reduceMutation,
} from '../observer/reduce-mutation.js';
export {
  type UseIdempotentMutationOptions,
  type UseIdempotentMutationResult,
  useIdempotentMutation,
} from './use-idempotent-mutation.js';
