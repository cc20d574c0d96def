// The push retry schedule: backoff with jitter, and the parsing of HANDOFF_PUSH_RETRY_SCHEDULE.
// (The outbox itself, claim order included, is part of the store contract:
// test/integration/store-contract-outbox.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs, parseSchedule } from '../../src/push/schedule.js';

describe('backoffMs', () => {
  const schedule = [100, 200, 400];

  /** backoffMs(schedule, attempt, () => random) === ms for each [attempt, random, ms]. */
  const expect = (cases: Array<[number, number, number]>) => {
    for (const [attempt, random, ms] of cases) {
      assert.equal(
        backoffMs(schedule, attempt, () => random),
        ms,
        `attempt ${attempt}, random ${random}`,
      );
    }
  };

  it('is half the ceiling fixed plus up to half random (jitter)', () => {
    expect([
      [1, 0, 50],
      [1, 0.5, 75],
      [1, 1, 100],
      [2, 0, 100],
      [2, 1, 200],
      [3, 0.25, 250],
    ]);
  });

  it('uses the attempt-th ceiling and stays at the last one past the end', () => {
    expect([
      [3, 1, 400],
      [4, 1, 400],
      [99, 0, 200],
    ]);
  });

  it('is always within [ceiling/2, ceiling] with the real random source', () => {
    for (let attempt = 1; attempt <= 5; attempt++) {
      const ceiling = schedule[Math.min(attempt - 1, schedule.length - 1)]!;
      for (let i = 0; i < 200; i++) {
        const ms = backoffMs(schedule, attempt);
        assert.ok(ms >= ceiling / 2 && ms <= ceiling, `attempt ${attempt}: ${ms}`);
        assert.ok(Number.isInteger(ms));
      }
    }
  });

  it('falls back to 1 s with an empty schedule', () => {
    assert.equal(
      backoffMs([], 1, () => 1),
      1000,
    );
  });
});

describe('parseSchedule', () => {
  it('reads ms, s, m and h, with spaces and fractions', () => {
    assert.deepEqual(parseSchedule('100ms,200ms,400ms'), [100, 200, 400]);
    assert.deepEqual(parseSchedule('1s, 5s ,30s,2m,1h'), [1000, 5000, 30_000, 120_000, 3_600_000]);
    assert.deepEqual(parseSchedule('1.5s'), [1500]);
    assert.deepEqual(parseSchedule('0ms'), [0]);
  });

  it('parses the default schedule of the configuration', () => {
    const s = parseSchedule('5s,30s,2m,10m,30m,1h,2h,4h,8h,8h');
    assert.equal(s.length, 10);
    assert.equal(s[0], 5000);
    assert.equal(s.at(-1), 8 * 3_600_000);
  });

  it('refuses anything else, naming the entry', () => {
    for (const bad of ['', '5', '1d', 'abc', '1s,,2s', '-1s', '1 s', '1S', 's']) {
      assert.throws(() => parseSchedule(bad), /invalid retry schedule entry/, JSON.stringify(bad));
    }
    assert.throws(() => parseSchedule('1s,2x'), /'2x'/);
  });
});
