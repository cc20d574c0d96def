// Quorum and approvers list on an approval gate (docs/protocol/openwop.md#interrupts: host-side checks happen
// before the engine moves the run): a gate needing 2 approvals from ['alice', 'bob'], with three
// keys of one tenant. SQLite always, PostgreSQL too when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dataMessage, rpc } from '../support/a2a.js';
import { DIALECTS, type Json, type TestHost, bearer, startTestHost } from '../support/host.js';

const KEYS = { alice: 'key-alice-000', bob: 'key-bob-00000', carol: 'key-carol-000' } as const;

const QUORUM_WORKFLOW = {
  id: 'quorum',
  name: 'Two approvers',
  version: '1.0.0',
  nodes: [
    {
      id: 'draft',
      typeId: 'core.transform',
      name: 'Draft',
      position: { x: 0, y: 0 },
      config: { output: { text: 'Budget: {{ inputs.amount }}' } },
      inputs: {},
    },
    {
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      position: { x: 200, y: 0 },
      config: {
        title: 'Two of us must agree',
        artifactFrom: 'draft',
        requiredApprovals: 2,
        approversList: ['alice', 'bob'],
      },
      inputs: {},
    },
    {
      id: 'final',
      typeId: 'core.transform',
      name: 'Publish',
      position: { x: 400, y: 0 },
      outputRole: 'artifact',
      config: { output: { text: '{{ nodes.review.artifact.text }}', approvers: '{{ nodes.review.approvers }}' } },
      inputs: {},
    },
  ],
  edges: [
    { id: 'draft-review', sourceNodeId: 'draft', targetNodeId: 'review' },
    { id: 'review-final', sourceNodeId: 'review', targetNodeId: 'final' },
  ],
  triggers: [{ id: 'manual', type: 'manual', enabled: true }],
  variables: [],
  metadata: { tags: ['test'] },
  settings: {},
};

/** A gate whose votes a trusted relay casts under one key, naming each voter (voterIdentity). */
const RELAY_WORKFLOW = {
  id: 'relay',
  nodes: [
    {
      id: 'review',
      typeId: 'core.approvalGate',
      config: {
        title: 'Two of the team, relayed',
        requiredApprovals: 2,
        approversList: ['dana', 'erin'],
        voterIdentity: 'declared',
        relayers: ['carol', 'bob'],
      },
    },
  ],
};

