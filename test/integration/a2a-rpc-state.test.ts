// The persisted A2ATaskState (RFC 0100; docs/protocol/openwop.md#a2ataskstate)
// read through GET /v1/a2a/tasks/{id}, for every run status this host reaches, and the RFC 0100
// conformance seams (docs/protocol/openwop.md#conformance-legs, #conformance-seams) behind HANDOFF_TEST_SEAMS=1. Each record
// must validate against schemas/a2a-task-state.schema.json, equal the projection of its run's
// status, carry interruptKind iff input-required, and move updatedAt only when the projected state
// moves. Runs on SQLite, and on PostgreSQL when HANDOFF_TEST_PG_URL is set.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { projectState } from '../../src/a2a/projection.js';
import type { RunStatus } from '../../src/store/model.js';
import {
  type A2AClient,
  a2aClient,
  assertRpcResult,
  assertSchema,
  dataMessage,
  skillMessage,
  textMessage,
  validateTaskState,
  API_KEYS,
  KEY_ALICE,
  KEY_EVE,
  startA2ATeam,
} from '../support/a2a.js';
import { DIALECTS, type Json, type TestHost, bearer, startTestHost, waitForEvent } from '../support/host.js';

const RECORD_KEYS = new Set(['taskId', 'runId', 'contextId', 'state', 'interruptKind', 'updatedAt', 'pushConfig']);

/**
 * Read the record of `taskId` and check it against its run: schema-valid, closed, runId ===
 * taskId, state and interruptKind equal projectState(run.status), interruptKind iff
 * input-required, contextId and updatedAt equal what tasks/get reports. Returns the record.
 */
async function checkedRecord(c: A2AClient, taskId: string, expectStatus?: RunStatus): Promise<Json> {
  const rec = await c.record(taskId);
  assertSchema(validateTaskState, rec, `A2ATaskState of ${taskId}`);
  for (const k of Object.keys(rec)) assert.ok(RECORD_KEYS.has(k), `unexpected key ${k}`);
  for (const k of ['inputs', 'outputs', 'artifacts', 'history', 'metadata', 'tenantId', 'principalId', 'messageId']) {
    assert.ok(!(k in rec), `the record must not carry ${k}`);
  }
  assert.equal(rec.taskId, taskId);
  assert.equal(rec.runId, rec.taskId);
  const run = await c.run(taskId);
  if (expectStatus) assert.equal(run.status, expectStatus);
  const projected = projectState(run.status as RunStatus);
  assert.equal(rec.state, projected.state, `run ${run.status} → ${rec.state}`);
  assert.equal(rec.interruptKind, projected.interruptKind);
  assert.equal('interruptKind' in rec, rec.state === 'input-required');
  // The record and the live Task agree.
  const task = await c.getTask(taskId);
  assert.equal(task.status.state, rec.state);
  assert.equal(task.contextId, rec.contextId);
  assert.equal(task.status.timestamp, rec.updatedAt);
  if (rec.state === 'input-required') assert.equal(task.metadata.openwop.interrupt.kind, rec.interruptKind);
  // The record never says anything about content.
  const text = JSON.stringify(rec);
  for (const secret of ['secret-prompt', 'Draft:']) assert.ok(!text.includes(secret), text);
  return rec;
}

