// The engine's sense of time. Injected (Engine, Runner, the store) so tests can move a durable
// timer's clock instead of waiting for it.
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

let lastMs = Number.NaN;
let lastIso = '';

/** The clock's time as an ISO 8601 string (event and record timestamps). A request asks several
 * times within one millisecond: the string of the last one is kept (any clock, so exact). */
export function iso(clock: Clock): string {
  const ms = clock.now();
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
