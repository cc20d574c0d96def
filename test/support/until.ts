// The suite's one way to wait: poll a condition until a deadline, never sleep long enough to pass.
//
//   const run = await until('the run completed', async () => (await getRun(id)).status === 'completed' && run);
//   await until('the receiver got 2 pushes', () => log.length >= 2, { deadlineMs: 10_000, intervalMs: 50 });
//
// A probe may wait by itself (a long-poll of the event log): pass `intervalMs: 0`. A probe that
// knows the wait is hopeless (the server exited, the log ended) throws, and `until` rethrows.
import assert from 'node:assert/strict';

export interface UntilOptions {
  /** Give up after this long (default 30 s: generous for a loaded machine, never reached when all is well). */
  deadlineMs?: number;
  /** Pause between probes (default 20 ms); 0 when the probe itself waits. */
  intervalMs?: number;
  /** Added to the failure message: what was last seen (a snapshot, a server's output). */
  detail?: () => string;
}

type Probe<T> = () => Promise<T | undefined | null | false> | T | undefined | null | false;

/** Poll `probe` until it returns a truthy value, and return that; fail naming `what` at the deadline. */
export function until<T>(what: string, probe: Probe<T>, deadlineMs?: number, intervalMs?: number): Promise<T>;
export function until<T>(what: string, probe: Probe<T>, opts: UntilOptions): Promise<T>;
export async function until<T>(
  what: string,
  probe: Probe<T>,
  optsOrDeadline: UntilOptions | number = {},
  interval?: number,
): Promise<T> {
  const opts =
    typeof optsOrDeadline === 'number' ? { deadlineMs: optsOrDeadline, intervalMs: interval } : optsOrDeadline;
  const deadlineMs = opts.deadlineMs ?? 30_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + deadlineMs;
  for (let probes = 1; ; probes++) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) {
      const detail = opts.detail ? opts.detail() : `last: ${JSON.stringify(v)?.slice(0, 2000)}`;
      assert.fail(`timed out after ${deadlineMs} ms (${probes} probes) waiting for ${what}; ${detail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
