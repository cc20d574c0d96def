// Gate deadlines end to end on a real store (SQLite file; PostgreSQL when HANDOFF_TEST_PG_URL is
// set): each onTimeout outcome, the deadline on the REST snapshot and the A2A Task, a restart
// before the deadline (a new host on the same file / database), and an answer racing the expiry.
// The hosts run on a clock the test moves, so no test waits for a deadline to pass.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Clock } from '../../src/engine/clock.js';
import { Engine } from '../../src/engine/engine.js';
import { EngineError } from '../../src/engine/errors.js';
import { workerStep } from '../../src/engine/step.js';
import { definitionOf } from '../../src/engine/workflow/source.js';
import { ConflictError } from '../../src/store/errors.js';
import { getTask } from '../support/a2a.js';
import { dropSchema, uniqueSchemaName } from '../support/pg.js';
import { bearer, DIALECTS, PG_URL, type Json, startTestHost, type TestHost, waitForEvent } from '../support/host.js';

const TIMEOUT_MS = 3_600_000;
const KEYS = { alice: 'key-alice-000', boss: 'key-boss-0000', carol: 'key-carol-000' } as const;
const API_KEYS = Object.entries(KEYS)
  .map(([who, key]) => `${key}=acme:${who}`)
  .join(',');
const as = (who: keyof typeof KEYS) => bearer(KEYS[who]);

/** A clock only the test moves. */
class TestClock implements Clock {
  constructor(public t = Date.parse('2026-03-01T09:00:00.000Z')) {}
  now(): number {
    return this.t;
  }
}

const position = { x: 0, y: 0 };

/** draft → gate → final, with the gate's config as given. */
function workflow(id: string, gate: { typeId: string; config: Record<string, unknown> }) {
  return {
    id,
    name: id,
    version: '1.0.0',
    nodes: [
      {
        id: 'draft',
        typeId: 'core.transform',
        name: 'Draft',
        position,
        config: { output: { text: 'hello' } },
        inputs: {},
      },
      { id: 'review', typeId: gate.typeId, name: 'Review', position, config: gate.config, inputs: {} },
      {
        id: 'final',
        typeId: 'core.transform',
        name: 'Final',
        position,
        outputRole: 'artifact',
        config: { output: { review: '{{ nodes.review }}' } },
        inputs: {},
      },
    ],
    edges: [
      { id: 'e1', sourceNodeId: 'draft', targetNodeId: 'review' },
      { id: 'e2', sourceNodeId: 'review', targetNodeId: 'final' },
    ],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
  };
}

const approval = (extra: Record<string, unknown>) => ({
  typeId: 'core.approvalGate',
  config: { title: 'Review', artifactFrom: 'draft', timeoutMs: TIMEOUT_MS, ...extra },
});

const WORKFLOWS = [
  workflow('late-reject', approval({})),
  workflow('late-accept', approval({ onTimeout: 'accept' })),
  workflow('late-escalate', approval({ onTimeout: 'escalate', approversList: ['alice'], escalateTo: ['boss'] })),
  workflow('late-clarify', {
    typeId: 'core.clarificationGate',
    config: { questions: [{ id: 'why', question: 'Why?' }], timeoutMs: TIMEOUT_MS, onTimeout: 'accept' },
  }),
];

function workflowDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-deadlines-'));
  for (const w of WORKFLOWS) writeFileSync(join(dir, `${w.id}.json`), JSON.stringify(w));
  return dir;
}

const types = (events: Json[]) => events.map((e) => e.type as string);

/** The log has sequences 0…n-1 and exactly one resolution of the gate. */
function assertConsistentLog(events: Json[]): void {
  assert.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i),
  );
  assert.equal(types(events).filter((x) => x === 'interrupt.resolved').length, 1, types(events).join(', '));
}

