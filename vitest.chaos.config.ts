/**
 * `npm run chaos`: the chaos, fuzz and security tests of `npm test`, with far more runs.
 * Override with the environment: `ONCELY_CHAOS_RUNS` (schedules and fuzz inputs per
 * property, default 100,000), `ONCELY_CHAOS_KILLS` (SIGKILLs in the crash loop, default
 * 1,000), `ONCELY_CHAOS_SEED` / `ONCELY_CHAOS_PATH` (replay a failure fast-check printed),
 * `ONCELY_CHAOS_KILL_SEED` (the crash loop's kill moments and faults; timing still varies).
 * `ONCELY_MATRIX_ONLY` reruns the fault-matrix cases whose id contains it (both matrices).
 * `ONCELY_CHECK_RACE_RUNS` (default 50): full `oncely check` runs per racing server in
 * test/check-race.test.ts, every one of which must flag the race.
 * The crash loop needs `dist/`: run `npm run build` first.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'test/chaos-*.test.ts',
      'test/fuzz-*.test.ts',
      'test/security-*.test.ts',
      'test/matrix/**/*.test.ts',
      'test/server-matrix/**/*.test.ts',
      'test/check-race.test.ts',
    ],
    environment: 'node',
    testTimeout: 6 * 60 * 60 * 1000,
    hookTimeout: 120_000,
    env: {
      ONCELY_CHAOS_RUNS: process.env.ONCELY_CHAOS_RUNS ?? '100000',
      ONCELY_CHAOS_KILLS: process.env.ONCELY_CHAOS_KILLS ?? '1000',
      // Every case of the fault matrix (test/matrix), not the sample of `npm test`.
      ONCELY_MATRIX: process.env.ONCELY_MATRIX ?? 'full',
      // Every case of the server fault matrix (test/server-matrix), not the fast subset.
      ONCELY_SERVER_MATRIX: process.env.ONCELY_SERVER_MATRIX ?? 'full',
      ONCELY_CHECK_RACE_RUNS: process.env.ONCELY_CHECK_RACE_RUNS ?? '50',
    },
  },
});
