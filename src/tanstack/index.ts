/**
 * `oncely/tanstack`: TanStack Query 5 mutations that send under oncely intents. Type-only
 * imports of `@tanstack/query-core` (an optional peer): any TanStack binding works.
 */
export {
  type IdempotentMutationConfig,
  type IdempotentMutationContext,
  type IdempotentMutationOptions,
  idempotentMutationOptions,
  isIdempotentMutation,
  resumeMutations,
  shouldDehydrateMutation,
} from './mutation-options.js';
