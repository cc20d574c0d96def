// One refused workflow file no longer stops the host: `serve` starts with every valid workflow,
// lists each refused file with its problems (GET /v1/workflows?include=refused, /healthz
// degraded), and --strict-workflows restores fail-fast. Also: an edge's `triggerRule: any_failed`
// routes a failure (a node's error, a gate's reject) instead of failing the run.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { DIALECTS, type TestHost, startTestHost } from '../support/host.js';

const node = (id: string, typeId: string, config: Record<string, unknown> = {}) => ({
  id,
  typeId,
  name: id,
  position: { x: 0, y: 0 },
  config,
  inputs: {},
});
const workflow = (id: string, nodes: unknown[], edges: unknown[] = []) => ({
  id,
  name: id,
  version: '1',
  nodes,
  edges,
  triggers: [{ id: 'manual', type: 'manual' }],
  variables: [],
  metadata: {},
  settings: {},
});

const ROUTED = workflow(
  'routed',
  [
    node('boom', 'core.fail', { code: 'boom', message: 'it broke' }),
    node('recover', 'core.noop'),
    node('never', 'core.noop'),
  ],
  [
    { id: 'ok', sourceNodeId: 'boom', targetNodeId: 'never', triggerRule: 'all_success' },
    { id: 'bad', sourceNodeId: 'boom', targetNodeId: 'recover', triggerRule: 'any_failed' },
  ],
);
const REJECT_ROUTED = workflow(
  'reject-routed',
  [
    node('gate', 'core.approvalGate', { title: 'T', actions: ['accept', 'reject'] }),
    node('on-reject', 'core.noop'),
    node('on-accept', 'core.noop'),
  ],
  [
    { id: 'r', sourceNodeId: 'gate', targetNodeId: 'on-reject', triggerRule: 'any_failed' },
    { id: 'a', sourceNodeId: 'gate', targetNodeId: 'on-accept', triggerRule: 'all_success' },
  ],
);

for (const dialect of DIALECTS) {
  describe(`refused workflow files and triggerRule (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-refused-'));
      writeFileSync(join(dir, 'broken.json'), '{ "id": ');
      writeFileSync(join(dir, 'unknown-type.json'), JSON.stringify(workflow('odd', [node('x', 'core.nope')])));
      writeFileSync(join(dir, 'routed.json'), JSON.stringify(ROUTED));
      writeFileSync(join(dir, 'reject-routed.json'), JSON.stringify(REJECT_ROUTED));
      t = await startTestHost({ pg: dialect === 'postgres', workflows: [dir] });
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('starts with the valid workflows and lists each refused file with its problems', async () => {
      const list = await t.get('/v1/workflows?include=refused');
      assert.equal(list.status, 200);
      const ids = list.body.workflows.map((w: { id: string }) => w.id);
      assert.ok(ids.includes('routed') && ids.includes('echo') && !ids.includes('odd'));
      const refused = Object.fromEntries(
        list.body.refused.map((r: { file: string; problems: string[] }) => [r.file, r.problems.join('\n')]),
      );
      assert.match(refused[join(dir, 'broken.json')], /invalid JSON/);
      assert.match(refused[join(dir, 'unknown-type.json')], /unknown typeId "core.nope"/);
      assert.equal((await t.get('/v1/workflows')).body.refused, undefined, 'only when asked');
      const health = await t.get('/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'degraded');
      assert.equal(health.body.refusedWorkflows, 2);
    });

    it('any_failed: a failing node routes to its failure edge and the run completes', async () => {
      const runId = await t.createRun('routed');
      const done = await t.waitForStatus(runId, ['completed', 'failed']);
      assert.equal(done.status, 'completed');
      const events = await t.events(runId);
      const failed = events.find((e) => e.type === 'node.failed');
      assert.equal(failed.nodeId, 'boom');
      assert.equal(failed.payload.routedTo, 'recover');
      const ran = events.filter((e) => e.type === 'node.completed').map((e) => e.nodeId);
      assert.deepEqual(ran, ['recover']);
    });

    it('any_failed: a rejected gate takes its failure edge; accepted, its all_success edge', async () => {
      const rejected = await t.createRun('reject-routed');
      await t.waitForStatus(rejected, ['waiting-approval']);
      assert.equal(
        (await t.post(`/v1/runs/${rejected}/interrupts/gate`, { resumeValue: { action: 'reject' } })).status,
        200,
      );
      assert.equal((await t.waitForStatus(rejected, ['completed', 'failed'])).status, 'completed');
      const onReject = (await t.events(rejected)).filter((e) => e.type === 'node.completed').map((e) => e.nodeId);
      assert.deepEqual(onReject, ['on-reject']);

      const accepted = await t.createRun('reject-routed');
      await t.waitForStatus(accepted, ['waiting-approval']);
      await t.post(`/v1/runs/${accepted}/interrupts/gate`, { resumeValue: { action: 'accept' } });
      assert.equal((await t.waitForStatus(accepted, ['completed', 'failed'])).status, 'completed');
      const onAccept = (await t.events(accepted)).filter((e) => e.type === 'node.completed').map((e) => e.nodeId);
      assert.deepEqual(onAccept, ['gate', 'on-accept']);
    });
  });
}

describe('--strict-workflows', () => {
  it('refuses to start when a workflow file does not load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-strict-'));
    try {
      writeFileSync(join(dir, 'broken.json'), '{ "id": ');
      await assert.rejects(startTestHost({ workflows: [dir], env: { HANDOFF_STRICT_WORKFLOWS: '1' } }), /invalid JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is read from the flag and the environment', () => {
    assert.equal(loadConfig({}, {}).strictWorkflows, false);
    assert.equal(loadConfig({ strictWorkflows: true }, {}).strictWorkflows, true);
    assert.equal(loadConfig({}, { HANDOFF_STRICT_WORKFLOWS: '1' }).strictWorkflows, true);
  });
});
