/**
 * How many runs a chaos property makes: `ONCELY_CHAOS_RUNS` when set (`npm run chaos`
 * sets 100,000), else the given default (what `npm test` runs). `ONCELY_CHAOS_SEED`
 * and `ONCELY_CHAOS_PATH` replay a failure that fast-check printed.
 */
import type { Parameters } from 'fast-check';

export function chaosRuns(defaultRuns: number, share = 1): number {
  const fromEnv = Number(process.env.ONCELY_CHAOS_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? Math.max(1, Math.round(fromEnv * share)) : defaultRuns;
}

/** fast-check parameters: run count, and a replay when a seed (and path) are given. */
export function chaosParameters<T>(defaultRuns: number, share = 1): Parameters<T> {
  const seed = process.env.ONCELY_CHAOS_SEED;
  const path = process.env.ONCELY_CHAOS_PATH;
  return {
    numRuns: chaosRuns(defaultRuns, share),
    ...(seed ? { seed: Number(seed) } : {}),
    ...(seed && path ? { path } : {}),
  };
}

/** A test's timeout: `ms` under `npm test`, hours when `ONCELY_CHAOS_RUNS` asks for a long run. */
export function chaosTimeout(ms: number): number {
  return process.env.ONCELY_CHAOS_RUNS || process.env.ONCELY_CHAOS_KILLS ? 6 * 60 * 60 * 1000 : ms;
}
