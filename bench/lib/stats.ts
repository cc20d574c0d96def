// Percentiles within a run, and aggregation across rounds. Medians over rounds, not means: this
// VM's speed drifts up to 2× between runs, and one slow round must not drag a figure.
import type { Figures } from './registry.js';

/** The p-th percentile of ascending values: the value at rank ⌊p/100 · n⌋ (p = 100 → the largest). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** The values in ascending order (a copy). */
export const ascending = (values: Iterable<number>): number[] => [...values].sort((a, b) => a - b);

/** Several runs' latencies as one ascending array, for percentiles over all of them. */
export function pooled(parts: readonly Float64Array[]): Float64Array {
  const all = new Float64Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of parts) {
    all.set(x, at);
    at += x.length;
  }
  return all.sort();
}

export function median(values: readonly number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(runs: readonly Figures[], key: string): Spread {
  const v = runs.map((r) => r[key] ?? NaN).filter((x) => Number.isFinite(x));
  return { median: median(v), min: v.length ? Math.min(...v) : NaN, max: v.length ? Math.max(...v) : NaN };
}

/** Median of every key present in any run. */
export function medians(runs: readonly Figures[]): Figures {
  const keys = new Set(runs.flatMap((r) => Object.keys(r)));
  return Object.fromEntries([...keys].map((k) => [k, median(runs.map((r) => r[k] ?? NaN))]));
}

/** The sum of one figure over runs (missing = 0), for counts such as errors. */
export const total = (runs: readonly Figures[], key: string): number => runs.reduce((a, r) => a + (r[key] ?? 0), 0);
