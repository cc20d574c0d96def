// The one backoff policy (src/egress/backoff.ts): steps, jitter, attempts and the Retry-After
// clamp, pure (random injected), and the policies each caller builds on it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Backoff, nextWaitMs, retryMs, stepMs } from '../../src/egress/backoff.js';
import { pollBackoff } from '../../src/engine/nodes/a2a-invoke/machine.js';
import { parseSchedule, pushBackoff } from '../../src/push/schedule.js';

const low = () => 0;
const mid = () => 0.5;
const high = () => 1;
const HOUR = 3_600_000;

describe('Backoff: steps', () => {
  const doubling: Backoff = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 10_000, jitter: 'none' };

  it('doubles from the base after each failure, up to the ceiling', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6].map((n) => stepMs(doubling, n)),
      [1000, 2000, 4000, 8000, 10_000, 10_000],
    );
  });

  it('stays finite and at the ceiling however many failures', () => {
    assert.equal(stepMs(doubling, 1_000_000), 10_000);
    assert.equal(stepMs({ ...doubling, maxDelayMs: Number.MAX_SAFE_INTEGER }, 5000), 1000 * 2 ** 30);
  });

  it('takes explicit steps in order, the last one repeating', () => {
    const steps: Backoff = { maxAttempts: 99, baseDelayMs: 1, maxDelayMs: 400, steps: [100, 200, 400], jitter: 'none' };
    assert.deepEqual(
      [1, 2, 3, 4, 50].map((n) => stepMs(steps, n)),
      [100, 200, 400, 400, 400],
    );
  });

  it('spreads a step by its jitter: half fixed and half random (the default), ±20 %, or none', () => {
    const half: Backoff = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 10_000 };
    assert.deepEqual(
      [low, mid, high].map((r) => stepMs(half, 2, r)),
      [1000, 1500, 2000],
    );
    const around: Backoff = { ...half, jitter: 'around' };
    assert.deepEqual(
      [low, mid, high].map((r) => stepMs(around, 2, r)),
      [1600, 2000, 2400],
    );
    assert.deepEqual(
      [low, high].map((r) => stepMs(doubling, 2, r)),
      [2000, 2000],
    );
  });

  it('answers whole milliseconds with the real random source, within the jitter', () => {
    const half: Backoff = { maxAttempts: 10, baseDelayMs: 333, maxDelayMs: 10_000 };
    for (let i = 0; i < 200; i++) {
      const ms = stepMs(half, 3);
      assert.ok(Number.isInteger(ms) && ms >= 666 && ms <= 1332, String(ms));
    }
  });
});

describe('Backoff: attempts and Retry-After', () => {
  const policy: Backoff = { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 10_000, jitter: 'none' };

  it('answers null once the last attempt failed', () => {
    assert.equal(nextWaitMs(policy, 1), 1000);
    assert.equal(nextWaitMs(policy, 2), 2000);
    assert.equal(nextWaitMs(policy, 3), null);
    assert.equal(nextWaitMs(policy, 4, 5000), null, 'a Retry-After does not add an attempt');
  });

  it('never runs out with Infinity attempts', () => {
    assert.equal(nextWaitMs({ ...policy, maxAttempts: Number.POSITIVE_INFINITY }, 10_000), 10_000);
  });

  it('waits a longer Retry-After, a shorter one not', () => {
    assert.equal(retryMs(policy, 1, 7000), 7000);
    assert.equal(retryMs(policy, 2, 100), 2000);
    assert.equal(retryMs(policy, 2, undefined), 2000);
  });

  it('honours a Retry-After only up to the ceiling', () => {
    assert.equal(retryMs(policy, 1, 999_999_999_000), 10_000, 'Retry-After: 999999999 does not park the caller');
    assert.equal(nextWaitMs(policy, 1, 3_600_000), 10_000);
  });
});

describe('the policies the callers build', () => {
  it('pushes: one attempt per schedule step and one more, the default schedule clamping a Retry-After at 8 h', () => {
    const schedule = parseSchedule('5s,30s,2m,10m,30m,1h,2h,4h,8h,8h');
    const push = pushBackoff(schedule);
    assert.equal(push.maxAttempts, 11);
    assert.equal(push.maxDelayMs, 8 * HOUR);
    assert.equal(nextWaitMs(push, 1, undefined, high), 5000);
    assert.equal(nextWaitMs(push, 1, undefined, low), 2500);
    assert.equal(nextWaitMs(push, 1, 999_999_999_000, low), 8 * HOUR, 'a receiver cannot park a delivery for 31 years');
    assert.equal(nextWaitMs(push, 10, undefined, high), 8 * HOUR);
    assert.equal(nextWaitMs(push, 11, undefined, high), null, 'dead after the last step');
  });

  it('a2a.invoke polls: the poll minimum doubling to the maximum, ±20 %, until the deadline', () => {
    const poll = pollBackoff({ pollMinMs: 1000, pollMaxMs: 60_000 });
    assert.deepEqual(
      [1, 2, 3, 7, 8, 40].map((n) => stepMs(poll, n, mid)),
      [1000, 2000, 4000, 60_000, 60_000, 60_000],
    );
    assert.equal(stepMs(poll, 40, high), 72_000, 'the jitter spreads the ceiling too, as it always did');
    assert.equal(retryMs(poll, 1, 999_999_999_000, mid), 60_000, 'a peer’s Retry-After stops at the poll ceiling');
    assert.notEqual(nextWaitMs(poll, 1_000_000, undefined, mid), null);
  });
});
