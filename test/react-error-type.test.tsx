// @vitest-environment happy-dom
/**
 * `useIdempotentMutation().error` is typed (issue 29 §6): oncely's errors or the Error the
 * app's `request` threw, never `unknown` — TanStack's habit of `error.message` type-checks.
 */
import { renderHook } from '@testing-library/react';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AnyOncelyError,
  initialMutationState,
  isOncelyError,
  MemoryStore,
  type MutationError,
  reduceMutation,
} from '../src/index.js';
import { useIdempotentMutation } from '../src/react/index.js';
import { makeClient, NAME, setupHookContract } from './helpers/react.js';

setupHookContract();

describe('useIdempotentMutation().error', () => {
  it('is MutationError | undefined: an Error with a message, narrowed to oncely errors by isOncelyError', () => {
    const client = makeClient(new MemoryStore());
    const { result } = renderHook(() =>
      useIdempotentMutation({ client, intent: NAME, request: async () => ({ data: 1 }) }),
    );
    expectTypeOf(result.current.error).toEqualTypeOf<MutationError | undefined>();
    expectTypeOf(result.current.error).toExtend<Error | undefined>();
    const error = result.current.error;
    if (isOncelyError(error)) expectTypeOf(error).toExtend<AnyOncelyError>();
    expect(error).toBeUndefined();
  });

  it('a request that throws a non-Error gets an Error whose cause is the value', () => {
    const state = reduceMutation(initialMutationState, {
      type: 'error',
      error: 'declined',
      status: 'error',
      attempts: 0,
      record: undefined,
    });
    expect(state.error).toBeInstanceOf(Error);
    expect(state.error?.message).toMatch(/declined/);
    expect(state.error?.cause).toBe('declined');
    const thrown = new TypeError('bad');
    expect(
      reduceMutation(initialMutationState, {
        ...{ type: 'error', status: 'error', attempts: 0 },
        error: thrown,
        record: undefined,
      } as const).error,
    ).toBe(thrown);
  });
});
