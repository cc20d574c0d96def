// Peer tasks nobody waits for any more (issue 33, 9 and "also"). A send whose answer is lost still
// made a task on the peer: cancelling the calling run while the send is being retried must cancel
// it too (found by ListTasks of the call's own context); and on a peer that does not dedup by
// messageId (the official SDK), each attempt made a task of its own: once the node records the one
// it uses, the others are cancelled. Real peers on loopback: a second Handoff host, @a2a-js/sdk
// agents (1.0 and 0.3), each behind a proxy that forwards a send and loses its answer.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Peers } from '../../src/peers/client.js';
import { contextIdFor } from '../../src/peers/identity.js';
import { type FlakyProxy, startFlakyProxy } from '../support/flaky-proxy.js';
import { startTestHost, type TestHost } from '../support/host.js';
import { type SdkSampleServer, startSdkSampleServer } from '../support/sdk-sample-server.js';
import { type SdkV1Agent, startSdkV1Agent } from '../support/sdk-v1-agent.js';
import { writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

const RUN = { runId: 'run_orphans', callerAgentId: 'https://caller.example/agent' };
/** The context a2a.invoke sends its call's messages in (the node `call`, first visit). */
const contextOf = (runId: string): string => contextIdFor(`${runId}:call:0`);

describe('peer tasks made by a send whose answer was lost', () => {
  let b: TestHost;
  let sdk: SdkV1Agent;
  let v03: SdkSampleServer;
  let lossyB: FlakyProxy;
  let lossySdk: FlakyProxy;
  let lossyV03: FlakyProxy;
  let a: TestHost;
  let peers: Peers;

  before(async () => {
    b = await startTestHost({ startRunner: true });
    const bUrl = await b.host.listen();
    [sdk, v03] = await Promise.all([startSdkV1Agent(), startSdkSampleServer()]);
    lossyB = await startFlakyProxy(bUrl, { loseSends: Number.POSITIVE_INFINITY });
    lossySdk = await startFlakyProxy(sdk.url, { loseSends: 1 });
    lossyV03 = await startFlakyProxy(v03.url, { loseSends: Number.POSITIVE_INFINITY });
    a = await startTestHost({
      startRunner: false,
      workflows: [writeCallWorkflows(60_000)],
      env: {
        HANDOFF_AGENTS: `reviewer=${lossyB.url},sdk=${lossySdk.url},old=${lossyV03.url}`,
        HANDOFF_AGENT_POLL_MIN_MS: '50',
        HANDOFF_AGENT_POLL_MAX_MS: '250',
        HANDOFF_AGENT_TIMEOUT_MS: '5000',
      },
    });
    // Listening starts the peer cancel pass too.
    await a.host.listen();
    peers = new Peers({
      registry: new Map([['sdk', { name: 'sdk', cardUrl: `${sdk.url}/.well-known/agent-card.json` }]]),
      timeoutMs: 5_000,
    });
  });
  after(async () => {
    await a?.close();
    await peers?.close();
    await Promise.all([lossyB?.close(), lossySdk?.close(), lossyV03?.close()]);
    await Promise.all([sdk?.close(), v03?.close()]);
    await b?.close();
  });

  const runsOfB = async (): Promise<Array<{ runId: string; status: string }>> => (await b.get('/v1/runs')).body.runs;

  it("cancelling the caller while the send is retried cancels the task the peer made (B's approval)", async () => {
    const runId = await a.createRun('call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'lost' });
    await until('B made the task and its answer was lost', async () => {
      const runs = await runsOfB();
      return lossyB.lost >= 2 && runs.length === 1 && runs[0]?.status === 'waiting-approval';
    });
    const snapshot = (await a.get(`/v1/runs/${runId}`)).body;
    assert.equal(snapshot.waitingOn, undefined, 'A knows of no peer task');
    assert.equal((await a.post(`/v1/runs/${runId}/cancel`, {})).status, 200);
    await a.waitForStatus(runId, ['cancelled']);
    await until("B's task is cancelled", async () => (await runsOfB()).every((r) => r.status === 'cancelled'));
    await until('the wait ends', async () =>
      (await a.host.store.peerWaits.forRun(runId)).every((w) => w.state === 'done'),
    );
  });

  it('on a peer that does not dedup by messageId, the tasks of earlier attempts are cancelled once one is recorded', async () => {
    const runId = await a.createRun('call_poll_wait', { agent: 'sdk', skill: 'approval', prompt: 'twice' });
    const recorded = await until('A records a peer task', async () => {
      const s = (await a.get(`/v1/runs/${runId}`)).body;
      return s.waitingOn?.state === 'input-required' && (s.waitingOn.peerTaskId as string);
    });
    assert.equal(lossySdk.lost, 1);
    const direct = await peers.resolve({ agent: 'sdk' }, RUN);
    const tasks = await until('the stray task is cancelled', async () => {
      const all = await direct.tasksInContext(contextOf(runId));
      return all.some((t) => t.status.state === 'canceled') && all;
    });
    assert.equal(tasks.length, 2, JSON.stringify(tasks));
    for (const t of tasks) assert.equal(t.status.state, t.id === recorded ? 'input-required' : 'canceled');
    await a.post(`/v1/runs/${runId}/cancel`, {});
    await until('the recorded task is cancelled with the run', async () =>
      (await direct.tasksInContext(contextOf(runId))).every((t) => t.status.state === 'canceled'),
    );
  });

  it('an A2A 0.3 peer cannot list tasks: the cancel of a lost send is dropped, not retried for ever', async () => {
    const runId = await a.createRun('call_poll_wait', { agent: 'old', skill: 'approval', prompt: 'gone' });
    await until('the send was made and its answer lost', () => lossyV03.lost >= 1);
    await a.post(`/v1/runs/${runId}/cancel`, {});
    await a.waitForStatus(runId, ['cancelled']);
    await until('the wait ends', async () =>
      (await a.host.store.peerWaits.forRun(runId)).every((w) => w.state === 'done'),
    );
  });
});
