// retryDelayMs: the wait between attempts of an outbound call, pure (random injected).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { retryDelayMs, type RetryPolicy } from '../../src/calls/retry.js';

const policy: RetryPolicy = { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 10_000 };
const low = () => 0;
const high = () => 1;

describe('retryDelayMs', () => {
  it('doubles the ceiling per failed attempt, waiting half of it plus a random half', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((a) => retryDelayMs(policy, a, undefined, low)),
      [500, 1000, 2000, 4000],
    );
    assert.deepEqual(
      [1, 2, 3, 4].map((a) => retryDelayMs(policy, a, undefined, high)),
      [1000, 2000, 4000, 8000],
    );
    assert.equal(
      retryDelayMs(policy, 2, undefined, () => 0.5),
      1500,
    );
  });

  it('never waits longer than maxDelayMs', () => {
    const long: RetryPolicy = { maxAttempts: 100, baseDelayMs: 1000, maxDelayMs: 10_000 };
    assert.equal(retryDelayMs(long, 5, undefined, high), 10_000);
    assert.equal(retryDelayMs(long, 80, undefined, high), 10_000);
    assert.equal(retryDelayMs(long, 80, undefined, low), 5000);
  });

  it('waits at least what Retry-After asks, up to maxDelayMs', () => {
    assert.equal(retryDelayMs(policy, 1, 7000, low), 7000);
    assert.equal(retryDelayMs(policy, 1, 100, low), 500, 'a shorter Retry-After does not shorten the backoff');
    assert.equal(retryDelayMs(policy, 1, 3_600_000, low), 10_000, 'a server cannot park the run for an hour');
    assert.equal(retryDelayMs(policy, 1, 0, low), 500);
  });

  it('answers null once the attempts are used up', () => {
    assert.equal(retryDelayMs(policy, 5, undefined, low), null);
    assert.equal(retryDelayMs(policy, 6, 1000, low), null);
    assert.equal(retryDelayMs({ ...policy, maxAttempts: 1 }, 1, undefined, low), null);
  });
});
