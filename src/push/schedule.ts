// The push retry schedule: backoff ceilings and their jitter. The outbox rows themselves live in
// the store (src/store/repos/push-outbox.ts).
import { type Backoff, stepMs } from '../egress/backoff.js';

/**
 * The push retry policy of a schedule of ceilings in ms (growing): one step per retry, each
 * jittered half fixed, half random, so retries of many deliveries that failed together spread out
 * instead of arriving as one burst; a receiver's Retry-After is honoured up to the longest step.
 */
export function pushBackoff(schedule: readonly number[]): Backoff {
  return {
    maxAttempts: schedule.length + 1,
    baseDelayMs: schedule[0] ?? 1000,
    maxDelayMs: schedule.length > 0 ? Math.max(...schedule) : 1000,
    steps: schedule,
    jitter: 'half',
  };
}

/** The jittered wait after attempt `attempt` (1-based) of a schedule, without a Retry-After. */
export function backoffMs(schedule: number[], attempt: number, random = Math.random): number {
  return stepMs(pushBackoff(schedule), attempt, random);
}

/** `1s,5s,30s,2m,1h` → milliseconds. */
export function parseSchedule(raw: string): number[] {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return raw.split(',').map((part) => {
    const m = part.trim().match(/^(\d+(?:\.\d+)?)(ms|s|m|h)$/);
    if (!m) throw new Error(`invalid retry schedule entry '${part.trim()}' (use e.g. 1s,5s,30s,2m,1h)`);
    return Math.round(Number(m[1]) * (units[m[2] as string] as number));
  });
}
