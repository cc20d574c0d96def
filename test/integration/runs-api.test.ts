// The OpenWOP run API end to end through Fastify inject (docs/protocol/openwop.md#run-api): run
// lifecycles, the five approval actions, clarification, cancel in every state, concurrent
// resolution and idempotent creation. Runs on SQLite, and on PostgreSQL when
// HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type Json, type TestHost, startTestHost, waitForEvent } from '../support/host.js';

const types = (events: Json[]): string[] => events.map((e) => e.type as string);
const count = (events: Json[], type: string): number => events.filter((e) => e.type === type).length;

/** Sequences are 0, 1, 2, … with no gap and no repeat. */
function assertGapFree(events: Json[]): void {
  assert.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i),
    `sequences: ${events.map((e) => `${e.sequence}:${e.type}`).join(', ')}`,
  );
}

for (const dialect of DIALECTS) {
  describe(`runs API flows (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres' });
    });
    after(async () => {
      await t?.close();
    });

    /** Start an approval run and wait at its gate; returns the snapshot there. */
    async function atGate(prompt = 'hello'): Promise<{ runId: string; snap: Json }> {
      const runId = await t.createRun('approval', { prompt });
      const snap = await t.waitForStatus(runId, ['waiting-approval']);
      return { runId, snap };
    }

    /** Snapshot plus event count: what must not move when a request is refused. */
    async function observe(runId: string): Promise<{ snap: Json; events: number }> {
      const res = await t.get(`/v1/runs/${runId}`);
      assert.equal(res.status, 200);
      return { snap: res.body, events: (await t.events(runId)).length };
    }

    const review = (runId: string, resumeValue: unknown) =>
      t.post(`/v1/runs/${runId}/interrupts/review`, { resumeValue });

    describe('echo', () => {
      it('201 → completed, with a gap-free event log from 0', async () => {
        const res = await t.post('/v1/runs', { workflowId: 'echo', inputs: { prompt: 'hi there' } });
        assert.equal(res.status, 201, res.text);
        const { runId } = res.body;
        assert.match(runId, /^run_/);
        assert.ok(['pending', 'running', 'completed'].includes(res.body.status), res.body.status);
        assert.equal(res.body.eventsUrl, `/v1/runs/${runId}/events`);

        const snap = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(snap.status, 'completed');
        assert.equal(snap.workflowId, 'echo');
        assert.deepEqual(snap.nodeStates.echo, { echo: 'hi there' });
        assert.ok(snap.completedAt);
        assert.equal(snap.interrupt, undefined);

        const events = await t.events(runId);
        assertGapFree(events);
        const ty = types(events);
        assert.equal(ty[0], 'run.started');
        assert.equal(count(events, 'run.started'), 1);
        assert.equal(ty.at(-1), 'run.completed');
        assert.equal(count(events, 'run.completed'), 1);
        const at = (type: string) => ty.indexOf(type);
        assert.ok(at('node.started') > at('run.started'), ty.join(','));
        assert.ok(at('node.completed') > at('node.started'), ty.join(','));
        assert.ok(at('artifact.created') > at('node.completed'), ty.join(','));
        const artifact = events.find((e) => e.type === 'artifact.created');
        assert.equal(artifact.nodeId, 'echo');
        assert.deepEqual(artifact.payload.data, { echo: 'hi there' });
        for (const e of events) {
          assert.equal(e.runId, runId);
          assert.equal(e.eventId, `evt-${runId}-${e.sequence}`);
          assert.ok(!Number.isNaN(Date.parse(e.timestamp)), e.timestamp);
        }

        // A poll past the end of a terminal run returns at once, complete.
        const last = events.at(-1).sequence;
        const poll = await t.get(`/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=30`);
        assert.equal(poll.status, 200);
        assert.deepEqual(poll.body.events, []);
        assert.equal(poll.body.isComplete, true);
      });
    });

    describe('approval: the five actions', () => {
      it('opens an approval interrupt with the draft as its artifact', async () => {
        const { runId, snap } = await atGate('spring');
        assert.equal(snap.currentNodeId, 'review');
        assert.equal(snap.interrupt.kind, 'approval');
        assert.equal(snap.interrupt.nodeId, 'review');
        assert.deepEqual(snap.interrupt.payload.artifact, snap.nodeStates.draft);
        assert.equal(snap.interrupt.payload.artifact.text, 'Draft: spring');
        assert.deepEqual(snap.interrupt.payload.actions, ['accept', 'reject', 'refine', 'edit-accept', 'ask']);
        const events = await t.events(runId);
        assertGapFree(events);
        assert.deepEqual(types(events).slice(-3), ['node.suspended', 'approval.requested', 'interrupt.requested']);
      });

      it('accept → completed with the draft text, approvedBy = the principal', async () => {
        const { runId, snap } = await atGate('hello');
        const draft = snap.interrupt.payload.artifact.text;
        const res = await review(runId, { action: 'accept' });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.interrupt.outcome, 'resolved');
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
        assert.deepEqual(done.nodeStates.final, { text: draft, approvedBy: 'local' });
        assert.equal(done.interrupt, undefined);
        const events = await t.events(runId);
        assertGapFree(events);
        const received = events.find((e) => e.type === 'approval.received');
        assert.equal(received.payload.decidedBy, 'local');
        assert.equal(received.payload.action, 'accept');
        assert.equal(count(events, 'interrupt.resolved'), 1);
        assert.equal(count(events, 'run.completed'), 1);
        const artifact = events.find((e) => e.type === 'artifact.created');
        assert.deepEqual(artifact.payload.data, { text: draft, approvedBy: 'local' });
      });

      it('reject → failed with interrupt_rejected', async () => {
        const { runId } = await atGate();
        const res = await review(runId, { action: 'reject', feedback: 'no' });
        assert.equal(res.status, 200, res.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'failed');
        assert.equal(done.error.code, 'interrupt_rejected');
        const events = await t.events(runId);
        assertGapFree(events);
        assert.equal(types(events).at(-1), 'run.failed');
        assert.equal(count(events, 'node.started'), 2, 'final never ran'); // draft and review
        assert.equal(done.nodeStates.final, undefined);
      });

      it('refine → the draft runs again (ordinal 1) with the feedback, a new interrupt opens, \
accept completes', async () => {
        const { runId, snap } = await atGate('hello');
        const firstInterrupt = snap.interrupt.interruptId;
        const res = await review(runId, { action: 'refine', refineFeedback: { scope: 'whole', text: 'shorter' } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.interrupt.outcome, 'resolved');

        // The new gate opens once the draft ran again: wait for the second approval.requested.
        await waitForEvent(
          t.app,
          runId,
          (e) => e.type === 'approval.requested' && e.payload.interruptId !== firstInterrupt,
        );
        const again = await t.waitForStatus(runId, ['waiting-approval']);
        assert.notEqual(again.interrupt.interruptId, firstInterrupt);
        const revised = again.interrupt.payload.artifact.text as string;
        assert.match(revised, /shorter/);
        assert.notEqual(revised, snap.interrupt.payload.artifact.text);

        const events = await t.events(runId);
        const draftStarts = events.filter((e) => e.type === 'node.started' && e.nodeId === 'draft');
        assert.deepEqual(
          draftStarts.map((e) => e.payload.ordinal),
          [0, 1],
        );
        const reviewCompleted = events.find((e) => e.type === 'node.completed' && e.nodeId === 'review');
        assert.equal(reviewCompleted.payload.outcome, 'refine');
        assert.equal(count(events, 'interrupt.requested'), 2);

        const ok = await review(runId, { action: 'accept' });
        assert.equal(ok.status, 200, ok.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
        assert.equal(done.nodeStates.final.text, revised);
        assertGapFree(await t.events(runId));
      });

      it('edit-accept → completed with the edited artifact', async () => {
        const { runId } = await atGate();
        const res = await review(runId, { action: 'edit-accept', editedArtifactData: { text: 'edited' } });
        assert.equal(res.status, 200, res.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
        assert.deepEqual(done.nodeStates.final, { text: 'edited', approvedBy: 'local' });
      });

      it('ask → stays waiting-approval with the exchange recorded, then accept works', async () => {
        const { runId } = await atGate();
        const res = await review(runId, { action: 'ask', question: 'Why spring?' });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, 'waiting-approval');
        assert.equal(res.body.interrupt.outcome, 'ask-recorded');
        const snap = (await t.get(`/v1/runs/${runId}`)).body;
        assert.equal(snap.status, 'waiting-approval');
        assert.equal(snap.interrupt.exchanges.length, 1);
        assert.equal(snap.interrupt.exchanges[0].question, 'Why spring?');
        assert.equal(snap.interrupt.exchanges[0].principalId, 'local');

        const viaFeedback = await review(runId, { action: 'ask', feedback: 'And the tone?' });
        assert.equal(viaFeedback.status, 200, viaFeedback.text);
        const snap2 = (await t.get(`/v1/runs/${runId}`)).body;
        assert.deepEqual(
          snap2.interrupt.exchanges.map((x: Json) => x.question),
          ['Why spring?', 'And the tone?'],
        );

        const ok = await review(runId, { action: 'accept' });
        assert.equal(ok.status, 200, ok.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
      });

      it('refine without refineFeedback, edit-accept without editedArtifactData → 400, nothing changes', async () => {
        const { runId } = await atGate();
        const before = await observe(runId);
        for (const resumeValue of [
          { action: 'refine' },
          { action: 'refine', refineFeedback: { text: 'no scope' } },
          { action: 'edit-accept' },
        ]) {
          const res = await review(runId, resumeValue);
          assert.equal(res.status, 400, `${JSON.stringify(resumeValue)}: ${res.text}`);
          assert.equal(res.body.error, 'validation_error');
          assert.equal(typeof res.body.message, 'string');
        }
        const afterwards = await observe(runId);
        assert.equal(afterwards.events, before.events);
        assert.deepEqual(afterwards.snap, before.snap);
      });

      it('unknown action, missing action, non-object resumeValue → 400, nothing changes', async () => {
        const { runId } = await atGate();
        const before = await observe(runId);
        for (const body of [
          { resumeValue: { action: 'approve-all' } },
          { resumeValue: {} },
          { resumeValue: 'accept' },
          {},
        ]) {
          const res = await t.post(`/v1/runs/${runId}/interrupts/review`, body);
          assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
          assert.equal(res.body.error, 'validation_error');
        }
        const afterwards = await observe(runId);
        assert.equal(afterwards.events, before.events);
        assert.deepEqual(afterwards.snap, before.snap);
      });

      it('legacy POST /v1/runs/{id}/approvals/review {action: accept} works', async () => {
        const { runId } = await atGate();
        const res = await t.post(`/v1/runs/${runId}/approvals/review`, { action: 'accept' });
        assert.equal(res.status, 200, res.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
        // Resolving again is a precise 409.
        const again = await t.post(`/v1/runs/${runId}/approvals/review`, { action: 'accept' });
        assert.equal(again.status, 409, again.text);
        assert.equal(again.body.error, 'interrupt_already_resolved');
      });
    });

    describe('clarification', () => {
      it('waiting-input; answers {name} → completed with the answer', async () => {
        const runId = await t.createRun('clarify');
        const snap = await t.waitForStatus(runId, ['waiting-input']);
        assert.equal(snap.interrupt.kind, 'clarification');
        assert.equal(snap.currentNodeId, 'ask');
        assert.deepEqual(
          snap.interrupt.payload.questions.map((q: Json) => q.id),
          ['name'],
        );
        const res = await t.post(`/v1/runs/${runId}/interrupts/ask`, { resumeValue: { answers: { name: 'Ada' } } });
        assert.equal(res.status, 200, res.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.equal(done.status, 'completed');
        assert.deepEqual(done.nodeStates.answer, { answer: 'Ada' });
        const events = await t.events(runId);
        assertGapFree(events);
        assert.equal(count(events, 'clarification.requested'), 1);
        assert.equal(count(events, 'clarification.resolved'), 1);
      });

      it('the [{id, answer}] form works', async () => {
        const runId = await t.createRun('clarify');
        await t.waitForStatus(runId, ['waiting-input']);
        const res = await t.post(`/v1/runs/${runId}/interrupts/ask`, {
          resumeValue: { answers: [{ id: 'name', answer: 'Bo' }] },
        });
        assert.equal(res.status, 200, res.text);
        const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
        assert.deepEqual(done.nodeStates.answer, { answer: 'Bo' });
      });

      it('a missing answer → 400, nothing changes', async () => {
        const runId = await t.createRun('clarify');
        await t.waitForStatus(runId, ['waiting-input']);
        const before = await observe(runId);
        for (const resumeValue of [{ answers: {} }, { answers: [{ id: 'other', answer: 'x' }] }, {}]) {
          const res = await t.post(`/v1/runs/${runId}/interrupts/ask`, { resumeValue });
          assert.equal(res.status, 400, `${JSON.stringify(resumeValue)}: ${res.text}`);
          assert.equal(res.body.error, 'validation_error');
        }
        const afterwards = await observe(runId);
        assert.equal(afterwards.events, before.events);
        assert.deepEqual(afterwards.snap, before.snap);
      });
    });

    describe('cancel', () => {
      it('a pending run (no worker) → cancelled; a worker started later leaves it alone', async () => {
        const idle = await startTestHost({ pg: dialect === 'postgres', startRunner: false });
        try {
          const runId = await idle.createRun('echo', { prompt: 'never' });
          assert.equal((await idle.get(`/v1/runs/${runId}`)).body.status, 'pending');
          const res = await idle.post(`/v1/runs/${runId}/cancel`, { reason: 'changed my mind' });
          assert.equal(res.status, 200, res.text);
          assert.deepEqual(res.body, { runId, status: 'cancelled' });
          idle.host.runner.start();
          const snap = await idle.waitForStatus(runId, ['cancelled', 'completed', 'failed']);
          assert.equal(snap.status, 'cancelled');
          const events = await idle.events(runId);
          assertGapFree(events);
          assert.equal(types(events).at(-1), 'run.cancelled');
          assert.equal(events.at(-1).payload.reason, 'changed my mind');
          assert.equal(count(events, 'run.started'), 0);
          assert.equal(count(events, 'run.completed'), 0);
        } finally {
          await idle.close();
        }
      });

      it('a run sleeping on a durable timer → cancelled at once', async () => {
        const runId = await t.createRun('steps', { steps: 2, stepMs: 60_000 });
        await waitForEvent(
          t.app,
          runId,
          (e) => e.type === 'node.started' && e.nodeId === 'step' && e.payload.wakeAt !== undefined,
        );
        const res = await t.post(`/v1/runs/${runId}/cancel`, {});
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, 'cancelled');
        const snap = await t.waitForStatus(runId, ['cancelled']);
        assert.ok(snap.completedAt);
        const events = await t.events(runId);
        assertGapFree(events);
        assert.deepEqual(types(events).slice(-2), ['node.cancelled', 'run.cancelled']);
      });

      it('waiting-approval → cancelled; resolving its interrupt then → 422 interrupt_cancelled', async () => {
        const { runId } = await atGate();
        const res = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'obsolete' });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { runId, status: 'cancelled' });
        const snap = (await t.get(`/v1/runs/${runId}`)).body;
        assert.equal(snap.status, 'cancelled');
        assert.equal(snap.interrupt, undefined);
        const before = (await t.events(runId)).length;
        const late = await review(runId, { action: 'accept' });
        assert.equal(late.status, 422, late.text);
        assert.equal(late.body.error, 'interrupt_cancelled');
        assert.equal((await t.events(runId)).length, before);
      });

      it('waiting-input → cancelled', async () => {
        const runId = await t.createRun('clarify');
        await t.waitForStatus(runId, ['waiting-input']);
        const res = await t.post(`/v1/runs/${runId}/cancel`);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, 'cancelled');
        const late = await t.post(`/v1/runs/${runId}/interrupts/ask`, { resumeValue: { answers: { name: 'x' } } });
        assert.equal(late.status, 422, late.text);
        assert.equal(late.body.error, 'interrupt_cancelled');
      });

      it('an already terminal run → 409 run_terminal, nothing changes', async () => {
        for (const [workflowId, status] of [
          ['echo', 'completed'],
          ['fail', 'failed'],
        ] as const) {
          const runId = await t.createRun(workflowId);
          await t.waitForStatus(runId, [status]);
          const before = await observe(runId);
          const res = await t.post(`/v1/runs/${runId}/cancel`);
          assert.equal(res.status, 409, res.text);
          assert.equal(res.body.error, 'run_terminal');
          const afterwards = await observe(runId);
          assert.deepEqual(afterwards, before);
        }
        const { runId } = await atGate();
        await t.post(`/v1/runs/${runId}/cancel`);
        const twice = await t.post(`/v1/runs/${runId}/cancel`);
        assert.equal(twice.status, 409, twice.text);
        assert.equal(twice.body.error, 'run_terminal');
      });

      /** Start a long busy run (no sleeps) and wait until the worker is inside its loop. */
      async function busyRun(): Promise<string> {
        const runId = await t.createRun('steps', { steps: 2_000, stepMs: 0 });
        await waitForEvent(
          t.app,
          runId,
          (e) => e.type === 'node.completed' && e.nodeId === 'count' && e.payload.ordinal >= 2,
        );
        return runId;
      }

      /** The run ended cancelled, its log ends with run.cancelled, and nothing is appended later. */
      async function assertCancelledForGood(runId: string, accepted: string): Promise<void> {
        const snap = await t.waitForStatus(runId, ['cancelled', 'completed', 'failed']);
        assert.equal(snap.status, 'cancelled');
        const events = await t.events(runId);
        assertGapFree(events);
        assert.equal(types(events).at(-1), 'run.cancelled');
        assert.equal(count(events, 'run.cancelled'), 1);
        assert.equal(count(events, 'run.completed'), 0);
        if (accepted === 'cancelling') {
          const at = types(events).indexOf('run.cancelling');
          assert.ok(at >= 0 && at < events.length - 1, 'run.cancelling precedes run.cancelled');
        }
        // Nothing is appended afterwards (the long-poll gives up after 1 s with nothing new).
        const last = events.at(-1).sequence;
        const poll = await t.get(`/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=1`);
        assert.equal(poll.status, 200);
        assert.deepEqual(poll.body.events, []);
        assert.equal(poll.body.isComplete, true);
        assert.equal((await t.get(`/v1/runs/${runId}`)).body.status, 'cancelled');
      }

      it('a run being executed → the cancel is accepted (cancelling), then cancelled, nothing runs after', async () => {
        const runId = await busyRun();
        const res = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'stop' });
        assert.equal(res.status, 200, res.text);
        assert.ok(['cancelling', 'cancelled'].includes(res.body.status), res.body.status);
        await assertCancelledForGood(runId, res.body.status);
      });

      it('a run being executed, cancel retried on 409 conflict → cancelled, nothing runs after', async () => {
        const runId = await busyRun();
        let res = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'stop' });
        for (let tries = 1; res.status === 409 && res.body.error === 'conflict' && tries < 50; tries++) {
          res = await t.post(`/v1/runs/${runId}/cancel`, { reason: 'stop' });
        }
        assert.equal(res.status, 200, res.text);
        assert.ok(['cancelling', 'cancelled'].includes(res.body.status), res.body.status);
        await assertCancelledForGood(runId, res.body.status);
      });
    });

    describe('concurrent resolution', () => {
      it('two parallel accepts on one interrupt: exactly one 200, one 409; the run completes once (×10)', async () => {
        for (let i = 0; i < 10; i++) {
          const { runId } = await atGate(`race ${i}`);
          const [a, b] = await Promise.all([review(runId, { action: 'accept' }), review(runId, { action: 'accept' })]);
          const statuses = [a.status, b.status].sort();
          assert.deepEqual(statuses, [200, 409], `round ${i}: ${a.text} / ${b.text}`);
          const loser = a.status === 409 ? a : b;
          assert.equal(loser.body.error, 'interrupt_already_resolved', loser.text);
          const done = await t.waitForStatus(runId, ['completed', 'failed', 'cancelled']);
          assert.equal(done.status, 'completed');
          const events = await t.events(runId);
          assertGapFree(events);
          assert.equal(count(events, 'run.completed'), 1);
          assert.equal(count(events, 'approval.received'), 1);
          assert.equal(count(events, 'interrupt.resolved'), 1);
          assert.equal(events.filter((e) => e.type === 'node.started' && e.nodeId === 'final').length, 1);
        }
      });
    });

    describe('idempotent creation', () => {
      const create = (key: string, body: unknown) => t.post('/v1/runs', body, { 'idempotency-key': key });

      it('same key and body → same run, 201 both times, replay header on the second, one run.started', async () => {
        const key = `k-${randomUUID()}`;
        const body = { workflowId: 'echo', inputs: { prompt: 'once' }, tags: ['a'] };
        const runsBefore = await t.host.store.runs.count();
        const first = await create(key, body);
        assert.equal(first.status, 201, first.text);
        assert.equal(first.headers['openwop-idempotent-replay'], undefined);
        // Key order in the body does not matter (canonical digest).
        const second = await create(key, { tags: ['a'], inputs: { prompt: 'once' }, workflowId: 'echo' });
        assert.equal(second.status, 201, second.text);
        assert.equal(second.body.runId, first.body.runId);
        assert.equal(second.headers['openwop-idempotent-replay'], 'true');
        assert.equal(await t.host.store.runs.count(), runsBefore + 1);
        await t.waitForStatus(first.body.runId, ['completed']);
        const third = await create(key, body);
        assert.equal(third.status, 201);
        assert.equal(third.body.runId, first.body.runId);
        assert.equal(third.body.status, 'completed');
        const events = await t.events(first.body.runId);
        assert.equal(count(events, 'run.started'), 1);
        assert.equal(count(events, 'run.completed'), 1);
      });

      it('same key, different body → 409 idempotency_key_mismatch, no run', async () => {
        const key = `k-${randomUUID()}`;
        const first = await create(key, { workflowId: 'echo', inputs: { prompt: 'a' } });
        assert.equal(first.status, 201, first.text);
        const runsBefore = await t.host.store.runs.count();
        const other = await create(key, { workflowId: 'echo', inputs: { prompt: 'b' } });
        assert.equal(other.status, 409, other.text);
        assert.equal(other.body.error, 'idempotency_key_mismatch');
        assert.equal(other.body.runId, undefined);
        assert.equal(await t.host.store.runs.count(), runsBefore);
      });

      it('parallel duplicates (×5) → one run', async () => {
        const key = `k-${randomUUID()}`;
        const body = { workflowId: 'echo', inputs: { prompt: 'parallel' } };
        const runsBefore = await t.host.store.runs.count();
        const replies = await Promise.all(Array.from({ length: 5 }, () => create(key, body)));
        for (const r of replies) assert.equal(r.status, 201, r.text);
        const ids = new Set(replies.map((r) => r.body.runId));
        assert.equal(ids.size, 1, [...ids].join(', '));
        assert.equal(replies.filter((r) => r.headers['openwop-idempotent-replay'] === 'true').length, 4);
        assert.equal(await t.host.store.runs.count(), runsBefore + 1);
        const runId = [...ids][0] as string;
        await t.waitForStatus(runId, ['completed']);
        assert.equal(count(await t.events(runId), 'run.started'), 1);
      });

      it('an invalid key (spaces, 300 chars, empty, not URL-safe) → 400, no run', async () => {
        const runsBefore = await t.host.store.runs.count();
        for (const key of ['has spaces', 'x'.repeat(300), '', 'a/b?c']) {
          const res = await create(key, { workflowId: 'echo' });
          assert.equal(res.status, 400, `${key.slice(0, 20)}: ${res.text}`);
          assert.equal(res.body.error, 'validation_error');
        }
        assert.equal(await t.host.store.runs.count(), runsBefore);
      });
    });
  });
}
