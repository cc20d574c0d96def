// Human-in-the-loop over A2A v0.3 (docs/protocol/openwop.md#resume-by-message): an approval
// gate answered with each of the five actions (and the legacy forms), a clarification answered by
// text or by {answers}, cancel of an input-required task, and the refusals that must leave the
// task untouched. decidedBy is always the authenticated principal. Runs on SQLite, and on
// PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  type A2AClient,
  artifactData,
  assertRpcError,
  assertRpcResult,
  message,
  skillMessage,
  textPart,
  startA2ATeam,
} from '../support/a2a.js';
import { DIALECTS, type Json, type TestHost } from '../support/host.js';

const FIVE = ['accept', 'reject', 'refine', 'edit-accept', 'ask'];

for (const dialect of DIALECTS) {
  describe(`A2A human-in-the-loop (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    let bob: A2AClient;
    let eve: A2AClient;

    before(async () => {
      ({ t, alice, bob, eve } = await startA2ATeam(dialect));
    });
    after(async () => {
      await t?.close();
    });

    /** Start the approval skill and return the input-required Task at its gate. */
    async function atGate(prompt = 'hello', extra: { contextId?: string } = {}): Promise<Json> {
      const task = await alice.sendOk(skillMessage('approval', prompt, extra));
      assert.equal(task.status.state, 'input-required', JSON.stringify(task));
      assert.equal(task.metadata.openwop.interrupt.kind, 'approval');
      assert.equal(task.metadata.openwop.interrupt.nodeId, 'review');
      assert.deepEqual([...task.metadata.openwop.interrupt.actions].sort(), [...FIVE].sort());
      assert.equal(task.metadata.openwop.runStatus, 'waiting-approval');
      assert.equal(task.artifacts, undefined);
      return task;
    }

    /** A reply into `task` (taskId and contextId set). */
    const reply = (task: Json, parts: Json[], metadata?: Record<string, unknown>) =>
      message(parts, { taskId: task.id, contextId: task.contextId, ...(metadata ? { metadata } : {}) });
    const decide = (task: Json, data: Record<string, unknown>) => reply(task, [{ kind: 'data', data }]);

    /** Snapshot, event count and run count: none may move when a reply is refused. */
    async function untouched<T>(taskId: string, fn: () => Promise<T>): Promise<T> {
      const runs = await t.host.store.runs.count();
      const snap = await alice.run(taskId);
      const events = (await t.events(taskId, alice.headers)).length;
      const out = await fn();
      const now = await alice.run(taskId);
      assert.equal(now.status, snap.status);
      assert.equal(now.updatedAt, snap.updatedAt, 'the run was written');
      assert.deepEqual(now.interrupt, snap.interrupt);
      assert.equal((await t.events(taskId, alice.headers)).length, events, 'events were appended');
      assert.equal(await t.host.store.runs.count(), runs, 'a run was created');
      return out;
    }

    // ------------------------------------------------------------ approval: the five actions

    describe('approval gate', () => {
      it('accept → completed; approvedBy is the authenticated principal', async () => {
        const task = await atGate('hello');
        const answer = decide(task, { action: 'accept', feedback: 'looks good' });
        const done = await alice.sendOk(answer);
        assert.equal(done.id, task.id);
        assert.equal(done.contextId, task.contextId);
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'Draft: hello', approvedBy: 'alice' });
        assert.equal(done.metadata.openwop.interrupt, undefined);
        assert.deepEqual(
          done.history.map((m: Json) => m.messageId),
          [task.history[0].messageId, answer.messageId],
        );
        // The reply's Task is built from its own transaction's events and the log before them.
        assert.deepEqual(done, await alice.getTask(task.id), 'the reply says what tasks/get says');
        const snap = await alice.run(task.id);
        assert.equal(snap.nodeStates.review.decidedBy, 'alice');
        assert.equal(snap.nodeStates.review.feedback, 'looks good');
      });

      it('decidedBy never comes from the message; another principal of the tenant decides as itself', async () => {
        const task = await atGate('who');
        const done = await alice.sendOk(
          reply(task, [{ kind: 'data', data: { action: 'accept', decidedBy: 'mallory', approvedBy: 'mallory' } }], {
            decidedBy: 'mallory',
            openwop: { decidedBy: 'mallory' },
          }),
        );
        assert.equal(artifactData(done).approvedBy, 'alice');

        const task2 = await atGate('bob decides');
        const done2 = await bob.sendOk(decide(task2, { action: 'accept' }));
        assert.equal(artifactData(done2).approvedBy, 'bob');
        const received = (await t.events(task2.id, alice.headers)).find((e) => e.type === 'approval.received');
        assert.equal(received.payload.decidedBy, 'bob');
      });

      it('reject → failed with openwop.error.code interrupt_rejected and a status message', async () => {
        const task = await atGate('no');
        const failed = await alice.sendOk(decide(task, { action: 'reject', feedback: 'not good' }));
        assert.equal(failed.status.state, 'failed');
        assert.equal(failed.metadata.openwop.error.code, 'interrupt_rejected');
        const sm = failed.status.message;
        assert.equal(sm.kind, 'message');
        assert.equal(sm.role, 'agent');
        assert.equal(sm.taskId, task.id);
        assert.equal(sm.contextId, task.contextId);
        assert.equal(sm.parts[0].kind, 'text');
        assert.ok(sm.parts[0].text.length > 0);
        assert.equal(sm.parts[0].text, failed.metadata.openwop.error.message);
        assert.equal(failed.artifacts, undefined);
        // Repeated reads are identical (the status message id is derived, not random).
        assert.deepEqual(await alice.getTask(task.id), failed);
      });

      it('refine → input-required again at a new interrupt; then accept \
→ completed with the revised text', async () => {
        const task = await atGate('hello');
        const first = (await alice.run(task.id)).interrupt.interruptId;
        const again = await alice.sendOk(
          decide(task, { action: 'refine', refineFeedback: { scope: 'whole', text: 'x' } }),
        );
        assert.equal(again.status.state, 'input-required');
        assert.equal(again.metadata.openwop.interrupt.kind, 'approval');
        const snap = await alice.run(task.id);
        assert.equal(snap.status, 'waiting-approval');
        assert.notEqual(snap.interrupt.interruptId, first, 'refine must open a new interrupt');
        assert.deepEqual(snap.interrupt.payload.artifact, { text: 'Draft: hello [revised: x]' });
        const done = await alice.sendOk(decide(again, { action: 'accept' }));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'Draft: hello [revised: x]', approvedBy: 'alice' });
      });

      it('refine with feedback text only is promoted to refineFeedback {scope: whole}', async () => {
        const task = await atGate('hello');
        const again = await alice.sendOk(
          reply(task, [textPart('shorter'), { kind: 'data', data: { action: 'refine' } }]),
        );
        assert.equal(again.status.state, 'input-required');
        assert.deepEqual((await alice.run(task.id)).interrupt.payload.artifact, {
          text: 'Draft: hello [revised: shorter]',
        });
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });

      it('edit-accept {editedArtifactData} → completed with the edited artifact (also the `edit` alias)', async () => {
        const task = await atGate('hello');
        const done = await alice.sendOk(decide(task, { action: 'edit-accept', editedArtifactData: { text: 'e' } }));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'e', approvedBy: 'alice' });

        const task2 = await atGate('hello');
        const done2 = await alice.sendOk(decide(task2, { action: 'edit', editedArtifactData: { text: 'aliased' } }));
        assert.deepEqual(artifactData(done2), { text: 'aliased', approvedBy: 'alice' });
      });

      it('a plain text reply is recorded as an ask; the task stays input-required', async () => {
        const task = await atGate('hello');
        const q = reply(task, [textPart('Why this wording?')]);
        const still = await alice.sendOk(q);
        assert.equal(still.status.state, 'input-required');
        assert.equal(still.metadata.openwop.interrupt.kind, 'approval');
        assert.equal(still.status.timestamp, task.status.timestamp, 'an ask does not change the projected state');
        const snap = await alice.run(task.id);
        assert.equal(snap.status, 'waiting-approval');
        assert.equal(snap.interrupt.exchanges.length, 1);
        assert.equal(snap.interrupt.exchanges[0].question, 'Why this wording?');
        assert.equal(snap.interrupt.exchanges[0].principalId, 'alice');
        const asks = (await t.events(task.id, alice.headers)).filter((e) => e.type === 'approval.ask');
        assert.equal(asks.length, 1);
        assert.equal(asks[0].payload.question, 'Why this wording?');
        assert.equal(asks[0].payload.decidedBy, 'alice');

        // The explicit form, then the exit.
        const still2 = await alice.sendOk(decide(task, { action: 'ask', question: 'And this?' }));
        assert.equal(still2.status.state, 'input-required');
        assert.equal((await alice.run(task.id)).interrupt.exchanges.length, 2);

        // historyLength applies to a task with several messages.
        const all = await alice.getTask(task.id);
        assert.deepEqual(still2, all, 'the reply of a third message says what tasks/get says');
        assert.equal(all.history.length, 3);
        const last = await alice.getTask(task.id, 1);
        assert.equal(last.history.length, 1);
        assert.deepEqual(last.history[0], all.history[2]);
        assert.deepEqual((await alice.getTask(task.id, 2)).history, all.history.slice(1));
        assert.ok(!('history' in (await alice.getTask(task.id, 0))));

        const done = await alice.sendOk(decide(task, { action: 'accept' }));
        assert.equal(done.status.state, 'completed');
      });

      it('legacy {approve: true} accepts and {approve: false} rejects', async () => {
        const task = await atGate('legacy');
        const done = await alice.sendOk(decide(task, { approve: true, feedback: 'ok' }));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'Draft: legacy', approvedBy: 'alice' });

        const task2 = await atGate('legacy');
        const failed = await alice.sendOk(decide(task2, { approve: false }));
        assert.equal(failed.status.state, 'failed');
        assert.equal(failed.metadata.openwop.error.code, 'interrupt_rejected');
      });

      it('metadata.openwop.action "accept" (and metadata.openwop.interrupt.resumeValue) accept', async () => {
        const task = await atGate('meta');
        const done = await alice.sendOk(reply(task, [textPart('fine by me')], { openwop: { action: 'accept' } }));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'Draft: meta', approvedBy: 'alice' });
        assert.equal((await alice.run(task.id)).nodeStates.review.feedback, 'fine by me');

        const task2 = await atGate('meta2');
        const done2 = await alice.sendOk(
          reply(task2, [textPart('ok')], { openwop: { interrupt: { resumeValue: { action: 'accept' } } } }),
        );
        assert.equal(done2.status.state, 'completed');
      });

      it('the contextId of the reply must match the task (-32602), taskId alone is enough', async () => {
        const task = await atGate('ctx', { contextId: `ctx-${randomUUID()}` });
        const wrong = message([{ kind: 'data', data: { action: 'accept' } }], {
          taskId: task.id,
          contextId: 'ctx-someone-else',
        });
        const res = await untouched(task.id, () => alice.send(wrong));
        const err = assertRpcError(res, -32602, res.body.id);
        assert.match(err.message, /contextId/);
        const done = await alice.sendOk(message([{ kind: 'data', data: { action: 'accept' } }], { taskId: task.id }));
        assert.equal(done.status.state, 'completed');
        assert.equal(done.contextId, task.contextId);
      });

      it('malformed decisions are -32602 and leave the gate open', async () => {
        const task = await atGate('bad');
        const bad: Json[] = [
          decide(task, { action: 'bogus' }),
          decide(task, { action: 'approve' }),
          decide(task, { action: 42 }),
          decide(task, { action: 'edit-accept' }),
          decide(task, { action: 'refine' }),
          decide(task, { action: 'refine', refineFeedback: { scope: 'everything', text: 'x' } }),
          decide(task, { action: 'refine', refineFeedback: 'x' }),
          decide(task, { action: 'accept', feedback: 42 }),
          decide(task, { action: 'ask' }),
          decide(task, { something: 'else' }),
        ];
        for (const m of bad) {
          const res = await untouched(task.id, () => alice.send(m));
          assertRpcError(res, -32602, res.body.id);
        }
        assert.equal((await alice.getTask(task.id)).status.state, 'input-required');
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });

      it('another tenant cannot decide (-32001) and the gate stays open', async () => {
        const task = await atGate('mine');
        const res = await untouched(task.id, () =>
          eve.send(message([{ kind: 'data', data: { action: 'accept' } }], { taskId: task.id })),
        );
        assertRpcError(res, -32001, res.body.id);
        assert.equal((await alice.getTask(task.id)).status.state, 'input-required');
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });

      it('a retried reply (same principal and messageId) answers with the task and is applied once', async () => {
        const task = await atGate('retry');
        const ask = reply(task, [textPart('same question')]);
        await alice.sendOk(ask);
        const again = await alice.sendOk(ask);
        assert.equal(again.status.state, 'input-required');
        assert.equal((await alice.run(task.id)).interrupt.exchanges.length, 1, 'the retried ask was recorded again');
        const accept = decide(task, { action: 'accept' });
        const done = await alice.sendOk(accept);
        assert.equal(done.status.state, 'completed');
        const retried = await alice.send(accept);
        assert.deepEqual(assertRpcResult(retried), done);
        const events = await t.events(task.id, alice.headers);
        assert.equal(events.filter((e) => e.type === 'approval.received').length, 1);
        assert.equal(events.filter((e) => e.type === 'a2a.message').length, 3);
      });

      it('5 parallel copies of one reply → one decision, every caller gets the task', {}, async () => {
        const task = await atGate('parallel');
        const accept = decide(task, { action: 'accept' });
        const results = await Promise.all(Array.from({ length: 5 }, () => alice.send(accept)));
        for (const r of results) {
          const got = assertRpcResult(r);
          assert.equal(got.id, task.id);
          assert.equal(got.status.state, 'completed');
        }
        const events = await t.events(task.id, alice.headers);
        assert.equal(events.filter((e) => e.type === 'approval.received').length, 1);
        assert.equal(events.filter((e) => e.type === 'run.completed').length, 1);
      });

      it('the same messageId from another principal is a new reply, not a retry', async () => {
        const task = await atGate('two voices');
        const id = `msg-${randomUUID()}`;
        await alice.sendOk(message([textPart('question from alice')], { taskId: task.id, messageId: id }));
        await bob.sendOk(message([textPart('question from bob')], { taskId: task.id, messageId: id }));
        const ex = (await alice.run(task.id)).interrupt.exchanges;
        assert.deepEqual(
          ex.map((e: Json) => e.principalId),
          ['alice', 'bob'],
        );
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });

      it('a reply reusing a messageId already applied to another task is a client error, not -32603', {}, async () => {
        const a = await atGate('a');
        const b = await atGate('b');
        const id = `msg-${randomUUID()}`;
        await alice.sendOk(message([textPart('on a')], { taskId: a.id, messageId: id }));
        const res = await alice.send(message([textPart('on b')], { taskId: b.id, messageId: id }));
        if (res.body.error) {
          assert.notEqual(res.body.error.code, -32603, res.text);
          assertRpcError(res, -32602, res.body.id);
        } else {
          assert.equal((await alice.run(b.id)).interrupt.exchanges.length, 1);
        }
      });

      it('a run started over REST is decided over A2A, and an A2A task over REST', async () => {
        const runId = await t.createRun('approval', { prompt: 'rest' }, alice.headers);
        await t.waitForStatus(runId, ['waiting-approval'], alice.headers);
        const viaRest = await alice.getTask(runId);
        assert.equal(viaRest.status.state, 'input-required');
        assert.equal(viaRest.metadata.openwop.interrupt.kind, 'approval');
        const done = await alice.sendOk(
          message([{ kind: 'data', data: { action: 'accept' } }], { taskId: runId, contextId: viaRest.contextId }),
        );
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { text: 'Draft: rest', approvedBy: 'alice' });

        const task = await atGate('a2a');
        const res = await t.post(
          `/v1/runs/${task.id}/interrupts/review`,
          { resumeValue: { action: 'accept' } },
          bob.headers,
        );
        assert.equal(res.status, 200, res.text);
        await t.waitForStatus(task.id, ['completed'], alice.headers);
        const got = await alice.getTask(task.id);
        assert.equal(got.status.state, 'completed');
        assert.deepEqual(artifactData(got), { text: 'Draft: a2a', approvedBy: 'bob' });
      });
    });

    // ------------------------------------------------------------ clarification

    describe('clarification', () => {
      async function asked(): Promise<Json> {
        const task = await alice.sendOk(skillMessage('clarify', 'greet me'));
        assert.equal(task.status.state, 'input-required', JSON.stringify(task));
        const it = task.metadata.openwop.interrupt;
        assert.equal(it.kind, 'clarification');
        assert.equal(it.nodeId, 'ask');
        assert.deepEqual(
          it.questions.map((q: Json) => q.id),
          ['name'],
        );
        assert.equal(task.metadata.openwop.runStatus, 'waiting-input');
        return task;
      }

      it('a plain text reply answers the single question → completed with the answer', async () => {
        const task = await asked();
        const done = await alice.sendOk(reply(task, [textPart('Ada')]));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { answer: 'Ada' });
        const snap = await alice.run(task.id);
        assert.equal(snap.nodeStates.ask.decidedBy, 'alice');
        assert.deepEqual(snap.nodeStates.ask.answers, { name: 'Ada' });
      });

      it('data {answers: {name}} and the array form [{id, answer}] work', async () => {
        const task = await asked();
        const done = await alice.sendOk(decide(task, { answers: { name: 'Ada' } }));
        assert.equal(done.status.state, 'completed');
        assert.deepEqual(artifactData(done), { answer: 'Ada' });

        const task2 = await asked();
        const done2 = await bob.sendOk(decide(task2, { answers: [{ id: 'name', answer: 'Grace' }] }));
        assert.deepEqual(artifactData(done2), { answer: 'Grace' });
        assert.equal((await alice.run(task2.id)).nodeStates.ask.decidedBy, 'bob');
      });

      it('answers that miss the question, or are not answers, are -32602 and leave it open', async () => {
        const task = await asked();
        for (const m of [
          decide(task, { answers: { other: 'x' } }),
          decide(task, { answers: {} }),
          decide(task, { answers: 'Ada' }),
          decide(task, { answers: { name: { nested: true } } }),
          decide(task, { action: 'accept' }),
        ]) {
          const res = await untouched(task.id, () => alice.send(m));
          assertRpcError(res, -32602, res.body.id);
        }
        assert.equal((await alice.getTask(task.id)).status.state, 'input-required');
        assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      });
    });

    // ------------------------------------------------------------ cancel

    describe('tasks/cancel', () => {
      it('an input-required approval task → canceled; again → -32002; a reply → -32004', async () => {
        const task = await atGate('cancel me');
        const canceled = assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }, 'c1'), 'c1');
        assert.equal(canceled.kind, 'task');
        assert.equal(canceled.id, task.id);
        assert.equal(canceled.contextId, task.contextId);
        assert.equal(canceled.status.state, 'canceled');
        assert.equal(canceled.metadata.openwop.interrupt, undefined);
        assert.equal((await alice.run(task.id)).status, 'cancelled');
        assert.equal((await alice.getTask(task.id)).status.state, 'canceled');

        const err = await untouched(task.id, () => alice.rpc('tasks/cancel', { id: task.id }, 'c2'));
        assertRpcError(err, -32002, 'c2');
        const res = await untouched(task.id, () => alice.send(decide(task, { action: 'accept' })));
        assertRpcError(res, -32004, res.body.id);
      });

      it('an input-required clarification task → canceled, by another principal of the tenant', async () => {
        const task = await alice.sendOk(skillMessage('clarify', 'x'));
        assert.equal(task.status.state, 'input-required');
        const canceled = assertRpcResult(await bob.rpc('tasks/cancel', { id: task.id }));
        assert.equal(canceled.status.state, 'canceled');
      });
    });
  });
}
