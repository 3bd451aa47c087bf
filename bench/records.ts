/**
 * The record the benchmarks claim: fresh (`ready`, no attempts), a new key, made now.
 * `crypto` is the global one: browser-page.ts bundles this for Chromium.
 */
export const freshRecord = (scope: string, name: string) => {
  const now = Date.now();
  return {
    v: 1 as const,
    scope,
    name,
    key: crypto.randomUUID(),
    state: 'ready' as const,
    attempts: 0,
    createdAt: now,
    updatedAt: now,
  };
};
