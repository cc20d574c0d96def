// Approver routing by group and role (RFC 0104; docs/workflows.md#quorum): a gate naming
// `approverGroupRefs` or `approverRoleRefs` admits a caller whose API key names one of those groups
// or roles, and no one else; the vote records which ref admitted it. SQLite always, PostgreSQL too
// when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type Json, type TestHost, bearer, startTestHost } from '../support/host.js';

/** Each key's principal, groups and roles (HANDOFF_API_KEYS, JSON form). */
const PEOPLE = {
  alice: { key: 'key-alice-000', groups: ['finance'] },
  bob: { key: 'key-bob-00000', groups: ['sales', 'finance'] },
  carol: { key: 'key-carol-000', groups: ['sales'], roles: ['clerk'] },
  dana: { key: 'key-dana-0000', roles: ['controller'] },
  erin: { key: 'key-erin-0000', roles: ['controller', 'clerk'] },
} as const;
type Who = keyof typeof PEOPLE;

const API_KEYS = JSON.stringify(
  Object.fromEntries(
    Object.entries(PEOPLE).map(([principal, { key, ...refs }]) => [key, { tenant: 'acme', principal, ...refs }]),
  ),
);

const gate = (id: string, config: Record<string, unknown>) => ({
  id,
  nodes: [{ id: 'review', typeId: 'core.approvalGate', config: { title: 'Finance must agree', ...config } }],
});

const WORKFLOWS = {
  'by-group': gate('by-group', { requiredApprovals: 2, approverGroupRefs: ['finance'] }),
  'by-role': gate('by-role', { requiredApprovals: 2, approverRoleRefs: ['controller'] }),
  // Refused at load: a declared voter has no credential for a group ref to match.
  'by-group-declared': gate('by-group-declared', {
    approverGroupRefs: ['finance'],
    approversList: ['frank'],
    voterIdentity: 'declared',
    relayers: ['bob'],
  }),
};

for (const dialect of DIALECTS) {
  describe(`approver routing by group and role (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-wf-'));
      for (const [id, def] of Object.entries(WORKFLOWS)) writeFileSync(join(dir, `${id}.json`), JSON.stringify(def));
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir] });
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const as = (who: Who) => bearer(PEOPLE[who].key);
    const review = (runId: string, who: Who, resumeValue: unknown) =>
      t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue }, as(who));
    const snapshot = async (runId: string): Promise<Json> => (await t.get(`/v1/runs/${runId}`, as('alice'))).body;
    const eventCount = async (runId: string): Promise<number> => (await t.events(runId, as('alice'))).length;

    async function atGate(workflowId: string): Promise<string> {
      const runId = await t.createRun(workflowId, {}, as('carol'));
      await t.waitForStatus(runId, ['waiting-approval'], as('carol'));
      return runId;
    }

    async function refusedChangingNothing(runId: string, who: Who, resumeValue?: Json): Promise<void> {
      const before = { snap: await snapshot(runId), events: await eventCount(runId) };
      for (const action of ['accept', 'reject', 'ask']) {
        const res = await review(runId, who, resumeValue ?? { action, question: 'may I?' });
        assert.equal(res.status, 403, `${who} ${action}: ${res.text}`);
        assert.equal(res.body.error, 'forbidden');
      }
      assert.deepEqual(await snapshot(runId), before.snap);
      assert.equal(await eventCount(runId), before.events);
    }

    it('group: a key outside the group is 403 and nothing changes; two keys in it complete the gate', async () => {
      const runId = await atGate('by-group');
      const snap = await snapshot(runId);
      assert.deepEqual(snap.interrupt.payload.approverGroupRefs, ['finance']);
      assert.equal(snap.interrupt.payload.approversList, undefined);
      await refusedChangingNothing(runId, 'carol');
      await refusedChangingNothing(runId, 'dana');

      const first = await review(runId, 'alice', { action: 'accept' });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.interrupt.outcome, 'vote-recorded');
      const waiting = await snapshot(runId);
      assert.deepEqual(waiting.interrupt.votes, [
        { principal: 'alice', action: 'accept', at: waiting.interrupt.votes[0].at, via: 'group:finance' },
      ]);

      const second = await review(runId, 'bob', { action: 'accept' });
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.interrupt.outcome, 'resolved');
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], as('alice'));
      assert.equal(done.status, 'completed');
      assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['alice', 'bob']);

      const received = (await t.events(runId, as('alice'))).filter((e) => e.type === 'approval.received');
      assert.deepEqual(
        received.map((e) => [e.payload.decidedBy, e.payload.via]),
        [
          ['alice', 'group:finance'],
          ['bob', 'group:finance'],
        ],
      );
    });

    it('role: a key without the role is 403; two keys holding it complete the gate', async () => {
      const runId = await atGate('by-role');
      assert.deepEqual((await snapshot(runId)).interrupt.payload.approverRoleRefs, ['controller']);
      await refusedChangingNothing(runId, 'carol');
      await refusedChangingNothing(runId, 'alice');

      assert.equal((await review(runId, 'dana', { action: 'accept' })).status, 200);
      const res = await review(runId, 'erin', { action: 'accept' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.interrupt.outcome, 'resolved');
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], as('alice'));
      assert.equal(done.status, 'completed');
      assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['dana', 'erin']);
      const received = (await t.events(runId, as('alice'))).filter((e) => e.type === 'approval.received');
      assert.deepEqual(
        received.map((e) => e.payload.via),
        ['role:controller', 'role:controller'],
      );
    });

    it('a single reject by a group member ends the gate rejected', async () => {
      const runId = await atGate('by-group');
      const res = await review(runId, 'bob', { action: 'reject', feedback: 'no' });
      assert.equal(res.status, 200, res.text);
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], as('alice'));
      assert.equal(done.status, 'failed');
    });

    it('a declared-voter gate with group refs is refused at load, and listed with its problem', async () => {
      assert.equal((await t.get('/v1/workflows/by-group-declared', as('alice'))).status, 404);
      const listed = await t.get('/v1/workflows?include=refused', as('alice'));
      const refused = listed.body.refused.find((r: Json) => String(r.file).endsWith('by-group-declared.json'));
      assert.match(JSON.stringify(refused?.problems), /cannot be combined with approverGroupRefs/);
    });
  });
}