for (const dialect of DIALECTS) {
  describe(`gate deadlines (${dialect})`, () => {
    let t: TestHost;
    let dir: string;
    const clock = new TestClock();
    before(async () => {
      dir = workflowDir();
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir], clock });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** Start a run and wait at its gate; returns the run id and the deadline it shows. */
    async function atGate(workflowId: string, status = 'waiting-approval') {
      const opened = clock.now();
      const runId = await t.createRun(workflowId, {}, as('carol'));
      const snap = await t.waitForStatus(runId, [status], as('carol'));
      const expiresAt = new Date(opened + TIMEOUT_MS).toISOString();
      assert.equal(snap.interrupt.expiresAt, expiresAt);
      assert.equal(snap.interrupt.payload.expiresAt, expiresAt);
      return { runId, expiresAt, deadline: opened + TIMEOUT_MS };
    }

    /** Move the clock past the deadline and let the worker look. */
    function pass(deadline: number): void {
      clock.t = deadline + 1;
      t.host.runner.kick();
    }

    it('the deadline is shown on the A2A Task and the REST snapshot, and is the next wake-up', async () => {
      const { runId, expiresAt, deadline } = await atGate('late-reject');
      const task = await getTask(t, runId, as('carol'));
      assert.equal(task.status.state, 'input-required');
      assert.equal(task.metadata.openwop.interrupt.expiresAt, expiresAt);
      assert.equal(await t.host.store.runs.nextWakeAt(), deadline);
      const list = await t.get('/v1/runs?status=waiting-approval', as('carol'));
      assert.equal(list.body.runs.find((r: Json) => r.runId === runId)?.interrupt.expiresAt, expiresAt);
      const requested = (await t.events(runId, as('carol'))).find((e: Json) => e.type === 'interrupt.requested');
      assert.equal(requested.payload.timeoutMs, TIMEOUT_MS);
      // Not yet due: a claim one millisecond early finds nothing.
      clock.t = deadline - 1;
      assert.deepEqual(await t.host.store.runs.claim('someone-else', 1000, 10), []);
      // Clean up: let it expire (the next test asserts what that does).
      pass(deadline);
      await t.waitForStatus(runId, ['failed'], as('carol'));
    });

    it('onTimeout reject (the default): the run fails with interrupt_timeout, a late answer gets 409', async () => {
      const { runId, deadline, expiresAt } = await atGate('late-reject');
      pass(deadline);
      const run = await t.waitForStatus(runId, ['failed'], as('carol'));
      assert.equal(run.error.code, 'interrupt_timeout');
      assert.equal(run.error.details.expiresAt, expiresAt);
      const events = await t.events(runId, as('carol'));
      assertConsistentLog(events);
      // As a person's reject: the gate completes as rejected and the run fails.
      assert.deepEqual(types(events).slice(-4), [
        'interrupt.expired',
        'interrupt.resolved',
        'node.completed',
        'run.failed',
      ]);
      const resolved = events.find((e: Json) => e.type === 'interrupt.resolved');
      assert.deepEqual(
        { outcome: resolved.payload.outcome, by: resolved.payload.resolvedBy, reason: resolved.payload.reason },
        { outcome: 'reject', by: 'system:timeout', reason: 'timeout' },
      );
      const late = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        as('alice'),
      );
      assert.equal(late.status, 409, late.text);
      assert.equal(late.body.error, 'interrupt_already_resolved');
      assert.equal((await t.events(runId, as('carol'))).length, events.length);
    });

    it('onTimeout accept: the approval goes on with the artifact it showed', async () => {
      const { runId, deadline } = await atGate('late-accept');
      pass(deadline);
      const run = await t.waitForStatus(runId, ['completed'], as('carol'));
      assert.deepEqual(run.nodeStates.review, {
        action: 'accept',
        artifact: { text: 'hello' },
        approvers: [],
        decidedBy: 'system:timeout',
        timedOut: true,
      });
      assertConsistentLog(await t.events(runId, as('carol')));
    });

    it('onTimeout accept on a clarification gate: the run goes on with no answers', async () => {
      const { runId, deadline } = await atGate('late-clarify', 'waiting-input');
      assert.equal((await getTask(t, runId, as('carol'))).metadata.openwop.interrupt.kind, 'clarification');
      pass(deadline);
      const run = await t.waitForStatus(runId, ['completed'], as('carol'));
      assert.deepEqual(run.nodeStates.review, { answers: {}, decidedBy: 'system:timeout', timedOut: true });
    });

    it('onTimeout escalate: the gate re-opens for escalateTo with a new deadline; they decide', async () => {
      const { runId, deadline } = await atGate('late-escalate');
      pass(deadline);
      const escalated = await waitForEvent(t.app, runId, (e) => e.type === 'interrupt.escalated', as('carol'));
      const newExpiry = new Date(deadline + 1 + TIMEOUT_MS).toISOString();
      assert.deepEqual(escalated.payload.escalateTo, ['boss']);
      assert.equal(escalated.payload.expiresAt, newExpiry);
      const snap = (await t.get(`/v1/runs/${runId}`, as('carol'))).body;
      assert.equal(snap.status, 'waiting-approval');
      assert.deepEqual(snap.interrupt.payload.approversList, ['boss']);
      assert.equal(snap.interrupt.expiresAt, newExpiry);
      assert.equal((await getTask(t, runId, as('carol'))).metadata.openwop.interrupt.expiresAt, newExpiry);
      // The run list shows the escalated gate too (read from the interrupt's data by the database).
      const listed = (await t.get('/v1/runs?status=waiting-approval', as('carol'))).body.runs.find(
        (r: Json) => r.runId === runId,
      );
      assert.deepEqual(listed.interrupt, {
        kind: 'approval',
        nodeId: 'review',
        title: listed.interrupt.title,
        approversList: ['boss'],
        expiresAt: newExpiry,
      });
      assert.equal(typeof listed.interrupt.title, 'string');
      assert.equal(await t.host.store.runs.nextWakeAt(), deadline + 1 + TIMEOUT_MS);
      // The original approver may no longer decide; the one escalated to may.
      const alice = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        as('alice'),
      );
      assert.equal(alice.status, 403, alice.text);
      const boss = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        as('boss'),
      );
      assert.equal(boss.status, 200, boss.text);
      const run = await t.waitForStatus(runId, ['completed'], as('carol'));
      assert.equal(run.nodeStates.review.decidedBy, 'boss');
      assertConsistentLog(await t.events(runId, as('carol')));
    });

    it('an escalated gate that times out again is rejected', async () => {
      const { runId, deadline } = await atGate('late-escalate');
      pass(deadline);
      await waitForEvent(t.app, runId, (e) => e.type === 'interrupt.escalated', as('carol'));
      pass(deadline + 1 + TIMEOUT_MS);
      const run = await t.waitForStatus(runId, ['failed'], as('carol'));
      assert.equal(run.error.code, 'interrupt_timeout');
      const events = await t.events(runId, as('carol'));
      assertConsistentLog(events);
      const expired = events.filter((e: Json) => e.type === 'interrupt.expired').map((e: Json) => e.payload.outcome);
      assert.deepEqual(expired, ['escalate', 'reject']);
      // The audit log records both acts of the deadline, in the commits that made them.
      const audit = await t.get(`/v1/audit?runId=${runId}`, as('carol'));
      assert.deepEqual(
        audit.body.entries.map((e: Json) => [e.act, e.principal, e.surface, e.values.outcome ?? e.values.escalateTo]),
        [
          ['escalate', 'system:timeout', 'deadline', ['boss']],
          ['timeout', 'system:timeout', 'deadline', 'reject'],
        ],
      );
    });

    it('a refine clears the deadline with the gate; the re-opened gate gets a fresh one', async () => {
      const { runId, deadline } = await atGate('late-accept');
      clock.t = deadline - 10;
      const refine = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'refine', refineFeedback: { scope: 'whole', text: 'shorter' } } },
        as('alice'),
      );
      assert.equal(refine.status, 200, refine.text);
      const snap = await t.waitForStatus(runId, ['waiting-approval'], as('carol'));
      assert.equal(snap.interrupt.expiresAt, new Date(deadline - 10 + TIMEOUT_MS).toISOString());
      assert.equal(await t.host.store.runs.nextWakeAt(), deadline - 10 + TIMEOUT_MS);
      const accept = await t.post(
        `/v1/runs/${runId}/interrupts/review`,
        { resumeValue: { action: 'accept' } },
        as('alice'),
      );
      assert.equal(accept.status, 200, accept.text);
      await t.waitForStatus(runId, ['completed'], as('carol'));
      assert.equal(await t.host.store.runs.nextWakeAt(), undefined);
    });
  });

  describe(`gate deadlines across a restart (${dialect})`, () => {
    it('a host restarted before the deadline shows it and expires the gate when it comes', async () => {
      const dir = workflowDir();
      const dataDir = mkdtempSync(join(tmpdir(), 'handoff-deadlines-data-'));
      const pgSchema = dialect === 'postgres' ? uniqueSchemaName('handoff_test') : undefined;
      const clock = new TestClock();
      const open = () =>
        startTestHost({
          pg: dialect === 'postgres',
          ...(pgSchema ? { pgSchema } : {}),
          dataDir,
          apiKeys: API_KEYS,
          workflows: [dir],
          clock,
        });
      let first: TestHost | undefined;
      let second: TestHost | undefined;
      try {
        first = await open();
        const deadline = clock.now() + TIMEOUT_MS;
        const runId = await first.createRun('late-accept', {}, as('carol'));
        await first.waitForStatus(runId, ['waiting-approval'], as('carol'));
        await first.close();
        clock.t = deadline - 1;
        second = await open();
        const snap = (await second.get(`/v1/runs/${runId}`, as('carol'))).body;
        assert.equal(snap.status, 'waiting-approval');
        assert.equal(snap.interrupt.expiresAt, new Date(deadline).toISOString());
        assert.equal(
          (await getTask(second, runId, as('carol'))).metadata.openwop.interrupt.expiresAt,
          new Date(deadline).toISOString(),
        );
        assert.equal(await second.host.store.runs.nextWakeAt(), deadline);
        clock.t = deadline;
        second.host.runner.kick();
        const run = await second.waitForStatus(runId, ['completed'], as('carol'));
        assert.equal(run.nodeStates.review.decidedBy, 'system:timeout');
        assertConsistentLog(await second.events(runId, as('carol')));
      } finally {
        await first?.close();
        await second?.close();
        rmSync(dir, { recursive: true, force: true });
        rmSync(dataDir, { recursive: true, force: true });
        if (pgSchema && PG_URL) await dropSchema(PG_URL, pgSchema);
      }
    });
  });

  describe(`an answer racing the deadline (${dialect})`, () => {
    const RUNS = 12;
    let t: TestHost;
    let dir: string;
    const clock = new TestClock();
    before(async () => {
      dir = workflowDir();
      t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, workflows: [dir], clock });
    });
    after(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('exactly one wins, atomically: the answer or the expiry, never both', async () => {
      const caller = { tenantId: 'acme', principalId: 'alice' };
      const opened = clock.now();
      const runIds: string[] = [];
      for (let i = 0; i < RUNS; i++) runIds.push(await t.createRun('late-reject', {}, as('carol')));
      for (const id of runIds) await t.waitForStatus(id, ['waiting-approval'], as('carol'));
      // From here on the test is both contenders: the host's own worker stays out of it.
      await t.host.runner.stop();
      const store = t.host.store;
      // Two instances whose clocks disagree: for the worker the deadline has passed, for the
      // instance taking the answer it has not. Both are entitled to act; the store picks one.
      clock.t = opened + TIMEOUT_MS + 1;
      const answering = new Engine(store, t.host.workflows, { clock: { now: () => opened + TIMEOUT_MS - 1 } });
      const claimed = await store.runs.claim('racer', 60_000, RUNS);
      assert.deepEqual(claimed.map((r) => r.runId).sort(), [...runIds].sort(), 'every gate is due');

      const wins = { answer: 0, deadline: 0 };
      await Promise.all(
        claimed.map(async (run, i) => {
          const expiry = () =>
            workerStep(store, definitionOf(t.host.workflows, run), run, { clock, fence: { owner: 'racer' } });
          const answer = () => answering.resolveInterrupt(caller, run.runId, 'review', { action: 'accept' });
          // Alternate who starts first; both are in flight before either settles.
          const [e, a] =
            i % 2 === 0
              ? await Promise.allSettled([expiry(), answer()] as const)
              : await Promise.allSettled([answer(), expiry()] as const).then(([x, y]) => [y, x] as const);
          const events = await t.events(run.runId, as('carol'));
          assertConsistentLog(events);
          const stored = await store.interrupts.getLatest(run.runId, 'review');
          if (a.status === 'fulfilled') {
            wins.answer++;
            assert.equal(a.value.outcome, 'resolved');
            assert.ok(e.status === 'rejected' && e.reason instanceof ConflictError, `expiry lost: ${String(e)}`);
            assert.ok(!types(events).includes('interrupt.expired'), types(events).join(', '));
            assert.equal(stored?.resolvedBy, 'alice');
            assert.equal((await store.runs.get(run.runId))?.wakeAt, undefined, 'the deadline went with the gate');
          } else {
            wins.deadline++;
            assert.ok(e.status === 'fulfilled', `expiry won: ${String(e.status === 'rejected' && e.reason)}`);
            assert.ok(
              a.reason instanceof EngineError && a.reason.code === 'interrupt_already_resolved',
              `the answer lost precisely: ${String(a.reason)}`,
            );
            assert.ok(!types(events).includes('approval.received'), types(events).join(', '));
            assert.equal(stored?.resolvedBy, 'system:timeout');
            assert.equal((await store.runs.get(run.runId))?.status, 'failed');
          }
        }),
      );
      assert.equal(wins.answer + wins.deadline, RUNS, JSON.stringify(wins));
      // Alternating who starts makes each side win some races: both branches above were checked.
      assert.ok(wins.answer > 0 && wins.deadline > 0, JSON.stringify(wins));
    });
  });
}
