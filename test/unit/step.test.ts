// One step of a run (src/engine/step.ts) through a real store: SQLite in memory, on a clock the
// test moves. Each outcome a node can have — completed, sleep, interrupt, failed, an executor
// that throws — is committed as one patch with its events; a timer not yet due commits nothing;
// and the commit is fenced by the worker's lease: a worker that lost it commits nothing, and the
// node's next execution gets the same idempotency key.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { branchStep, type StepContext, workerStep } from '../../src/engine/step.js';
import type { WorkflowDefinition } from '../../src/engine/workflow/definition.js';
import { ConflictError } from '../../src/store/errors.js';
import type { RunRecord } from '../../src/store/model.js';
import type { Store } from '../../src/store/store.js';
import { node, workflowOf } from '../support/call-workflows.js';
import { lineOf, ManualClock, memoryStore, ProbeNode, T0, withNodes } from '../support/engine-parts.js';
import { newRun } from '../support/runs.js';

const LEASE_MS = 30_000;

describe('workerStep: one step, committed', () => {
  let clock: ManualClock;
  let store: Store;
  let probe: ProbeNode;
  let executed: string[];
  let ctx: StepContext;

  beforeEach(async () => {
    clock = new ManualClock();
    store = await memoryStore(clock);
    probe = new ProbeNode();
    executed = [];
    ctx = {
      clock,
      fence: { owner: 'w1' },
      nodeTypes: withNodes(probe),
      onExecuted: (type, outcome) => executed.push(`${type}:${outcome}`),
    };
  });
  afterEach(() => store.close());

  /** A new pending run of `def` at its first node, claimed by `owner`. */
  async function claimed(def: WorkflowDefinition, owner = 'w1'): Promise<RunRecord> {
    const first = def.nodes[0]?.id as string;
    const run = newRun({
      workflowId: def.id,
      cursor: { nodeId: first, ordinals: {} },
      createdAt: clock.date().toISOString(),
    });
    await store.transaction((tx) => tx.insertRun(run, []));
    const [leased] = await store.runs.claim(owner, LEASE_MS, 1);
    assert.equal(leased?.runId, run.runId);
    return leased as RunRecord;
  }

  const log = async (runId: string) =>
    (await store.events.list(runId)).map((e) => (e.nodeId ? `${e.type}:${e.nodeId}` : e.type));

  it('completed: the run starts and moves to the next node in one commit; the worker keeps the lease', async () => {
    const def = lineOf('w', [
      ['a', 'core.transform', { output: { n: '{{ 1 + 1 }}' }, set: { seen: true } }],
      ['b', 'core.transform'],
    ]);
    const run = await claimed(def);
    const out = await workerStep(store, def, run, ctx);
    assert.equal(out.kind, 'continue');
    const stored = await store.runs.get(run.runId);
    assert.deepEqual(out.run, stored, 'the outcome carries the committed record');
    assert.equal(stored?.status, 'running');
    assert.equal(stored?.version, run.version + 1);
    assert.deepEqual(stored?.cursor, { nodeId: 'b', ordinals: { a: 1 } });
    assert.deepEqual(stored?.state, { outputs: { a: { n: 2 } }, vars: { seen: true } });
    assert.equal(stored?.leaseOwner, 'w1');
    assert.deepEqual(await log(run.runId), ['run.started', 'node.started:a', 'node.completed:a']);
    assert.deepEqual(executed, ['core.transform:completed']);
  });

  it('completed at the last node: the run completes and the lease is handed back', async () => {
    const def = lineOf('w', [['only', 'core.transform', { output: 'done' }]]);
    const run = await claimed(def);
    const out = await workerStep(store, def, run, ctx);
    assert.equal(out.kind, 'settled');
    assert.equal(out.run.status, 'completed');
    assert.equal(out.run.completedAt, new Date(T0).toISOString());
    assert.equal(out.run.leaseOwner, undefined);
    assert.deepEqual(await log(run.runId), [
      'run.started',
      'node.started:only',
      'node.completed:only',
      'run.completed',
    ]);
  });

  it('sleep: a durable timer, the lease handed back; not due → idle, nothing committed; due → it completes', async () => {
    const def = lineOf('w', [
      ['wait', 'core.delay', { ms: 5_000 }],
      ['end', 'core.transform'],
    ]);
    const run = await claimed(def);
    const slept = await workerStep(store, def, run, ctx);
    assert.equal(slept.kind, 'settled');
    assert.equal(slept.run.status, 'running');
    assert.equal(slept.run.wakeAt, T0 + 5_000);
    assert.deepEqual(slept.run.cursor, { nodeId: 'wait', ordinals: {}, wakeAt: T0 + 5_000, started: true });
    assert.equal(slept.run.leaseOwner, undefined);
    const events = await store.events.list(run.runId);
    assert.deepEqual(events[1]?.payload, { ordinal: 0, wakeAt: new Date(T0 + 5_000).toISOString() });

    clock.advance(4_999);
    const early = await workerStep(store, def, slept.run, ctx);
    assert.equal(early.kind, 'idle');
    assert.equal((await store.runs.get(run.runId))?.version, slept.run.version, 'nothing committed');

    assert.deepEqual(await store.runs.claim('w1', LEASE_MS, 1), [], 'not claimable before it is due');

    clock.advance(1);
    const [due] = await store.runs.claim('w1', LEASE_MS, 1);
    assert.equal(due?.runId, run.runId);
    const woke = await workerStep(store, def, due as RunRecord, ctx);
    assert.equal(woke.kind, 'continue');
    assert.deepEqual(woke.run.cursor, { nodeId: 'end', ordinals: { wait: 1 } });
    assert.equal(woke.run.wakeAt, undefined);
    // The execution that woke logs no second node.started.
    assert.deepEqual(await log(run.runId), ['run.started', 'node.started:wait', 'node.completed:wait']);
  });

  it('interrupt: an open interrupt row and the run waiting on a person, in the same commit', async () => {
    const def = lineOf('w', [
      ['gate', 'core.approvalGate', { title: 'Ship it?' }],
      ['end', 'core.transform'],
    ]);
    const run = await claimed(def);
    const out = await workerStep(store, def, run, ctx);
    assert.equal(out.kind, 'settled');
    assert.equal(out.run.status, 'waiting-approval');
    assert.equal(out.run.leaseOwner, undefined);
    assert.deepEqual(out.run.cursor, { nodeId: 'gate', ordinals: {}, started: true });
    const open = await store.interrupts.listByRun(run.runId);
    assert.equal(open.length, 1);
    assert.equal(open[0]?.status, 'open');
    assert.equal(open[0]?.kind, 'approval');
    assert.deepEqual(await log(run.runId), [
      'run.started',
      'node.started:gate',
      'node.suspended:gate',
      'approval.requested:gate',
      'interrupt.requested:gate',
    ]);
    const requested = (await store.events.list(run.runId)).at(-1)?.payload;
    assert.equal(requested?.interruptId, open[0]?.interruptId);
    assert.equal(requested?.key, `${run.runId}:gate:0`);
  });

  it('failed: the run fails with the node’s error, the lease handed back', async () => {
    const def = lineOf('w', [['stop', 'core.fail', { code: 'nope', message: 'stopped here' }]]);
    const run = await claimed(def);
    const out = await workerStep(store, def, run, ctx);
    assert.equal(out.kind, 'settled');
    assert.equal(out.run.status, 'failed');
    assert.deepEqual(out.run.error, { code: 'nope', message: 'stopped here' });
    assert.equal(out.run.leaseOwner, undefined);
    assert.deepEqual(await log(run.runId), ['run.started', 'node.started:stop', 'node.failed:stop', 'run.failed']);
  });

  it('an executor that throws fails the run with node_execution_error (counted as an error)', async () => {
    const def = lineOf('w', [['p', 'test.probe']]);
    const run = await claimed(def);
    probe.act = 'throw';
    const out = await workerStep(store, def, run, ctx);
    assert.equal(out.run.status, 'failed');
    assert.deepEqual(out.run.error, { code: 'node_execution_error', message: 'the probe failed' });
    assert.deepEqual(executed, ['test.probe:error']);
  });

  it('the node gets `runId:nodeId:ordinal` as its idempotency key, the clock’s time, and its scope', async () => {
    const def = lineOf('w', [['p', 'test.probe']]);
    const run = await claimed(def);
    await workerStep(store, def, run, ctx);
    const [e] = probe.executions;
    assert.equal(e?.idempotencyKey, `${run.runId}:p:0`);
    assert.equal(e?.now, T0);
    assert.equal(e?.scope.run.runId, run.runId);
  });

  it('fenced: a worker whose lease was taken over commits nothing; the next execution has the same key', async () => {
    const def = lineOf('w', [
      ['p', 'test.probe'],
      ['end', 'core.transform'],
    ]);
    const run = await claimed(def, 'w1');
    // w1 stalls past its lease; w2 takes the run over.
    clock.advance(LEASE_MS + 1);
    const [taken] = await store.runs.claim('w2', LEASE_MS, 1);
    assert.equal(taken?.leaseOwner, 'w2');
    await assert.rejects(workerStep(store, def, run, ctx), ConflictError);
    const after = await store.runs.get(run.runId);
    assert.equal(after?.version, taken?.version, 'nothing committed by w1');
    assert.deepEqual(await store.events.list(run.runId), []);
    const out = await workerStep(store, def, taken as RunRecord, { ...ctx, fence: { owner: 'w2' } });
    assert.equal(out.kind, 'continue');
    assert.deepEqual(probe.keys, [`${run.runId}:p:0`, `${run.runId}:p:0`], 'executed twice, one key');
    assert.deepEqual(await log(run.runId), ['run.started', 'node.started:p', 'node.completed:p']);
  });

  it('a run being cancelled is cancelled by the step, without executing its node', async () => {
    const def = lineOf('w', [['p', 'test.probe']]);
    const run = await claimed(def);
    const cancelling = (await store.transaction((tx) => tx.commitRun(run, { status: 'cancelling' }, [], {}))).run;
    const out = await workerStep(store, def, cancelling, ctx);
    assert.equal(out.kind, 'settled');
    assert.equal(out.run.status, 'cancelled');
    assert.equal(probe.executions.length, 0);
  });
  it('a branch of a forked run waits or sleeps in its own place; the run waits on the person, the worker keeps the lease', async () => {
    const def = workflowOf(
      'w',
      [
        node('fork', 'core.parallel', {}),
        node('gate', 'core.approvalGate', { title: 'Ship it?' }),
        node('wait', 'core.delay', { ms: 5_000 }),
        node('join', 'core.join', { mode: 'all' }),
      ],
      [
        ['fork', 'gate'],
        ['fork', 'wait'],
        ['gate', 'join'],
        ['wait', 'join'],
      ],
    ) as unknown as WorkflowDefinition;
    const forked = await workerStep(store, def, await claimed(def), ctx);
    assert.equal(forked.kind, 'continue');
    let run = forked.run;
    const line = (nodeId: string) => run.cursor.branches?.find((b) => b.nodeId === nodeId);
    const step = async (nodeId: string) =>
      (
        await branchStep(
          def,
          run,
          ctx,
          line(nodeId) as NonNullable<ReturnType<typeof line>>,
          () => run,
          (commit) => store.transaction(commit),
        )
      ).run;

    run = await step('gate');
    assert.equal(run.status, 'waiting-approval');
    assert.equal(run.leaseOwner, 'w1', 'the worker may still be executing a sibling');
    assert.equal(line('gate')?.waiting, 'approval');
    assert.equal(run.wakeAt, T0, 'a sibling is runnable now');
    assert.equal((await store.interrupts.listByRun(run.runId))[0]?.nodeId, 'gate');

    run = await step('wait');
    assert.equal(run.status, 'waiting-approval');
    assert.equal(line('wait')?.wakeAt, T0 + 5_000);
    assert.equal(run.wakeAt, T0 + 5_000, 'the run’s timer is its earliest branch’s');
    const own = (await store.events.list(run.runId)).filter((e) => e.nodeId === 'wait');
    assert.deepEqual(
      own.map((e) => [e.type, e.payload.branch]),
      [['node.started', 'fork#0/wait']],
    );
  });
});
