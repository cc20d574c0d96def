// a2a.invoke with the caller on PostgreSQL, two instances: the instance that called B is SIGKILLed
// while B waits for approval; the other takes the run over when the lease ends, and the run still
// completes with B's artifact, with exactly one task on B. Cancelling through the other instance
// cancels B's task. Skipped without HANDOFF_TEST_PG_URL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Cluster, getRun, runEvents, startCluster, startRun } from '../support/cluster.js';
import { pgTestSchemas, pgTestUrl } from '../support/pg.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

const PG_URL = pgTestUrl();
const schemas = PG_URL ? pgTestSchemas(PG_URL, 'handoff_test_invoke') : undefined;

describe('a2a.invoke: a PostgreSQL caller with two instances', {
  skip: !PG_URL && 'HANDOFF_TEST_PG_URL is not set',
}, () => {
  let b: ServerProcess;
  let cluster: Cluster;

  before(async () => {
    b = await startServer({ dataDir: tmp('b') });
    cluster = await startCluster({
      pgUrl: PG_URL!,
      schema: schemas!.fresh(),
      names: ['a1', 'a2'],
      env: callerEnv(writeCallWorkflows(), { reviewer: b.url }),
    });
  });
  after(async () => {
    await cluster?.close();
    await killAllServers();
    await schemas?.dropAll();
  });

  const untilWaiting = (srv: ServerProcess, runId: string) =>
    until('the run waits on B', async () => {
      const s = await getRun(srv, runId);
      return s.waitingOn?.state === 'input-required' && (s.waitingOn.peerTaskId as string);
    });

  it("the calling instance is SIGKILLed; the other completes the run with B's artifact", async () => {
    const [a1, a2] = [cluster.node('a1'), cluster.node('a2')];
    const runId = await startRun(a1, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'pg' });
    const peerTaskId = await untilWaiting(a1, runId);
    await a1.kill();
    const approved = await postJson(`${b.url}/v1/runs/${peerTaskId}/interrupts/review`, {
      resumeValue: { action: 'accept' },
    });
    assert.equal(approved.status, 200);
    const done = await until('a2 completed the run', async () => {
      const s = await getRun(a2, runId);
      return ['completed', 'failed'].includes(s.status) && s;
    });
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.artifacts[0].parts[0].data.text, 'Draft: pg');
    const onB = await getJson(`${b.url}/v1/runs?workflowId=approval&limit=100`);
    assert.equal(onB.body.runs.length, 1, 'one task on B (this B is fresh)');
    const linked = (await runEvents(a2, runId)).filter((e) => e.type === 'a2a.task.linked');
    assert.equal(linked.length, 1);
  });

  it("cancelling the run on the surviving instance cancels B's task", async () => {
    const a2 = cluster.node('a2');
    const runId = await startRun(a2, 'call_poll_wait', { agent: 'reviewer', skill: 'approval', prompt: 'pg2' });
    const peerTaskId = await untilWaiting(a2, runId);
    const res = await postJson(`${a2.url}/v1/runs/${runId}/cancel`, {}, { token: 'key-multi-alice-0001' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await untilStatus(b.url, peerTaskId, ['cancelled']);
  });
});
