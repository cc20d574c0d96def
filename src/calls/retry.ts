// When to try an outbound call again. Pure: the engine turns the answer into a durable timer
// between attempts, so no process sleeps and a restart loses nothing.
//
//   const wait = retryDelayMs(policy, attempts, outcome.retryAfterMs);
//   if (wait === null) fail(outcome); else wakeAt = Date.now() + wait;

import { retryWaitMs } from '../egress/retry-after.js';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** Ceiling of the wait after the first failed attempt; it doubles after each further one. */
  baseDelayMs: number;
  /** No wait is longer, a server's Retry-After included (it cannot park a run indefinitely). */
  maxDelayMs: number;
}

/**
 * The wait before the next attempt once attempt number `attempt` (1-based) has failed, or null
 * when the policy allows no more. Exponential ceilings with jitter (half fixed, half random, like
 * push retries) so calls that failed together do not retry together; a longer Retry-After wins.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | null {
  if (attempt >= policy.maxAttempts) return null;
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = Math.round(ceiling / 2 + random() * (ceiling / 2));
  return retryWaitMs(jittered, retryAfterMs, policy.maxDelayMs);
}
