// The engine's sense of time. Injected (Engine, Runner, the store) so tests can move a durable
// timer's clock instead of waiting for it.
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** The clock's time as an ISO 8601 string (event and record timestamps). */
export const iso = (clock: Clock): string => new Date(clock.now()).toISOString();
