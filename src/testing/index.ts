/**
 * `oncely/testing`: the conformance suite every oncely store passes, for your own store.
 * One call in your test runner (vitest, node:test, bun test, Deno.test):
 *
 * ```ts
 * import { describe, it } from 'vitest'; // or 'node:test', 'bun:test'
 * import { runStoreConformance } from 'oncely/testing';
 * runStoreConformance('MyStore', async () => ({ store: new MyStore(), reopen: () => … }), { describe, it });
 * ```
 *
 * or `await checkStore(makeStore)` with no runner at all (a Worker, a script). The rules
 * behind each test are in docs/stores.md, "Writing your own store".
 */
import { ConformanceError } from './assert.js';
import { lifecycleCases } from './cases-lifecycle.js';
import { type ConformanceCase, recordCases } from './cases-records.js';
import { Harness, type MakeStore, SKIPPED } from './harness.js';
import { loneSurrogateCase } from './lone-surrogates.js';

export { ConformanceError } from './assert.js';
export type { ConformanceCase } from './cases-records.js';
export { type ConformanceStore, type Harness, intentRecord, type MakeStore } from './harness.js';

export interface ConformanceOptions {
  /**
   * The store keeps scopes and names as UTF-8 (SQLite, PostgreSQL, Deno KV…), where two
   * names with different lone surrogates would be one: check that every method refuses them
   * with an `InvalidArgumentError`.
   * @default false
   */
  utf8Names?: boolean;
}

/** The suite's tests, as data: `group`, `name` and `run(harness)`. */
export function conformanceCases(options: ConformanceOptions = {}): ConformanceCase[] {
  return [...recordCases, ...lifecycleCases, ...(options.utf8Names ? [loneSurrogateCase] : [])];
}

/** Runs one test with its own stores, closed and cleaned up however it ends. */
export async function runCase(test: ConformanceCase, makeStore: MakeStore): Promise<'passed' | 'skipped'> {
  const harness = new Harness(makeStore);
  try {
    return (await test.run(harness)) === SKIPPED ? 'skipped' : 'passed';
  } finally {
    await harness.end();
  }
}

/** The parts of a test runner the suite uses; vitest, node:test and bun:test export them under these names. */
export interface TestRunner<Context = unknown> {
  /** Groups tests; without it, each test's name carries its group. */
  describe?: (name: string, body: () => void) => unknown;
  it: (name: string, body: (context: Context) => Promise<void>) => unknown;
  /**
   * Marks a running test skipped, given the context the runner passed it (vitest:
   * `(context) => context.skip()`, node:test: `(t) => t.skip()`). Without it a test that needs
   * `reopen` or `claimRolledBack` the factory lacks passes without asserting anything.
   */
  skip?: (context: Context) => void;
}

/** Registers the suite with `runner` under `name`: one test per case, grouped by `describe`. */
export function runStoreConformance<Context>(
  name: string,
  makeStore: MakeStore,
  runner: TestRunner<Context>,
  options: ConformanceOptions = {},
): void {
  const { describe, it, skip } = runner;
  // A callback that declares a parameter is a `done` callback to bun:test: declare one only for `skip`.
  const register = (title: string, test: ConformanceCase) =>
    skip
      ? it(title, async (context: Context) => {
          if ((await runCase(test, makeStore)) === 'skipped') skip(context);
        })
      : it(title, async () => void (await runCase(test, makeStore)));
  const cases = conformanceCases(options);
  if (!describe) {
    for (const test of cases) register(`${name}: store conformance › ${test.group} › ${test.name}`, test);
    return;
  }
  describe(`${name}: store conformance`, () => {
    for (const group of new Set(cases.map((test) => test.group)))
      describe(group, () => {
        for (const test of cases.filter((c) => c.group === group)) register(test.name, test);
      });
  });
}

export interface ConformanceResult {
  test: string;
  outcome: 'passed' | 'skipped' | 'failed';
  /** Why it failed: the assertion's message, or the error the store threw. */
  error?: string;
}

/** Runs the whole suite one test after another, with no test runner; never rejects for a failed test. */
export async function checkStore(makeStore: MakeStore, options: ConformanceOptions = {}): Promise<ConformanceResult[]> {
  const results: ConformanceResult[] = [];
  for (const test of conformanceCases(options)) {
    const title = `${test.group} › ${test.name}`;
    try {
      results.push({ test: title, outcome: await runCase(test, makeStore) });
    } catch (error) {
      const text =
        error instanceof ConformanceError ? error.message : `threw ${String((error as Error)?.stack ?? error)}`;
      results.push({ test: title, outcome: 'failed', error: text });
    }
  }
  return results;
}
