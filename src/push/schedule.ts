// The push retry schedule: backoff ceilings and their jitter. The outbox rows themselves live in
// the store (src/store/repos/push-outbox.ts).

/** Backoff from a schedule of ceilings in ms (growing), with jitter: half fixed, half random, so
 * retries of many deliveries that failed together spread out instead of arriving as one burst. */
export function backoffMs(schedule: number[], attempt: number, random = Math.random): number {
  const ceiling = schedule[Math.min(attempt - 1, schedule.length - 1)] ?? 1000;
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
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
