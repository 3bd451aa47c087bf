/**
 * Small statistics for the benchmarks: medians, percentiles and the spread of a series
 * of per-round ratios. The machine is shared and noisy, so every figure is a median over
 * rounds, with the range of the rounds next to it.
 */
import { loadavg } from 'node:os';

export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Values measured, one per round (or per sample). */
  n: number;
}

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

export function spread(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** `1.07× (1.02–1.15)`. */
export const fmtRatio = (s: Spread): string => `${s.median.toFixed(2)}× (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;

/** A duration in ms, to a sensible precision. */
export function fmtMs(ms: number): string {
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  if (ms >= 0.01) return `${(ms * 1000).toFixed(0)} µs`;
  return `${(ms * 1000).toFixed(2)} µs`;
}

export const fmtRate = (perSecond: number): string =>
  perSecond >= 10_000 ? `${(perSecond / 1000).toFixed(0)}k/s` : `${perSecond.toFixed(0)}/s`;

/** `load average 1.00 2.00 3.00`: what else the machine ran, printed beside the figures. */
export const loadLine = (): string =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;

/** Runs `fn` with at most `concurrency` calls in flight, `total` calls in all. */
export async function inParallel(total: number, concurrency: number, fn: (i: number) => Promise<unknown>) {
  let next = 0;
  const worker = async () => {
    while (next < total) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

/** Wall time of `fn` in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** A place to hang one section's figures in results.json. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json | undefined };
