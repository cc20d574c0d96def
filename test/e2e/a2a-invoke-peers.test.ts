// a2a.invoke calling agents that are not Handoff: @a2a-js/sdk servers speaking A2A 0.3 and 1.0
// (JSON-RPC and HTTP+JSON), the failure mappings, and bad input — each a precise error and no call.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AUTH_QUESTION } from '../support/peer-skills.js';
import { type SdkSampleServer, startSdkSampleServer } from '../support/sdk-sample-server.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { cliPath, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';

const execFileAsync = promisify(execFile);

describe('a2a.invoke: foreign A2A peers and bad input', () => {
  let v03: SdkSampleServer;
  let v1: SdkV1Agent;
  let garbage: Server;
  let a: ServerProcess;

  before(async () => {
    v03 = await startSdkSampleServer();
    v1 = await startSdkV1Agent();
    garbage = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"not": "a card"'),
    );
    await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r));
    const garbageUrl = `http://127.0.0.1:${(garbage.address() as AddressInfo).port}`;
    const agents = { v03: v03.url, v1: v1.url, rest: v1.restFirstCardUrl, broken: garbageUrl };
    a = await startServer({ dataDir: tmp('a'), env: callerEnv(writeCallWorkflows(), agents) });
  });
  after(async () => {
    await killAllServers();
    await v03?.close();
    await v1?.close();
    garbage?.close();
  });

  const call = async (agent: string, skill: string, prompt = 'hi', workflow = 'call_auto_wait') => {
    const runId = await startRun(a.url, workflow, { agent, skill, prompt });
    return { runId, done: await untilStatus(a.url, runId, ['completed', 'failed', 'cancelled', 'waiting-input']) };
  };

  for (const [agent, version, binding] of [
    ['v03', '0.3', 'JSONRPC'],
    ['v1', '1.0', 'JSONRPC'],
    ['rest', '1.0', 'HTTP+JSON'],
  ] as const) {
    it(`an @a2a-js/sdk agent (A2A ${version}, ${binding}): its result lands in the run`, async () => {
      const { runId, done } = await call(agent, 'echo', `hello ${agent}`);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      const out = done.nodeStates.call;
      assert.equal(out.state, 'completed');
      assert.equal(out.artifacts[0].parts[0].text, `hello ${agent}`);
      assert.equal(out.artifacts[0].parts[0].contentTrust, 'untrusted');
      const linked = (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked');
      assert.equal(linked.payload.protocolVersion, version);
      assert.equal(linked.payload.binding, binding);
      // The run's trace and its identity reached the peer.
      const agentObj = agent === 'v03' ? v03 : v1;
      assert.ok(agentObj.requests.some((r) => /^00-[0-9a-f]{32}-/.test(String(r.headers.traceparent))));
    });
  }

  it('the SDK agent rejects: the node fails with reason rejected_by_remote', async () => {
    const { done } = await call('v1', 'reject');
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'rejected_by_remote');
    assert.equal(done.error.details.reason, 'rejected_by_remote');
    assert.match(done.error.message, /refuses every task/);
  });

  it('the SDK agent fails: external_task_failed with its status message', async () => {
    const { done } = await call('v03', 'fail');
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'external_task_failed');
    assert.match(done.error.message, /always fails/);
  });

  const answer = async (runId: string, text: string) => {
    const res = await postJson(`${a.url}/v1/runs/${runId}/interrupts/call`, {
      resumeValue: { answers: { answer: text } },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };

  const untilDone = async (runId: string, peerTaskId: string, text: string) => {
    const end = await untilStatus(a.url, runId, ['completed', 'failed']);
    assert.equal(end.status, 'completed', JSON.stringify(end.error));
    assert.equal(end.nodeStates.call.taskId, peerTaskId, 'the answer went into the same peer task');
    assert.equal(end.nodeStates.call.artifacts[0].parts[0].text, text);
  };

  // An @a2a-js/sdk 1.x peer answers a non-blocking send into a parked task with the task as stored,
  // still at the question, before its executor takes the answer up: the node waits for the task to
  // move instead of asking its own caller again.
  for (const agent of ['v03', 'v1'] as const) {
    it(`clarify relay with an SDK peer (${agent}): its question, our answer, its greeting`, async () => {
      const { runId, done } = await call(agent, 'clarify', 'hi', 'call_auto_clarify');
      assert.equal(done.status, 'waiting-input', JSON.stringify(done.error));
      assert.equal(done.interrupt.payload.questions[0].question, 'What is your name?');
      await answer(runId, 'Ada');
      await untilDone(runId, done.interrupt.payload.peer.taskId, 'Hello, Ada!');
    });
  }

  const untilAuth = async (agent: string) => {
    const { runId, done } = await call(agent, 'auth', 'hi', 'call_auto_clarify');
    assert.equal(done.status, 'waiting-input', JSON.stringify(done.error));
    assert.equal(done.interrupt.payload.metadata.subkind, 'auth');
    assert.equal(done.interrupt.payload.peer.state, 'auth-required');
    assert.equal(done.interrupt.payload.questions[0].question, AUTH_QUESTION);
    return { runId, peerTaskId: done.interrupt.payload.peer.taskId as string };
  };

  for (const [agent, what] of [
    ['v03', '0.3'],
    ['v1', '1.0 JSON-RPC'],
    ['rest', '1.0 HTTP+JSON'],
  ] as const) {
    it(`a peer at auth-required (${what}): the run waits for input with subkind auth; the answer is relayed`, async () => {
      const { runId, peerTaskId } = await untilAuth(agent);
      await answer(runId, 'Ada');
      await untilDone(runId, peerTaskId, 'Signed in as Ada');
    });
  }

  it("a 1.0 peer at auth-required answered by the CLI (`handoff answer`, an A2A reply to A's own task)", async () => {
    const { runId, peerTaskId } = await untilAuth('v1');
    const data = JSON.stringify({ answers: { answer: 'Grace' } });
    await execFileAsync(process.execPath, [cliPath(), 'answer', a.url, runId, '--data', data]);
    await untilDone(runId, peerTaskId, 'Signed in as Grace');
  });

  it("onInputRequired 'fail': a peer's question fails the node", async () => {
    const { done } = await call('v1', 'clarify', 'hi', 'call_auto_fail');
    assert.equal(done.status, 'failed');
    assert.equal(done.error.code, 'external_input_required');
  });

  describe('bad input: a precise error, nothing sent', () => {
    const refused = async (agent: string, pattern: RegExp) => {
      const before = v1.requests.length + v03.requests.length;
      const { done } = await call(agent, 'echo');
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'external_call_refused', JSON.stringify(done.error));
      assert.match(done.error.message, pattern);
      assert.equal(v1.requests.length + v03.requests.length, before, 'no peer was called');
    };

    it('an unknown agent name', () => refused('nobody', /no agent 'nobody' in HANDOFF_AGENTS/));
    it('a URL from input pointing at loopback', () => refused('https://127.0.0.1:9/', /127\.0\.0\.1/));
    it('a URL from input pointing at the metadata address', () =>
      refused('https://169.254.169.254/latest', /169\.254\.169\.254/));
    it('a plain http URL from input', () => refused('http://example.com/agent', /must use https/));

    it('an unreadable agent card: failed with the peer error, no retry loop', async () => {
      const { done } = await call('broken', 'echo');
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'external_call_failed');
      assert.match(done.error.message, /unreadable/);
    });

    it('a callback for an unknown wait id: 404, nothing woken', async () => {
      const res = await postJson(`${a.url}/v1/a2a/callbacks/pw_nope`, { id: 'x', status: { state: 'completed' } });
      assert.equal(res.status, 404);
    });
  });
});
