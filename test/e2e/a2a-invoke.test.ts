// a2a.invoke between two real Handoff processes (SQLite): A's run hands work to B and waits for it
// durably. Crashes of either side, the clarification relay, cancel both ways, a peer down at the
// call, the failure mappings, and polling forced.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  callerEnv,
  events,
  getRun,
  startRun,
  tmp,
  untilStatus,
  untilWaitingOn,
  writeCallWorkflows,
} from '../support/two-hosts.js';
import {
  cliPath,
  getJson,
  killAllServers,
  postJson,
  type ServerProcess,
  startServer,
} from '../support/server-process.js';
import { until } from '../support/until.js';

const wf = writeCallWorkflows();

const execFileAsync = promisify(execFile);

describe('a2a.invoke: a Handoff run calls another Handoff', () => {
  let b: ServerProcess;
  let a: ServerProcess;
  const bDir = tmp('b');
  const aDir = tmp('a');
  let aEnv: Record<string, string>;

  before(async () => {
    b = await startServer({ dataDir: bDir });
    aEnv = callerEnv(wf, { reviewer: b.url });
    a = await startServer({ dataDir: aDir, env: aEnv });
  });
  after(() => killAllServers());

  const approveOnB = async (taskId: string) => {
    const res = await postJson(`${b.url}/v1/runs/${taskId}/interrupts/review`, { resumeValue: { action: 'accept' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };

  it("delegate: B waits for approval, A is SIGKILLed, B approves, A restarts and completes with B's artifact", async () => {
    const runId = await startRun(a.url, 'delegate', { prompt: 'ship it' });
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    const linked = (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked');
    assert.equal(linked?.payload.peerTaskId, peerTaskId);
    assert.equal(linked?.payload.agent, 'reviewer');
    await a.kill();
    await untilStatus(b.url, peerTaskId, ['waiting-approval']);
    await approveOnB(peerTaskId);
    a = await startServer({ dataDir: aDir, env: aEnv, port: a.port });
    const done = await untilStatus(a.url, runId, ['completed', 'failed', 'cancelled']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const published = done.nodeStates.publish;
    assert.equal(published.reviewer, peerTaskId);
    assert.equal(published.approved.text, 'Draft: Draft: ship it');
    // Exactly one task on B for this call, whatever A re-executed.
    const onB = await getJson(`${b.url}/v1/runs?workflowId=approval&limit=100`);
    assert.equal(onB.body.runs.filter((r: any) => r.runId === peerTaskId).length, 1);
    const review = done.nodeStates.review;
    assert.equal(review.state, 'completed');
    assert.equal(review.contentTrust, 'untrusted');
    assert.equal(review.artifacts[0].parts[0].contentTrust, 'untrusted');
    const completed = (await events(a.url, runId)).find((e) => e.type === 'node.completed' && e.nodeId === 'review');
    assert.equal(completed.payload.peer.task.taskId, peerTaskId, 'the replay cache records the peer task');
    // A Handoff peer's card leads with A2A 1.0, which the client prefers.
    assert.equal(completed.payload.peer.protocolVersion, '1.0');
    assert.ok(completed.payload.peer.recordedAt);
    assert.doesNotMatch(JSON.stringify(await events(a.url, runId)), /token/i);
  });

  it('B is SIGKILLed and restarted while A waits: A still completes', async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'x' });
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    // What it waits on is in the A2A Task too (what `handoff watch` shows).
    const got = await postJson(`${a.url}/v1/a2a`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/get',
      params: { id: runId },
    });
    assert.deepEqual(got.body.result.metadata.openwop.waitingOn, {
      agent: 'reviewer',
      peerTaskId,
      state: 'input-required',
    });
    await b.kill();
    b = await startServer({ dataDir: bDir, port: b.port });
    await approveOnB(peerTaskId);
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.artifacts[0].parts[0].data.text, 'Draft: x');
  });

  it('clarify: B asks, A opens a clarification carrying the question, the answer is relayed to the same B task', async () => {
    const runId = await startRun(a.url, 'call_auto_clarify', { agent: 'reviewer', skill: 'clarify', prompt: 'hello' });
    const waiting = await untilStatus(a.url, runId, ['waiting-input', 'failed']);
    assert.equal(waiting.status, 'waiting-input', JSON.stringify(waiting.error));
    const ask = waiting.interrupt;
    assert.equal(ask.kind, 'clarification');
    assert.equal(ask.payload.peer.agent, 'reviewer');
    assert.equal(ask.payload.contentTrust, 'untrusted');
    assert.match(ask.payload.questions[0].question, /greeting/);
    const peerTaskId = ask.payload.peer.taskId as string;
    const res = await postJson(`${a.url}/v1/runs/${runId}/interrupts/call`, {
      resumeValue: { answers: { answer: 'Ada' } },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.taskId, peerTaskId);
    assert.deepEqual(done.nodeStates.call.artifacts[0].parts[0].data, { answer: 'Ada' });
    const onB = await getRun(b.url, peerTaskId);
    assert.equal(onB.status, 'completed');
  });

  it("clarify answered by the CLI (`handoff answer`, an A2A reply to A's own task): relayed to the same B task", async () => {
    const runId = await startRun(a.url, 'call_auto_clarify', { agent: 'reviewer', skill: 'clarify', prompt: 'hello' });
    const waiting = await untilStatus(a.url, runId, ['waiting-input', 'failed']);
    assert.equal(waiting.status, 'waiting-input', JSON.stringify(waiting.error));
    const peerTaskId = waiting.interrupt.payload.peer.taskId as string;
    // The run is A's A2A task: `handoff answer` sends message/send into it and waits for it to
    // settle (exit 0 = completed).
    const data = JSON.stringify({ answers: { answer: 'Grace' } });
    await execFileAsync(process.execPath, [cliPath(), 'answer', a.url, runId, '--data', data]);
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.taskId, peerTaskId);
    assert.deepEqual(done.nodeStates.call.artifacts[0].parts[0].data, { answer: 'Grace' });
    assert.equal((await getRun(b.url, peerTaskId)).status, 'completed');
  });

  it("cancelling A's run cancels B's task", async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'c' });
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    const res = await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await untilStatus(a.url, runId, ['cancelled']);
    await untilStatus(b.url, peerTaskId, ['cancelled']);
  });

  it("B cancels its task: A's run ends cancelled with reason cross_protocol_cancel", async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'd' });
    const peerTaskId = await untilWaitingOn(a.url, runId, 'input-required');
    await postJson(`${b.url}/v1/runs/${peerTaskId}/cancel`, {});
    await untilStatus(a.url, runId, ['cancelled']);
    const ended = (await events(a.url, runId)).find((e) => e.type === 'run.cancelled');
    assert.equal(ended.payload.reason, 'cross_protocol_cancel');
  });

  it("B fails the task: the node fails external_task_failed with B's message", async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'fail', prompt: 'f' });
    const done = await untilStatus(a.url, runId, ['failed', 'completed']);
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'external_task_failed');
    assert.equal(done.error.details.agent, 'reviewer');
  });

  it('B is down when A calls and up later: A retries and completes', async () => {
    await b.kill();
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'reviewer', skill: 'echo', prompt: 'late' });
    // A keeps retrying without failing the run.
    await until('A retried the send', async () => {
      const s = await getRun(a.url, runId);
      assert.notEqual(s.status, 'failed', JSON.stringify(s.error));
      return s.status === 'running';
    });
    b = await startServer({ dataDir: bDir, port: b.port });
    const done = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.state, 'completed');
  });
});
