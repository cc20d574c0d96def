// The A2A stream of a run that waits at two gates in parallel branches: while one gate is still
// open, the other branch resuming (its decision, its next node starting) does not take the task
// out of input-required; it was `working` on the stream while tasks/get said input-required.
// Real host over HTTP, SQLite and PostgreSQL (HANDOFF_TEST_PG_URL).
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
  describe(`the A2A stream of a run waiting in parallel branches (${dialect})`, () => {
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

    const decide = async (runId: string, nodeId: string) => {
      const res = await t.post(`/v1/runs/${runId}/interrupts/${nodeId}`, { resumeValue: { action: 'accept' } });
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
  });
}
