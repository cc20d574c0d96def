// A workflow file with only ids, types, configs and edges runs like a complete one (issue 35 §5):
// started over REST, it stops at its gate, is decided, and completes with its artifact, named by
// the node id since the file gives no name. Its definition is served with the defaults filled in.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, startTestHost, type TestHost } from '../support/host.js';

const HELLO = {
  id: 'hello',
  inputSchema: { type: 'object', properties: { name: { type: 'string', default: 'world' } } },
  nodes: [
    { id: 'draft', typeId: 'core.transform', config: { output: { text: 'Hello, {{ inputs.name }}!' } } },
    { id: 'review', typeId: 'core.approvalGate', config: { title: 'Send it?', artifact: '{{ nodes.draft }}' } },
    {
      id: 'sent',
      typeId: 'core.transform',
      outputRole: 'artifact',
      config: { output: { text: '{{ nodes.review.artifact.text }}', by: '{{ nodes.review.decidedBy }}' } },
    },
  ],
  edges: [
    { id: 'draft-review', sourceNodeId: 'draft', targetNodeId: 'review' },
    { id: 'review-sent', sourceNodeId: 'review', targetNodeId: 'sent' },
  ],
};

for (const dialect of DIALECTS) {
  describe(`a minimal workflow file runs (${dialect})`, () => {
    let t: TestHost;
    const dir = mkdtempSync(join(tmpdir(), 'handoff-minimal-'));
    before(async () => {
      writeFileSync(join(dir, 'hello.json'), JSON.stringify(HELLO));
      t = await startTestHost({ workflows: [dir], pg: dialect === 'postgres' });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('waits at its gate, is accepted, completes with its artifact', async () => {
      const runId = await t.createRun('hello', { name: 'Ada' });
      const waiting = await t.waitForStatus(runId, ['waiting-approval']);
      assert.equal(waiting.interrupt.nodeId, 'review');
      const decided = await t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue: { action: 'accept' } });
      assert.equal(decided.status, 200, decided.text);
      const done = await t.waitForStatus(runId, ['completed']);
      assert.equal(done.nodeStates.sent.text, 'Hello, Ada!');
      const artifact = (await t.events(runId)).find((e) => e.type === 'artifact.created');
      assert.equal(artifact?.payload?.artifactId, 'sent');
      assert.equal(artifact?.payload?.name, 'sent', 'a node without a name is named by its id');
      assert.equal(artifact?.payload?.data?.text, 'Hello, Ada!');
    });

    it('is served with its defaults filled in', async () => {
      const res = await t.get('/v1/workflows/hello');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.name, 'hello');
      assert.deepEqual([res.body.triggers, res.body.variables, res.body.metadata, res.body.settings], [[], [], {}, {}]);
      assert.deepEqual(res.body.nodes[0].position, { x: 0, y: 0 });
    });
  });
}
