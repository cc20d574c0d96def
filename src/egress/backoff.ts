// How every outbound caller waits before trying again: one policy type, one rule. Call nodes
// (http.request, llm.chat), push deliveries, a2a.invoke's polling and retries, peer cancels and
// peer stream re-subscriptions each hold a `Backoff` and ask it for the next wait; none computes a
// delay of its own. Pure (the random source is injected): callers turn the wait into a durable
// timer or a due time, so no process sleeps on it.
//
//   const wait = nextWaitMs(policy, failed, retryAfterMs);   // null: no attempt left
import { retryWaitMs } from './retry-after.js';

export interface Backoff {
  /** Attempts in all, the first included (Infinity: only the caller's own deadline ends them). */
  maxAttempts: number;
  /** The step after the first failure; it doubles after each further one, up to `maxDelayMs`. */
  baseDelayMs: number;
  /** The ceiling: no step is longer, nor any Retry-After a server sends. */
  maxDelayMs: number;
  /** Explicit steps instead of doubling (the push schedule): step n, the last one repeating. */
  steps?: readonly number[];
  /**
   * How a step is spread, so callers that failed together do not retry together: `half` (the
   * default) waits half the step plus a random half; `around` waits the step ±20 %; `none` the step.
   */
  jitter?: 'half' | 'around' | 'none';
}

/** Doubling stops growing long before this exponent (2^30 steps of 1 ms is 12 days). */
const MAX_EXPONENT = 30;

/** The step after the `failed`-th failure (1-based), before jitter. */
function ceilingOf(b: Backoff, failed: number): number {
  const n = Math.max(1, failed);
  if (b.steps) return b.steps[Math.min(n - 1, b.steps.length - 1)] ?? b.baseDelayMs;
  return Math.min(b.maxDelayMs, b.baseDelayMs * 2 ** Math.min(n - 1, MAX_EXPONENT));
}

/** The caller's own wait after the `failed`-th failure (1-based), jittered; no Retry-After. */
export function stepMs(b: Backoff, failed: number, random: () => number = Math.random): number {
  const ceiling = ceilingOf(b, failed);
  switch (b.jitter ?? 'half') {
    case 'half':
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    case 'around':
      return Math.round(ceiling * (0.8 + random() * 0.4));
    case 'none':
      return ceiling;
  }
}

/**
 * The wait after the `failed`-th failure (1-based): the caller's own step, or a server's longer
 * Retry-After, but that only up to `maxDelayMs`: a server may slow its callers down, never park them.
 */
export function retryMs(b: Backoff, failed: number, retryAfterMs?: number, random: () => number = Math.random): number {
  return retryWaitMs(stepMs(b, failed, random), retryAfterMs, b.maxDelayMs);
}

/** As retryMs, or null once the `failed`-th failure used the policy's last attempt. */
export function nextWaitMs(
  b: Backoff,
  failed: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | null {
  return failed >= b.maxAttempts ? null : retryMs(b, failed, retryAfterMs, random);
}
