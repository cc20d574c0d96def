// What people see of a run waiting at two gates in parallel branches. The A2A stream: while one
// gate is still open, the other branch resuming (its decision, its next node starting) does not
// take the task out of input-required (it was `working` while tasks/get said input-required). The
// event log: a question asked at a branch's gate names the branch like the gate's other events
// (the console's timeline groups by it). Real host over HTTP, SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rpc } from '../support/a2a.js';
import { node } from '../support/call-workflows.js';
import { DIALECTS, startTestHost, type TestHost } from '../support/host.js';
import { openA2AStream, results, resultWord, type SseConnection } from '../support/sse-client.js';

/** Gates `a` and `b` in parallel; `b`'s branch goes on to an artifact, then both join. */
const gateThenArtifact = {
  id: 'gate-then-artifact',
  name: 'gate-then-artifact',
  version: '1',
  nodes: [
    node('fork', 'core.parallel', {}),
    node('a', 'core.approvalGate', { title: 'a decides', actions: ['accept'] }),
    node('b', 'core.approvalGate', { title: 'b decides', actions: ['accept'] }),
    node('bOut', 'core.transform', { output: { text: 'b accepted' } }, { outputRole: 'artifact' }),
    node('all', 'core.join', { mode: 'all' }),
  ],
  edges: [
    ['fork', 'a'],
    ['fork', 'b'],
    ['b', 'bOut'],
    ['a', 'all'],
    ['bOut', 'all'],
  ].map(([sourceNodeId, targetNodeId], i) => ({ id: `e${i}`, sourceNodeId, targetNodeId })),
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
};

for (const dialect of DIALECTS) {
  describe(`a run waiting in parallel branches, as people see it (${dialect})`, () => {
    let t: TestHost;
    let url: string;
    let dir: string;
    const streams: SseConnection[] = [];

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-parallel-stream-'));
      writeFileSync(join(dir, 'gate-then-artifact.json'), JSON.stringify(gateThenArtifact));
      t = await startTestHost({ pg: dialect === 'postgres', workflows: [dir] });
      url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    });
    after(async () => {
      for (const s of streams) s.abort();
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const decide = async (runId: string, nodeId: string, resumeValue: object = { action: 'accept' }) => {
      const res = await t.post(`/v1/runs/${runId}/interrupts/${nodeId}`, { resumeValue });
      assert.equal(res.status, 200, res.text);
    };

    it('stays input-required while another branch still waits on a person', async () => {
      const runId = await t.createRun('gate-then-artifact', {});
      await t.waitForStatus(runId, ['waiting-approval']);
      const stream = await openA2AStream(url, 'tasks/resubscribe', { id: runId });
      streams.push(stream);
      await stream.waitFor((e) => e.json?.result?.kind === 'task', 'the Task first');

      // b's branch resumes, runs bOut and makes its artifact; a is still open throughout.
      await decide(runId, 'b');
      await stream.waitFor((e) => e.json?.result?.kind === 'artifact-update', "bOut's artifact");
      const got = await rpc(t, 'tasks/get', { id: runId });
      assert.equal(got.body.result.status.state, 'input-required');
      assert.deepEqual(
        results(stream).map(resultWord),
        ['task(input-required)', 'artifact'],
        'no update says the task is working while it waits at a',
      );

      await decide(runId, 'a');
      await stream.waitForEnd();
      const words = results(stream).map(resultWord);
      assert.equal(words.at(-1), 'completed!');
      assert.equal(words[2], 'working', 'a resuming ends the wait');
    });

    it('a message/stream reply to one of two gates ends its turn: a final input-required, the other still open', async () => {
      const runId = await t.createRun('two-reviewers', { prompt: 'streamed reply' });
      await t.waitForStatus(runId, ['waiting-approval']);
      const reply = {
        message: {
          kind: 'message',
          role: 'user',
          messageId: `reply-${runId}`,
          taskId: runId,
          parts: [{ kind: 'data', data: { action: 'accept', nodeId: 'legal' } }],
        },
      };
      const stream = await openA2AStream(url, 'message/stream', reply);
      streams.push(stream);
      await stream.waitForEnd();
      const last = results(stream).at(-1);
      assert.equal(last.kind, 'status-update');
      assert.equal(last.status.state, 'input-required');
      assert.equal(last.final, true);
      const got = await rpc(t, 'tasks/get', { id: runId });
      assert.deepEqual(
        got.body.result.metadata.openwop.interrupts.map((i: { nodeId: string }) => i.nodeId),
        ['finance'],
      );
    });

    it("a question asked at a branch's gate names the branch, like the gate's other events", async () => {
      const runId = await t.createRun('two-reviewers', { prompt: 'asked' });
      await t.waitForStatus(runId, ['waiting-approval']);
      await decide(runId, 'finance', { action: 'ask', question: 'Which currency?' });
      await decide(runId, 'finance');
      const events = await t.events(runId);
      const atFinance = events.filter((e) => e.nodeId === 'finance');
      assert.deepEqual(
        atFinance.filter((e) => e.payload.branch !== 'fork#0/finance').map((e) => e.type),
        [],
        'every event at finance names its branch',
      );
      assert.ok(atFinance.some((e) => e.type === 'approval.ask'));
    });
  });
}
