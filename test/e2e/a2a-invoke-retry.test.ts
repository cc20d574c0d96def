// a2a.invoke against a peer that answers 503 / 429 with Retry-After: transport failures are retried
// and never fail the run before `timeoutMs`; a peer that never recovers fails the node
// external_call_failed once the deadline passes. The peer is an @a2a-js/sdk 1.0 agent behind a
// proxy that plans the faults (test/support/flaky-proxy.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FlakyProxy, startFlakyProxy } from '../support/flaky-proxy.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';

const TIMEOUT_MS = 8000;

describe('a2a.invoke: 503 / 429 with Retry-After on send', () => {
  let agent: SdkV1Agent;
  let flaky: FlakyProxy;
  let down: FlakyProxy;
  let a: ServerProcess;

  before(async () => {
    agent = await startSdkV1Agent();
    flaky = await startFlakyProxy(agent.url, {
      faults: [
        { status: 503, retryAfter: '1' },
        { status: 429, retryAfter: '1' },
      ],
    });
    down = await startFlakyProxy(agent.url, { always: { status: 503, retryAfter: '1' } });
    const env = callerEnv(writeCallWorkflows(TIMEOUT_MS), { flaky: flaky.url, down: down.url });
    a = await startServer({ dataDir: tmp('a'), env });
  });
  after(async () => {
    await killAllServers();
    await flaky?.close();
    await down?.close();
    await agent?.close();
  });

  it('a 503 then a 429: the send is retried after each and the run completes', async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'flaky', skill: 'echo', prompt: 'again' });
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.artifacts[0].parts[0].text, 'again');
    assert.equal(flaky.faulted, 2);
    assert.ok(flaky.forwarded >= 1);
    assert.ok(!(await events(a.url, runId)).some((e) => e.type === 'node.failed'));
  });

  it('a peer that never recovers: node.failed external_call_failed once timeoutMs has passed', async () => {
    const t0 = Date.now();
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'down', skill: 'echo', prompt: 'x' });
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'external_call_failed');
    assert.match(done.error.message, /gave up after 8000 ms/);
    // Retried, not failed at the first 503; and not before the deadline.
    assert.ok(down.faulted >= 2, `only ${down.faulted} attempt(s)`);
    assert.ok(Date.now() - t0 >= TIMEOUT_MS);
    assert.equal(down.forwarded, 0);
    const failed = (await events(a.url, runId)).filter((e) => e.type === 'node.failed');
    assert.equal(failed.length, 1);
  });
});
