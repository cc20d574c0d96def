// a2a.invoke waiting on a stream. A's polling is set to ten minutes wherever the test needs the
// stream to be the wake: only the stream can wake the run within the test, and A's
// handoff_peer_stream_wakes_total says it did.
// - an @a2a-js/sdk 1.x agent whose `slow` skill works until the test ends it;
// - a second Handoff process whose task stops at input-required for its own approval (the
//   `delegate` flow): A keeps its subscription through the interrupted state and wakes at the end;
// - a peer that closes every subscription right after its first event: A subscribes again only
//   when its node executes (the poll backoff), never in a loop of its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FlakyProxy, startFlakyProxy } from '../support/flaky-proxy.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import {
  callerEnv,
  events,
  startRun,
  tmp,
  untilStatus,
  untilWaitingOn,
  writeCallWorkflows,
} from '../support/two-hosts.js';
import { until } from '../support/until.js';

/** The sum of a counter's samples on a host's /metrics. */
async function counter(base: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

const wakes = (base: string) => counter(base, 'handoff_peer_stream_wakes_total');
const SLOW_POLLS = { HANDOFF_AGENT_POLL_MIN_MS: '600000', HANDOFF_AGENT_POLL_MAX_MS: '600000' };

describe('a2a.invoke: stream wait', () => {
  let v1: SdkV1Agent;
  let b: ServerProcess;
  let a: ServerProcess;

  before(async () => {
    v1 = await startSdkV1Agent({ slowMs: 600_000 });
    b = await startServer({ dataDir: tmp('b') });
    a = await startServer({
      dataDir: tmp('a'),
      env: callerEnv(writeCallWorkflows(), { v1: v1.url, reviewer: b.url }, SLOW_POLLS),
    });
  });
  after(async () => {
    await killAllServers();
    await v1?.close();
  });

  it('the peer task changes: the held stream wakes the run, which reads the result', async () => {
    const before = await wakes(a.url);
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
    assert.ok((await wakes(a.url)) > before, 'the stream woke the run');
  });

  it("a Handoff peer's task waits for its own approval: the stream goes on through input-required and wakes A at the end", async () => {
    const before = await wakes(a.url);
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'reviewer', skill: 'approval', prompt: 'd' });
    // B answers the send at input-required already (its approval gate), or A's stream says so.
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    const res = await postJson(`${b.url}/v1/runs/${peerTaskId}/interrupts/review`, {
      resumeValue: { action: 'accept' },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.state, 'completed');
    assert.ok((await wakes(a.url)) > before, 'the stream held through input-required woke the run');
  });
});

describe('a2a.invoke: a peer that closes every subscription at once', () => {
  let v1: SdkV1Agent;
  let cutting: FlakyProxy;
  let a: ServerProcess;

  before(async () => {
    v1 = await startSdkV1Agent({ slowMs: 600_000 });
    cutting = await startFlakyProxy(v1.url, { cutStreams: true });
    // Fast polls: the node executes every 50–250 ms; each execution may subscribe once.
    a = await startServer({ dataDir: tmp('a'), env: callerEnv(writeCallWorkflows(), { cutting: cutting.url }) });
  });
  after(async () => {
    await killAllServers();
    await cutting?.close();
    await v1?.close();
  });

  it('A subscribes again only when its node executes (the poll backoff), and the poll completes the run', async () => {
    const executions = () => counter(a.url, 'handoff_node_executions_total', { type: 'a2a.invoke' });
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'cutting', skill: 'slow', prompt: 'c' });
    const linked = await until('the call linked', async () =>
      (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked'),
    );
    // Let the run go through several polls, each followed by a cut subscription.
    await until('five subscriptions cut', () => cutting.streams >= 5, { deadlineMs: 60_000, intervalMs: 20 });
    await v1.finish(linked.payload.peerTaskId as string, { state: 'completed', text: 'finished by the test' });
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const subscribed = await counter(a.url, 'handoff_peer_stream_subscriptions_total');
    assert.ok(subscribed >= 5, `A subscribed ${subscribed} times`);
    assert.ok(
      cutting.streams <= (await executions()),
      `${cutting.streams} subscriptions for ${await executions()} executions: at most one per execution`,
    );
  });
});
