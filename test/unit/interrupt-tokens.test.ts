// Signed callback tokens of external-event interrupts: a token names one wait and verifies only
// under the key that signed it; anything altered, truncated or malformed verifies as nothing.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { hmacInterruptTokens } from '../../src/engine/interrupt-tokens.js';

describe('interrupt tokens', () => {
  const ref = { runId: 'run_abc', nodeId: 'wait', correlationId: 'run_abc:wait:0' };
  const tokens = hmacInterruptTokens(randomBytes(32));

  it('round-trips the wait it names, URL-safe', () => {
    const token = tokens.issue(ref);
    assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.deepEqual(tokens.verify(token), ref);
  });

  it('refuses another key, an altered body or signature, and malformed text', () => {
    const token = tokens.issue(ref);
    assert.equal(hmacInterruptTokens(randomBytes(32)).verify(token), undefined);
    const [body, mac] = token.split('.') as [string, string];
    const other = tokens.issue({ ...ref, nodeId: 'other' }).split('.')[0];
    assert.equal(tokens.verify(`${other}.${mac}`), undefined);
    assert.equal(tokens.verify(`${body}.${mac.slice(0, -2)}AA`), undefined);
    for (const bad of ['', '.', 'abc', `${body}.${mac}.x`, `${body}`]) assert.equal(tokens.verify(bad), undefined, bad);
  });
});
