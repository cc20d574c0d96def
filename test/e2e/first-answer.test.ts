// The `first-answer` demo between three real Handoff processes: A asks researcher-a (B1) and
// researcher-b (B2) the same question at once; the first answer wins, and the other agent's task
// is cancelled. Both peers wait at an approval gate (skill `approval`), so which answers first is
// decided by the test, not by timing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, getRun, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

describe('first-answer: two agents asked at once, the first answer wins', () => {
  let a: ServerProcess;
  let b1: ServerProcess;
  let b2: ServerProcess;

  before(async () => {
    [b1, b2] = await Promise.all([startServer({ dataDir: tmp('b1') }), startServer({ dataDir: tmp('b2') })]);
    const env = callerEnv(writeCallWorkflows(), { 'researcher-a': b1.url, 'researcher-b': b2.url });
    a = await startServer({ dataDir: tmp('a'), env });
  });
  after(() => killAllServers());

  /** The peer task a branch of A's run waits on, once linked. */
  async function peerTask(runId: string, nodeId: string): Promise<string> {
    return until(`${nodeId} linked to its peer task`, async () => {
      const linked = (await events(a.url, runId)).find((e) => e.type === 'a2a.task.linked' && e.nodeId === nodeId);
      return linked?.payload.peerTaskId as string | undefined;
    });
  }

  it('B2 answers first: A completes with its answer, and B1’s task is cancelled', async () => {
    const runId = await startRun(a.url, 'first-answer', { question: 'ship it?', skill: 'approval' });
    const [onB1, onB2] = await Promise.all([peerTask(runId, 'askA'), peerTask(runId, 'askB')]);
    await untilStatus(b2.url, onB2, ['waiting-approval']);
    const accepted = await postJson(`${b2.url}/v1/runs/${onB2}/interrupts/review`, {
      resumeValue: { action: 'accept' },
    });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));

    const done = await untilStatus(a.url, runId, ['completed', 'failed', 'cancelled']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.answer.from, 'askB');
    assert.deepEqual(done.nodeStates.first.arrived, ['askB']);
    const log = await events(a.url, runId);
    const withdrawn = log.filter((e) => e.type === 'branch.withdrawn');
    assert.deepEqual(
      withdrawn.map((e) => e.nodeId),
      ['askA'],
    );
    assert.deepEqual(
      log.map((e) => e.sequence),
      log.map((_, i) => i),
    );

    // The withdrawn branch's peer task gets tasks/cancel: B1's run ends cancelled.
    const cancelled = await untilStatus(b1.url, onB1, ['completed', 'failed', 'cancelled']);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await getRun(b2.url, onB2)).status, 'completed');
  });
});
