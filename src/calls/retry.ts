// When to try an outbound call again: the host's one backoff policy (src/egress/backoff.ts), with
// the call nodes' half-fixed, half-random jitter. Pure: the engine turns the answer into a durable
// timer between attempts, so no process sleeps and a restart loses nothing.
//
//   const wait = retryDelayMs(policy, attempts, outcome.retryAfterMs);
//   if (wait === null) fail(outcome); else wakeAt = Date.now() + wait;
import { type Backoff, nextWaitMs } from '../egress/backoff.js';

/** A call's retries: attempts in all, the first wait (doubling) and the ceiling of every wait. */
export type RetryPolicy = Pick<Backoff, 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs'>;

/**
 * The wait before the next attempt once attempt number `attempt` (1-based) has failed, or null
 * when the policy allows no more. A longer Retry-After wins, up to `maxDelayMs`.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number | null {
  return nextWaitMs({ ...policy, jitter: 'half' }, attempt, retryAfterMs, random);
}
