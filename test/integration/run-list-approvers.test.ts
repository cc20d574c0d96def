// GET /v1/runs names who may decide each open gate: its `approversList` and, for a gate routed by
// group or role (RFC 0104), its `approverGroupRefs` / `approverRoleRefs`, read from the interrupt's
// data by the database (src/store/repos/interrupts.ts openHeads). SQLite always, PostgreSQL too
// when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bearer, DIALECTS, type Json, startTestHost, type TestHost } from '../support/host.js';

const KEY = 'key-routing-list-01';
const API_KEYS = JSON.stringify({ [KEY]: { tenant: 'acme', principal: 'carol', groups: ['sales'] } });
const AS = bearer(KEY);

const gate = (id: string, config: Record<string, unknown>) => ({
  id,
  nodes: [{ id: 'review', typeId: 'core.approvalGate', config: { title: `Gate ${id}`, ...config } }],
});

const WORKFLOWS = {
  'by-group': gate('by-group', { approverGroupRefs: ['finance', 'legal'] }),
  'by-role': gate('by-role', { approverRoleRefs: ['controller'] }),
  'by-all': gate('by-all', {
    approversList: ['alice', 'bob'],
    approverGroupRefs: ['finance'],
    approverRoleRefs: ['controller', 'auditor'],
  }),
  open: gate('open', {}),
};

for (const dialect of DIALECTS) {
  describe(`run list: who may decide a gate routed by group or role (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    const runs: Record<string, string> = {};

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-wf-'));
      for (const [id, def] of Object.entries(WORKFLOWS)) writeFileSync(join(dir, `${id}.json`), JSON.stringify(def));
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir] });
      for (const id of Object.keys(WORKFLOWS)) {
        runs[id] = await t.createRun(id, {}, AS);
        await t.waitForStatus(runs[id], ['waiting-approval'], AS);
      }
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const summaryOf = async (workflowId: string): Promise<Json> => {
      const res = await t.get(`/v1/runs?status=waiting-approval&workflowId=${workflowId}`, AS);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.runs.length, 1);
      const run = res.body.runs[0];
      assert.equal(run.runId, runs[workflowId]);
      assert.deepEqual(run.interrupts, [run.interrupt], 'one gate: interrupts is the one interrupt');
      return run.interrupt;
    };

    it('a gate routed by groups lists them, and no approvers list nor roles', async () => {
      assert.deepEqual(await summaryOf('by-group'), {
        kind: 'approval',
        nodeId: 'review',
        title: 'Gate by-group',
        approverGroupRefs: ['finance', 'legal'],
      });
    });

    it('a gate routed by a role lists it', async () => {
      assert.deepEqual(await summaryOf('by-role'), {
        kind: 'approval',
        nodeId: 'review',
        title: 'Gate by-role',
        approverRoleRefs: ['controller'],
      });
    });

    it('a gate naming people, groups and roles lists all three, as its snapshot does', async () => {
      const summary: Json = await summaryOf('by-all');
      const payload = (await t.get(`/v1/runs/${runs['by-all']}`, AS)).body.interrupt.payload;
      for (const field of ['approversList', 'approverGroupRefs', 'approverRoleRefs']) {
        assert.deepEqual(summary[field], payload[field], field);
      }
      assert.deepEqual(summary, {
        kind: 'approval',
        nodeId: 'review',
        title: 'Gate by-all',
        approversList: ['alice', 'bob'],
        approverGroupRefs: ['finance'],
        approverRoleRefs: ['controller', 'auditor'],
      });
    });

    it('an open gate lists none of them', async () => {
      assert.deepEqual(await summaryOf('open'), { kind: 'approval', nodeId: 'review', title: 'Gate open' });
    });
  });
}
