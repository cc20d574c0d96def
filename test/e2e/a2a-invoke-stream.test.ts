// a2a.invoke waiting on a stream: A holds a subscription to the peer task (an @a2a-js/sdk 1.x agent
// whose `slow` skill works until the test ends it) and wakes its run at the change. A's polling is
// set to ten minutes, so only the stream can wake it within the test.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

describe('a2a.invoke: stream wait', () => {
  let v1: SdkV1Agent;
  let a: ServerProcess;

  before(async () => {
    v1 = await startSdkV1Agent({ slowMs: 600_000 });
    const slowPolls = { HANDOFF_AGENT_POLL_MIN_MS: '600000', HANDOFF_AGENT_POLL_MAX_MS: '600000' };
    a = await startServer({ dataDir: tmp('a'), env: callerEnv(writeCallWorkflows(), { v1: v1.url }, slowPolls) });
  });
  after(async () => {
    await killAllServers();
    await v1?.close();
  });

  it('the peer task changes: the held stream wakes the run, which reads the result', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'v1', skill: 'slow', prompt: 's' });
    // The peer answered at once (submitted or working); the run sleeps on it.
    const linked = await until('the call linked', async () =>
      (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked'),
    );
    const peerTaskId = linked.payload.peerTaskId as string;
    assert.deepEqual(linked.payload.waitModes, ['stream', 'poll']);
    await until('A subscribed to the task', () =>
      v1.requests.some((r) => String(r.headers.accept).includes('text/event-stream')),
    );
    await v1.finish(peerTaskId, { state: 'completed', text: 'finished by the test' });
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.message.text, 'finished by the test');
  });
});
