// Waiting without sleeping to pass: poll a condition until a deadline.
//
//   const run = await until('the run completed', async () => (await getRun(id)).status === 'completed' && run);
import assert from 'node:assert/strict';

/** Poll `probe` until it returns a truthy value; fail with `what` (and the last value) at the deadline. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  deadlineMs = 30_000,
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    const v = await probe();
    if (v) return v;
    last = v;
    if (Date.now() > deadline)
      assert.fail(
        `timed out after ${deadlineMs} ms waiting for ${what} (last: ${JSON.stringify(last)?.slice(0, 2000)})`,
      );
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