for (const dialect of DIALECTS) {
  describe(`quorum and approvers list (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'handoff-wf-'));
      writeFileSync(join(dir, 'quorum.json'), JSON.stringify(QUORUM_WORKFLOW, null, 2));
      writeFileSync(join(dir, 'relay.json'), JSON.stringify(RELAY_WORKFLOW, null, 2));
      t = await startTestHost({
        pg: dialect === 'postgres',
        apiKeys: Object.entries(KEYS)
          .map(([who, key]) => `${key}=acme:${who}`)
          .join(','),
        workflows: [dir],
      });
    });
    after(async () => {
      await t?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const review = (runId: string, who: keyof typeof KEYS, resumeValue: unknown) =>
      t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue }, bearer(KEYS[who]));
    const snapshot = async (runId: string): Promise<Json> =>
      (await t.get(`/v1/runs/${runId}`, bearer(KEYS.alice))).body;
    const eventCount = async (runId: string): Promise<number> => (await t.events(runId, bearer(KEYS.alice))).length;

    async function atGate(): Promise<string> {
      const runId = await t.createRun('quorum', { amount: 42 }, bearer(KEYS.carol));
      const snap = await t.waitForStatus(runId, ['waiting-approval'], bearer(KEYS.carol));
      assert.equal(snap.interrupt.payload.requiredApprovals, 2);
      assert.deepEqual(snap.interrupt.payload.approversList, ['alice', 'bob']);
      return runId;
    }

    it('the extra workflow dir is loaded beside the built-ins', async () => {
      const res = await t.get('/v1/workflows/quorum', bearer(KEYS.alice));
      assert.equal(res.status, 200, res.text);
      assert.equal((await t.get('/v1/workflows/echo', bearer(KEYS.alice))).status, 200);
    });

    it('carol (not an approver) → 403 forbidden, nothing changes', async () => {
      const runId = await atGate();
      const before = { snap: await snapshot(runId), events: await eventCount(runId) };
      for (const action of ['accept', 'reject', 'ask']) {
        const res = await review(runId, 'carol', { action, question: 'may I?' });
        assert.equal(res.status, 403, `${action}: ${res.text}`);
        assert.equal(res.body.error, 'forbidden');
      }
      assert.deepEqual(await snapshot(runId), before.snap);
      assert.equal(await eventCount(runId), before.events);
    });

    it('alice accepts → 200, still waiting (vote recorded); again → still one vote; bob accepts \
→ completed', async () => {
      const runId = await atGate();

      const first = await review(runId, 'alice', { action: 'accept' });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.status, 'waiting-approval');
      assert.equal(first.body.interrupt.outcome, 'vote-recorded');
      assert.equal(first.body.interrupt.votes, 1);
      let snap = await snapshot(runId);
      assert.equal(snap.status, 'waiting-approval');
      assert.deepEqual(
        snap.interrupt.votes.map((v: Json) => [v.principal, v.action]),
        [['alice', 'accept']],
      );

      const again = await review(runId, 'alice', { action: 'accept' });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.status, 'waiting-approval');
      assert.equal(again.body.interrupt.votes, 1);
      snap = await snapshot(runId);
      assert.equal(snap.status, 'waiting-approval');
      assert.equal(snap.interrupt.votes.length, 1);

      const bob = await review(runId, 'bob', { action: 'accept' });
      assert.equal(bob.status, 200, bob.text);
      assert.equal(bob.body.interrupt.outcome, 'resolved');
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
      assert.equal(done.status, 'completed');
      assert.equal(done.nodeStates.final.text, 'Budget: 42');
      assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['alice', 'bob']);
      assert.equal(done.nodeStates.review.decidedBy, 'bob');

      const events = await t.events(runId, bearer(KEYS.alice));
      assert.equal(events.filter((e) => e.type === 'approval.received').length, 3);
      assert.equal(events.filter((e) => e.type === 'interrupt.resolved').length, 1);
      assert.equal(events.filter((e) => e.type === 'run.completed').length, 1);
    });

    it('alice and bob accept at the same time → both votes count, the run completes once (×5)', async () => {
      for (let i = 0; i < 5; i++) {
        const runId = await atGate();
        const [a, b] = await Promise.all([
          review(runId, 'alice', { action: 'accept' }),
          review(runId, 'bob', { action: 'accept' }),
        ]);
        assert.equal(a.status, 200, a.text);
        assert.equal(b.status, 200, b.text);
        assert.deepEqual([a.body.interrupt.outcome, b.body.interrupt.outcome].sort(), ['resolved', 'vote-recorded']);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
        assert.equal(done.status, 'completed', `round ${i}`);
        assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['alice', 'bob']);
        const events = await t.events(runId, bearer(KEYS.alice));
        assert.equal(events.filter((e) => e.type === 'run.completed').length, 1);
      }
    });

    // The A2A reply reads its task, run and open interrupt in one statement; on PostgreSQL a reply
    // that waited for the other's lock must not decide on the interrupt as it was before that one.
    it('alice and bob accept by A2A replies at the same time → both votes count, the run completes once (×5)', async () => {
      const reply = (taskId: string, who: keyof typeof KEYS) =>
        rpc(
          t,
          'message/send',
          { message: dataMessage({ action: 'accept' }, { taskId }) },
          { headers: bearer(KEYS[who]) },
        );
      for (let i = 0; i < 5; i++) {
        const runId = await atGate();
        const [a, b] = await Promise.all([reply(runId, 'alice'), reply(runId, 'bob')]);
        assert.ok(a.body.result, a.text);
        assert.ok(b.body.result, b.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
        assert.equal(done.status, 'completed', `round ${i}`);
        assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['alice', 'bob']);
        const events = await t.events(runId, bearer(KEYS.alice));
        assert.equal(events.filter((e) => e.type === 'approval.received').length, 2);
        assert.equal(events.filter((e) => e.type === 'run.completed').length, 1);
      }
    });

    it('one approver rejects → failed at once (single veto), even after a vote', async () => {
      const runId = await atGate();
      assert.equal((await review(runId, 'alice', { action: 'accept' })).status, 200);
      const res = await review(runId, 'bob', { action: 'reject' });
      assert.equal(res.status, 200, res.text);
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'interrupt_rejected');
      assert.equal(done.error.details.decidedBy, 'bob');
    });

    it('an edit vote changes artifactHash: a vote bound to the draft before it is 409 artifact_changed, nothing changes', async () => {
      const runId = await atGate();
      const draft = (await snapshot(runId)).interrupt.artifactHash;
      const edited = { text: 'Budget: 40' };
      assert.equal((await review(runId, 'alice', { action: 'edit-accept', editedArtifactData: edited })).status, 200);
      const now = await snapshot(runId);
      assert.notEqual(now.interrupt.artifactHash, draft, 'the edit is what the next voter approves');
      const stale = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' }, expectedArtifactHash: draft },
        bearer(KEYS.bob),
      );
      assert.equal(stale.status, 409, stale.text);
      assert.equal(stale.body.error, 'artifact_changed');
      assert.deepEqual(await snapshot(runId), now);
      const bound = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' }, expectedArtifactHash: now.interrupt.artifactHash },
        bearer(KEYS.bob),
      );
      assert.equal(bound.status, 200, bound.text);
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
      assert.equal(done.nodeStates.final.text, 'Budget: 40');
    });

    it("a voter named in the resume value is not an identity: alice naming bob is still alice's one vote", async () => {
      const runId = await atGate();
      for (const voter of ['bob', 'carol', 'alice']) {
        const res = await review(runId, 'alice', { action: 'accept', voter });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.interrupt.votes, 1);
      }
      const snap = await snapshot(runId);
      assert.equal(snap.status, 'waiting-approval');
      assert.deepEqual(
        snap.interrupt.votes.map((v: Json) => [v.principal, v.castBy]),
        [['alice', undefined]],
      );
    });

    it('voterIdentity "declared": a relayer casts each named voter\'s vote, the approvers list binds the voter', async () => {
      const runId = await t.createRun('relay', {}, bearer(KEYS.carol));
      const gate = await t.waitForStatus(runId, ['waiting-approval'], bearer(KEYS.carol));
      assert.equal(gate.interrupt.payload.voterIdentity, 'declared');
      assert.deepEqual(gate.interrupt.payload.relayers, ['carol', 'bob']);
      const before = { snap: await snapshot(runId), events: await eventCount(runId) };
      for (const [who, voter, status, error] of [
        ['carol', 'mallory', 403, 'forbidden'], // not on the approvers list
        ['alice', 'dana', 403, 'forbidden'], // alice may not cast votes for others
        ['carol', '', 400, 'validation_error'],
        ['carol', 5, 400, 'validation_error'],
        ['carol', 'system:timeout', 400, 'validation_error'], // never a name of the host's own
        ['carol', ' dana', 400, 'validation_error'],
        ['carol', 'x'.repeat(201), 400, 'validation_error'],
      ] as const) {
        const res = await review(runId, who, { action: 'accept', voter });
        assert.equal(res.status, status, `${who} for ${String(voter).slice(0, 15)}: ${res.text}`);
        assert.equal(res.body.error, error);
      }
      // No voter named, or the caller itself: the vote is carol's own, and carol is not on the list.
      assert.equal((await review(runId, 'carol', { action: 'accept' })).status, 403);
      assert.equal((await review(runId, 'carol', { action: 'accept', voter: 'carol' })).status, 403);
      assert.deepEqual(await snapshot(runId), before.snap);
      assert.equal(await eventCount(runId), before.events);

      const dana = await review(runId, 'carol', { action: 'accept', voter: 'dana' });
      assert.equal(dana.status, 200, dana.text);
      assert.equal(dana.body.interrupt.votes, 1);
      assert.equal((await review(runId, 'bob', { action: 'accept', voter: 'dana' })).body.interrupt.votes, 1);
      assert.deepEqual(
        (await snapshot(runId)).interrupt.votes.map((v: Json) => [v.principal, v.castBy]),
        [['dana', 'bob']],
        'the same voter again replaces its vote, whichever relayer casts it',
      );
      assert.equal((await review(runId, 'carol', { action: 'accept', voter: 'erin' })).status, 200);
      const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled'], bearer(KEYS.alice));
      assert.equal(done.status, 'completed');
      assert.deepEqual([...done.nodeStates.review.approvers].sort(), ['dana', 'erin']);
      const received = (await t.events(runId, bearer(KEYS.alice))).filter((e) => e.type === 'approval.received');
      assert.deepEqual(
        received.map((e) => [e.payload.decidedBy, e.payload.castBy]),
        [
          ['dana', 'carol'],
          ['dana', 'bob'],
          ['erin', 'carol'],
        ],
      );
    });
  });
}
