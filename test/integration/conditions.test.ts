// An edge condition that fails while it is evaluated (a JSONata error) fails the run with
// `condition_failed`, naming the edge — in a request's inline step and in the worker alike —
// instead of a 500 that makes no run, or a run the worker retries for ever.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { node } from '../support/call-workflows.js';
import { DIALECTS, type Json, type TestHost, startTestHost } from '../support/host.js';

const BAD = { type: 'expression', expression: '$number("not a number") > 1' };

const workflow = (id: string, first: object) => ({
  id,
  name: id,
  version: '1',
  nodes: [first, node('after', 'core.transform', { output: { ok: true } })],
  edges: [{ id: 'bad-edge', sourceNodeId: 'first', targetNodeId: 'after', condition: BAD }],
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

for (const dialect of DIALECTS) {
  describe(`a condition that fails while it runs (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-conditions-'));
      writeFileSync(join(dir, 'inline.json'), JSON.stringify(workflow('inline', node('first', 'core.transform', {}))));
      writeFileSync(
        join(dir, 'worker.json'),
        JSON.stringify(workflow('worker', node('first', 'core.delay', { ms: 1 }))),
      );
      t = await startTestHost({ pg: dialect === 'postgres', workflows: [dir] });
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const check = async (runId: string): Promise<Json> => {
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'condition_failed');
      assert.match(done.error.message, /edge 'bad-edge' \(first → after\)/);
      assert.equal(done.error.details.edgeId, 'bad-edge');
      const events = await t.events(runId);
      assert.deepEqual(events.map((e: Json) => e.type).slice(-2), ['node.completed', 'run.failed']);
      return done;
    };

    it('inline, in the request that starts the run: 201 and a failed run, not a 500', async () => {
      const res = await t.post('/v1/runs', { workflowId: 'inline', inputs: {} });
      assert.equal(res.status, 201, res.text);
      await check(res.body.runId);
    });

    it('in the worker, after a durable timer: the run fails once, it is not retried for ever', async () => {
      await check(await t.createRun('worker', {}));
    });
  });
}
