/**
 * The store conformance suite as oncely's own tests run it: the exported one
 * (`oncely/testing`, src/testing/) registered with vitest. Every built-in store goes
 * through it: `runStoreConformance('MyStore', async () => ({ store, reopen, cleanup }))`.
 */
import { describe, it, type TestContext } from 'vitest';
import {
  type ConformanceOptions,
  intentRecord,
  type MakeStore,
  runStoreConformance as run,
} from '../src/testing/index.js';

export type { ConformanceStore } from '../src/testing/index.js';
export { intentRecord };

export function runStoreConformance(name: string, makeStore: MakeStore, options?: ConformanceOptions): void {
  run(name, makeStore, { describe, it, skip: (context: TestContext) => context.skip() }, options);
}
