// Outcomes of outbound calls (httpCall, llmChat) in tests.
import assert from 'node:assert/strict';

/** The outcome as a failure; fails the test, showing the outcome, when it is a success. */
export function failureOf<T extends { ok: boolean }>(out: T): Extract<T, { ok: false }> {
  assert.equal(out.ok, false, `expected a failure, got ${JSON.stringify(out)}`);
  return out as Extract<T, { ok: false }>;
}