for (const dialect of DIALECTS) {
  describe(`A2ATaskState records (${dialect})`, () => {
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

    it('completed (echo): updatedAt is the completing commit', async () => {
      const ctx = `ctx-${randomUUID()}`;
      const task = await alice.sendOk(textMessage('secret-prompt', { contextId: ctx }));
      const rec = await checkedRecord(alice, task.id, 'completed');
      assert.equal(rec.state, 'completed');
      assert.equal(rec.contextId, ctx);
      assert.equal(rec.updatedAt, (await alice.run(task.id)).updatedAt);
    });

    it('failed (fail skill)', async () => {
      const task = await alice.sendOk(skillMessage('fail', 'secret-prompt'));
      const rec = await checkedRecord(alice, task.id, 'failed');
      assert.equal(rec.state, 'failed');
      assert.equal(rec.updatedAt, (await alice.run(task.id)).updatedAt);
    });

    it('waiting-approval → input-required/approval; an ask keeps updatedAt; accept moves it; completed', async () => {
      const task = await alice.sendOk(skillMessage('approval', 'secret-prompt'));
      const waiting = await checkedRecord(alice, task.id, 'waiting-approval');
      assert.equal(waiting.state, 'input-required');
      assert.equal(waiting.interruptKind, 'approval');
      const snapAtGate = await alice.run(task.id);
      assert.equal(waiting.updatedAt, snapAtGate.updatedAt);

      // An ask commits to the run but does not change the projected state.
      const still = await alice.sendOk(textMessage('a question?', { taskId: task.id }));
      assert.equal(still.status.state, 'input-required');
      const afterAsk = await checkedRecord(alice, task.id, 'waiting-approval');
      assert.deepEqual(afterAsk, waiting);
      const snapAfterAsk = await alice.run(task.id);
      assert.ok(snapAfterAsk.updatedAt >= snapAtGate.updatedAt);
      assert.equal((await t.events(task.id, alice.headers)).filter((e) => e.type === 'approval.ask').length, 1);

      const done = await alice.sendOk(dataMessage({ action: 'accept' }, { taskId: task.id }));
      assert.equal(done.status.state, 'completed');
      const completed = await checkedRecord(alice, task.id, 'completed');
      assert.ok(!('interruptKind' in completed));
      assert.ok(completed.updatedAt >= waiting.updatedAt);
      assert.equal(completed.updatedAt, (await alice.run(task.id)).updatedAt);
    });

    it('waiting-input → input-required/clarification', async () => {
      const task = await alice.sendOk(skillMessage('clarify', 'secret-prompt'));
      const rec = await checkedRecord(alice, task.id, 'waiting-input');
      assert.equal(rec.state, 'input-required');
      assert.equal(rec.interruptKind, 'clarification');
      await alice.sendOk(textMessage('Ada', { taskId: task.id }));
      assert.equal((await checkedRecord(alice, task.id, 'completed')).state, 'completed');
    });

    it('cancelled (from input-required) → canceled, interruptKind dropped', async () => {
      const task = await alice.sendOk(skillMessage('approval', 'secret-prompt'));
      const before = await checkedRecord(alice, task.id, 'waiting-approval');
      assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      const rec = await checkedRecord(alice, task.id, 'cancelled');
      assert.equal(rec.state, 'canceled');
      assert.ok(!('interruptKind' in rec));
      assert.ok(rec.updatedAt >= before.updatedAt);
      assert.equal(rec.contextId, before.contextId);
    });

    it('running (steps, timer pending) → working; then cancelled → canceled', async () => {
      const task = await alice.sendOk(
        dataMessage({ steps: 1, stepMs: 3_600_000 }, { metadata: { skillId: 'steps' } }),
        {
          configuration: { blocking: false },
        },
      );
      await waitForEvent(t.app, task.id, (e) => e.type === 'node.started' && e.nodeId === 'step', alice.headers);
      const rec = await checkedRecord(alice, task.id, 'running');
      assert.equal(rec.state, 'working');
      assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      assert.equal((await checkedRecord(alice, task.id, 'cancelled')).state, 'canceled');
    });

    it('a steps run advancing step → count → step stays working with the same updatedAt', async () => {
      const task = await alice.sendOk(dataMessage({ steps: 1000, stepMs: 10 }, { metadata: { skillId: 'steps' } }), {
        configuration: { blocking: false },
      });
      const counted = (n: number) => (e: Json) =>
        e.type === 'node.completed' && e.nodeId === 'count' && e.payload.ordinal === n;
      await waitForEvent(t.app, task.id, counted(0), alice.headers);
      const first = await checkedRecord(alice, task.id);
      assert.equal(first.state, 'working');
      // Wait for two more counts after this read (count #k sets vars.i to k + 1).
      const snap1 = await alice.run(task.id);
      const k = Number(snap1.variables.i);
      await waitForEvent(t.app, task.id, counted(k + 1), alice.headers);
      const second = await alice.record(task.id);
      const snap2 = await alice.run(task.id);
      assert.equal(snap2.status, 'running');
      assert.ok(Number(snap2.variables.i) >= k + 2, 'the run itself moved on');
      assert.ok(snap2.updatedAt > first.updatedAt, 'the run was committed since the record last changed');
      assert.deepEqual(second, first, 'working → working must not touch the record');
      // Cancelling a run a worker may hold goes through cancelling (still working) to canceled.
      const canceled = assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      assert.equal(canceled.status.state, 'canceled');
      const rec = await checkedRecord(alice, task.id, 'cancelled');
      assert.ok(rec.updatedAt > first.updatedAt);
    });

    it('runs started over REST have a record too (generated contextId)', async () => {
      const runId = await t.createRun('echo', { prompt: 'secret-prompt' }, alice.headers);
      await t.waitForStatus(runId, ['completed'], alice.headers);
      const rec = await checkedRecord(alice, runId, 'completed');
      assert.equal(typeof rec.contextId, 'string');
      assert.ok(rec.contextId.length > 0);
    });

    it("another tenant's record → 404 exactly like an unknown id; the same tenant may read it", async () => {
      const task = await alice.sendOk(textMessage('mine'));
      const unknown = `run_${randomUUID()}`;
      const foreign = await eve.recordReply(task.id);
      const missing = await eve.recordReply(unknown);
      assert.equal(foreign.status, 404);
      assert.equal(missing.status, 404);
      assert.equal(foreign.text.replaceAll(task.id, '<ID>'), missing.text.replaceAll(unknown, '<ID>'));
      assert.equal((await alice.recordReply(unknown)).status, 404);
      // Tenancy is the boundary (docs/protocol/openwop.md#auth-and-tenancy): bob of t1 reads alice's record.
      assert.deepEqual(await bob.record(task.id), await alice.record(task.id));
    });
  });

  describe(`A2ATaskState: submitted (no worker running) (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, startRunner: false });
      alice = a2aClient(t, bearer(KEY_ALICE));
    });
    after(async () => {
      await t?.close();
    });

    it('pending → submitted, for a non-blocking send; cancel → canceled', async () => {
      const task = await alice.sendOk(textMessage('secret-prompt'), { configuration: { blocking: false } });
      assert.equal(task.status.state, 'submitted');
      const rec = await checkedRecord(alice, task.id, 'pending');
      assert.equal(rec.state, 'submitted');
      assert.equal(rec.updatedAt, (await alice.run(task.id)).updatedAt);
      const canceled = assertRpcResult(await alice.rpc('tasks/cancel', { id: task.id }));
      assert.equal(canceled.status.state, 'canceled');
      assert.equal((await checkedRecord(alice, task.id, 'cancelled')).state, 'canceled');
    });
  });

  describe(`RFC 0100 seams with HANDOFF_TEST_SEAMS=1 (${dialect})`, () => {
    let t: TestHost;
    let alice: A2AClient;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, env: { HANDOFF_TEST_SEAMS: '1' } });
      alice = a2aClient(t, bearer(KEY_ALICE));
    });
    after(async () => {
      await t?.close();
    });

    it('start {scenario: paused-at-approval} → 201 {taskId}; \
an immediate read shows input-required/approval', async () => {
      const res = await t.post('/v1/host/sample/a2a/tasks/start', { scenario: 'paused-at-approval' }, alice.headers);
      assert.equal(res.status, 201, res.text);
      const { taskId } = res.body;
      assert.equal(typeof taskId, 'string');
      assert.match(taskId, /^run_/);
      const seam = await t.get(`/v1/host/sample/a2a/tasks/${taskId}`, alice.headers);
      assert.equal(seam.status, 200, seam.text);
      assert.equal(seam.body.state, 'input-required');
      assert.equal(seam.body.interruptKind, 'approval');
      assert.equal(seam.body.runId, taskId);
      assert.equal(seam.body.taskId, taskId);
      assertSchema(validateTaskState, seam.body, 'the seam read');
      // The same handler as the RFC's host read.
      assert.deepEqual(await checkedRecord(alice, taskId, 'waiting-approval'), seam.body);
      // A real run: it can be decided over A2A.
      const done = await alice.sendOk(dataMessage({ action: 'accept' }, { taskId }));
      assert.equal(done.status.state, 'completed');
      assert.equal((await t.get(`/v1/host/sample/a2a/tasks/${taskId}`, alice.headers)).body.state, 'completed');
    });

    it('any other scenario (or none) → 400, and no run is started', async () => {
      const before = await t.host.store.runs.count();
      for (const body of [
        { scenario: 'paused-at-input' },
        { scenario: '' },
        {},
        { scenario: ['paused-at-approval'] },
      ]) {
        const res = await t.post('/v1/host/sample/a2a/tasks/start', body, alice.headers);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      }
      assert.equal(await t.host.store.runs.count(), before);
    });

    it('the seam read: unknown → 404; another tenant → 404; no credentials → 401', async () => {
      assert.equal((await t.get(`/v1/host/sample/a2a/tasks/run_${randomUUID()}`, alice.headers)).status, 404);
      const res = await t.post('/v1/host/sample/a2a/tasks/start', { scenario: 'paused-at-approval' }, alice.headers);
      assert.equal(res.status, 201);
      assert.equal((await t.get(`/v1/host/sample/a2a/tasks/${res.body.taskId}`, bearer(KEY_EVE))).status, 404);
      assert.equal((await t.get(`/v1/host/sample/a2a/tasks/${res.body.taskId}`)).status, 401);
      assert.equal((await t.post('/v1/host/sample/a2a/tasks/start', { scenario: 'paused-at-approval' })).status, 401);
      assertRpcResult(await alice.rpc('tasks/cancel', { id: res.body.taskId }));
    });
  });

  describe(`RFC 0100 seams without HANDOFF_TEST_SEAMS (${dialect})`, () => {
    let t: TestHost;
    before(async () => {
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS });
    });
    after(async () => {
      await t?.close();
    });

    it('are absent (404) and start nothing', async () => {
      const before = await t.host.store.runs.count();
      const start = await t.post(
        '/v1/host/sample/a2a/tasks/start',
        { scenario: 'paused-at-approval' },
        bearer(KEY_ALICE),
      );
      assert.equal(start.status, 404, start.text);
      const task = await a2aClient(t, bearer(KEY_ALICE)).sendOk(textMessage('x'));
      assert.equal((await t.get(`/v1/host/sample/a2a/tasks/${task.id}`, bearer(KEY_ALICE))).status, 404);
      assert.equal(await t.host.store.runs.count(), before + 1);
      // The RFC's own host read stays.
      assert.equal((await t.get(`/v1/a2a/tasks/${task.id}`, bearer(KEY_ALICE))).status, 200);
    });
  });
}
