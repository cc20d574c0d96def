// a2a.invoke's `timeoutMs` in every state of the node (issue 33, 11): a peer that never answers a
// request, and a relayed clarification nobody answers, both end the run at the deadline, within a
// small margin — measured on the run's own record (createdAt → completedAt). And a tasks/get answer
// about another task is refused (issue 33, 10). Real peers on loopback: an @a2a-js/sdk 1.0 agent,
// a proxy in front of it that asks about another task, a server that never answers a POST.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Peers } from '../../src/peers/client.js';
import { type FlakyProxy, startFlakyProxy } from '../support/flaky-proxy.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { SAMPLE_QUESTION } from '../support/peer-skills.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

const TIMEOUT_MS = 2_000;
/** How late past `timeoutMs` a run may end: a timer's claim and one commit, on a busy machine. */
const MARGIN_MS = 1_500;
const RUN = { runId: 'run_deadlines', callerAgentId: 'https://caller.example/agent' };

/** A card naming `base` itself as the JSON-RPC 1.0 endpoint. */
const cardAt = (base: string): string =>
  JSON.stringify({
    name: 'mute',
    description: 'answers its card, never a call',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${base}a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });

const elapsed = (run: { createdAt: string; completedAt: string }): number =>
  Date.parse(run.completedAt) - Date.parse(run.createdAt);

describe('a2a.invoke timeoutMs holds in every state', () => {
  let agent: SdkV1Agent;
  let mute: HttpsReceiver;
  let liar: FlakyProxy;
  let otherTaskId = '';
  let peers: Peers;
  let a: TestHost;

  before(async () => {
    agent = await startSdkV1Agent();
    mute = await startHttpsReceiver({ tls: false });
    mute.behave((req) =>
      req.method === 'GET'
        ? { headers: { 'content-type': 'application/json' }, body: cardAt(mute.url) }
        : { hang: true },
    );
    peers = new Peers({
      registry: new Map([['v1', { name: 'v1', cardUrl: `${agent.url}/.well-known/agent-card.json` }]]),
      timeoutMs: 5_000,
    });
    // A finished task of someone else's, which the liar answers every tasks/get with.
    const v1 = await peers.resolve({ agent: 'v1' }, RUN);
    const other = await v1.send({ messageId: randomUUID(), text: 'not yours', skillId: 'echo' });
    assert.equal(other.kind, 'task');
    otherTaskId = other.kind === 'task' ? other.task.id : '';
    await until('the other task completes', async () => (await v1.getTask(otherTaskId)).status.state === 'completed');
    liar = await startFlakyProxy(agent.url, {
      rewrite: (body) => {
        const rpc = JSON.parse(body) as { method?: string; params?: { id?: string } };
        if ((rpc.method === 'GetTask' || rpc.method === 'tasks/get') && rpc.params) rpc.params.id = otherTaskId;
        return JSON.stringify(rpc);
      },
    });
    // Listening starts every pass of a host, the peer cancels' too.
    a = await startTestHost({
      startRunner: false,
      workflows: [writeCallWorkflows(TIMEOUT_MS)],
      env: {
        HANDOFF_AGENTS: `v1=${agent.url},mute=${mute.url},liar=${liar.url}`,
        // Far longer than the node's timeoutMs: the node's deadline, not this, must end each request.
        HANDOFF_AGENT_TIMEOUT_MS: '60000',
        HANDOFF_AGENT_POLL_MIN_MS: '50',
        HANDOFF_AGENT_POLL_MAX_MS: '250',
      },
    });
    await a.host.listen();
  });
  after(async () => {
    await a?.close();
    await peers?.close();
    await liar?.close();
    await mute?.close();
    await agent?.close();
  });

  it('a peer that never answers the send: the run fails at timeoutMs, not at the request timeout', async () => {
    const runId = await a.createRun('call_poll_wait', { agent: 'mute', skill: 'echo', prompt: 'hello?' });
    const run = await a.waitForStatus(runId, ['failed', 'completed']);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'external_call_failed');
    assert.match(run.error.message, new RegExp(`gave up after ${TIMEOUT_MS} ms`));
    assert.ok(
      mute.requests.some((r) => r.method === 'POST'),
      'the send went out',
    );
    const took = elapsed(run);
    assert.ok(took >= TIMEOUT_MS && took <= TIMEOUT_MS + MARGIN_MS, `ended after ${took} ms`);
    // Its cancel pass asks the mute peer for the task of the lost send (and waits, as for any
    // peer, up to HANDOFF_AGENT_TIMEOUT_MS): closing it ends that wait.
    await mute.close();
  });

  it('a relayed clarification nobody answers expires at timeoutMs; the peer task is cancelled', async () => {
    const runId = await a.createRun('call_poll_clarify', { agent: 'v1', skill: 'clarify', prompt: 'hi' });
    const waiting = await a.waitForStatus(runId, ['waiting-input', 'failed', 'completed']);
    assert.equal(waiting.status, 'waiting-input');
    // The question is shown with the call's deadline, which is its expiry.
    assert.ok(JSON.stringify(waiting.interrupt.payload).includes(SAMPLE_QUESTION));
    assert.ok(Date.parse(waiting.interrupt.expiresAt) - Date.parse(waiting.createdAt) >= TIMEOUT_MS);
    const run = await a.waitForStatus(runId, ['failed', 'completed']);
    assert.equal(run.status, 'failed', JSON.stringify(run));
    assert.equal(run.error.code, 'external_call_failed');
    assert.match(run.error.message, new RegExp(`did not end within ${TIMEOUT_MS} ms`));
    const took = elapsed(run);
    assert.ok(took >= TIMEOUT_MS && took <= TIMEOUT_MS + MARGIN_MS, `ended after ${took} ms`);
    assert.ok((await a.events(runId)).some((e) => e.type === 'interrupt.expired'));
    const peerTaskId = run.error.details.peerTaskId as string;
    const v1 = await peers.resolve({ agent: 'v1' }, RUN);
    await until('the peer task is cancelled', async () => (await v1.getTask(peerTaskId)).status.state === 'canceled');
  });

  it('a tasks/get answer about another task is refused as an invalid agent response', async () => {
    const runId = await a.createRun('call_poll_wait', { agent: 'liar', skill: 'slow', prompt: 'mine' });
    const run = await a.waitForStatus(runId, ['failed', 'completed']);
    assert.equal(run.status, 'failed', JSON.stringify(run.nodeStates));
    assert.equal(run.error.code, 'external_call_failed');
    assert.equal(run.error.details.peerCode, -32006);
    assert.ok(run.error.message.includes(`answered with task '${otherTaskId}'`), run.error.message);
    assert.ok(!JSON.stringify(run).includes('not yours'), "the other task's artifact was taken");
  });
});
