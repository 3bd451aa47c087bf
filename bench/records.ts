/** The record the benchmarks claim: fresh (`ready`, no attempts), a new key, made now. */
import { randomUUID } from 'node:crypto';

export const freshRecord = (scope: string, name: string) => {
  const now = Date.now();
  return {
    v: 1 as const,
    scope,
    name,
    key: randomUUID(),
    state: 'ready' as const,
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  };
};
