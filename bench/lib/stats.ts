// Aggregation across rounds. Medians, not means: this VM's speed drifts up to 2× between runs,
// and one slow round must not drag a figure.
import type { Figures } from './registry.js';

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

/** The p-th percentile (nearest rank) of values sorted ascending; NaN when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}
