// The pure transitions (src/engine/transitions.ts): "a node finished" → the run's next patch and
// events. No store, no clock: each case builds a run record and reads what completeNode / failAt
// / failRun decide — the next node along the edges that hold, the end of the run, a condition
// that cannot be decided, a fork (and its limit), a join, and the run's status and timer while
// other branches sleep or wait on a person.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Frontier, type Line, linesOf } from '../../src/engine/branches.js';
import { completeNode, failAt, failRun } from '../../src/engine/transitions.js';
import type { WorkflowDefinition } from '../../src/engine/workflow/definition.js';
import type { BranchCursor, NewEvent, RunCursor, RunRecord } from '../../src/store/model.js';
import { node, workflowOf } from '../support/call-workflows.js';

const NOW = '2030-01-01T00:00:00.000Z';
const NOW_MS = Date.parse(NOW);

const def = (nodes: object[], edges: Array<[string, string, string?]>) =>
  workflowOf('w', nodes, edges) as unknown as WorkflowDefinition;
const t = (id: string, extra: Record<string, unknown> = {}) => node(id, 'core.transform', {}, extra);

function runAt(cursor: RunCursor, over: Partial<RunRecord> = {}): RunRecord {
  return {
    runId: 'run_1',
    tenantId: 'tenant-a',
    principalId: 'alice',
    workflowId: 'w',
    status: 'running',
    inputs: { n: 2 },
    state: { outputs: {}, vars: { kept: true } },
    cursor,
    tags: [],
    metadata: {},
    nextSeq: 3,
    version: 2,
    leaseOwner: 'worker-1',
    leaseExpiresAt: NOW_MS + 30_000,
    createdAt: NOW,
    updatedAt: NOW,
    ...over,
  };
}

const types = (events: NewEvent[]) => events.map((e) => (e.nodeId ? `${e.type}:${e.nodeId}` : e.type));
const done = (output: unknown, over: { started?: boolean; vars?: Record<string, unknown> } = {}) => ({
  output,
  started: false,
  ...over,
});

describe('completeNode: an unforked run', () => {
  const line = def(
    [t('a'), t('b'), t('c')],
    [
      ['a', 'b'],
      ['b', 'c'],
    ],
  );

  it('moves the cursor along the edge to the next node, with the output, the vars and the ordinal', async () => {
    const run = runAt({ nodeId: 'a', ordinals: { a: 1 } });
    const next = await completeNode(line, run, done({ x: 1 }, { vars: { i: 3 } }), NOW);
    assert.deepEqual(next.patch, {
      status: 'running',
      state: { outputs: { a: { x: 1 } }, vars: { kept: true, i: 3 } },
      cursor: { nodeId: 'b', ordinals: { a: 2 } },
      wakeAt: undefined,
    });
    assert.deepEqual(next.events, [
      { type: 'node.started', nodeId: 'a', payload: { ordinal: 1, typeId: 'core.transform' } },
      { type: 'node.completed', nodeId: 'a', payload: { ordinal: 1 } },
    ]);
  });

  it('logs no second node.started for an execution that already logged one; its own events go between', async () => {
    const run = runAt({ nodeId: 'a', ordinals: {}, started: true });
    const own: NewEvent = { type: 'a2a.task.updated', nodeId: 'a', payload: { step: 1 } };
    const next = await completeNode(
      line,
      run,
      { output: 1, started: true, events: [own], detail: { action: 'ok' } },
      NOW,
    );
    assert.deepEqual(types(next.events), ['a2a.task.updated:a', 'node.completed:a']);
    assert.deepEqual(next.events[1]?.payload, { ordinal: 0, action: 'ok' });
  });

  it('takes the first outgoing edge whose condition holds, in the order the edges are written', async () => {
    const branching = def(
      [t('a'), t('small'), t('big'), t('any')],
      [
        ['a', 'small', 'nodes.a.n < 10'],
        ['a', 'big', 'nodes.a.n >= 10'],
        ['a', 'any'],
      ],
    );
    const to = async (n: number) =>
      (await completeNode(branching, runAt({ nodeId: 'a', ordinals: {} }), done({ n }), NOW)).patch.cursor?.nodeId;
    assert.equal(await to(3), 'small');
    assert.equal(await to(30), 'big');
    const noneHold = def(
      [t('a'), t('small'), t('any')],
      [
        ['a', 'small', 'nodes.a.n < 10'],
        ['a', 'any'],
      ],
    );
    const after = await completeNode(noneHold, runAt({ nodeId: 'a', ordinals: {} }), done({ n: 99 }), NOW);
    assert.equal(after.patch.cursor?.nodeId, 'any');
  });

  it('ends the run at a node with no edge that holds: completed, lease handed back, artifacts published', async () => {
    const w = def(
      [t('a'), t('report', { outputRole: 'artifact', name: 'Report' }), t('never')],
      [
        ['a', 'report'],
        ['report', 'never', 'false'],
      ],
    );
    const run = runAt({ nodeId: 'report', ordinals: { a: 1 } }, { state: { outputs: { a: 1 }, vars: {} } });
    const next = await completeNode(w, run, done({ body: 'ü' }), NOW);
    assert.deepEqual(next.patch, {
      status: 'completed',
      state: { outputs: { a: 1, report: { body: 'ü' } }, vars: {} },
      cursor: { ordinals: { a: 1, report: 1 } },
      wakeAt: undefined,
      completedAt: NOW,
      leaseOwner: undefined,
      leaseExpiresAt: undefined,
    });
    assert.deepEqual(types(next.events), [
      'node.started:report',
      'node.completed:report',
      'artifact.created:report',
      'run.completed',
    ]);
    assert.deepEqual(next.events.at(-1)?.payload, { outputs: { report: { body: 'ü' } } });
    assert.deepEqual(next.withdrawn, []);
  });

  it('a condition that fails to evaluate fails the run with condition_failed, naming the edge', async () => {
    const w = def([t('a'), t('b')], [['a', 'b', '"text" + 1']]);
    const next = await completeNode(w, runAt({ nodeId: 'a', ordinals: { a: 4 } }), done('out'), NOW);
    assert.equal(next.patch.status, 'failed');
    assert.equal(next.patch.error?.code, 'condition_failed');
    assert.deepEqual(next.patch.error?.details, { edgeId: 'e0' });
    assert.deepEqual(next.patch.cursor, { ordinals: { a: 4 } });
    assert.equal(next.patch.completedAt, NOW);
    assert.equal(next.patch.leaseOwner, undefined);
    // The node itself completed: no node.failed for it, only the run's failure.
    assert.deepEqual(types(next.events), ['node.started:a', 'node.completed:a', 'run.failed']);
  });
});

describe('failAt / failRun', () => {
  it('an unforked run fails at its node: the node events given, node.failed, run.failed; the lease handed back', () => {
    const run = runAt({ nodeId: 'a', ordinals: { a: 2 } });
    const error = { code: 'boom', message: 'it broke' };
    const before: NewEvent[] = [{ type: 'node.started', nodeId: 'a', payload: { ordinal: 2 } }];
    const t1 = failAt(run, linesOf(run.cursor)[0] as Line, error, NOW, before);
    assert.deepEqual(t1.patch, {
      status: 'failed',
      error,
      cursor: { ordinals: { a: 2 } },
      wakeAt: undefined,
      completedAt: NOW,
      leaseOwner: undefined,
      leaseExpiresAt: undefined,
    });
    assert.deepEqual(types(t1.events), ['node.started:a', 'node.failed:a', 'run.failed']);
    assert.deepEqual(t1.events[1]?.payload, { ordinal: 2, error });
    assert.equal(t1.withdrawn, undefined);
  });

  it('failRun of a node not yet started logs its node.started first', () => {
    const run = runAt({ nodeId: 'a', ordinals: {} });
    const f = failRun(run, { code: 'x', message: 'y' }, NOW, false);
    assert.deepEqual(types(f.events), ['node.started:a', 'node.failed:a', 'run.failed']);
  });
});

/** fork → a, b (→ join → after), each branch one node. */
const forkJoin = (joinConfig: Record<string, unknown> = { mode: 'all' }, conditions: [string?, string?] = []) =>
  def(
    [node('fork', 'core.parallel', {}), t('a'), t('b'), node('join', 'core.join', joinConfig), t('after')],
    [
      ['fork', 'a', conditions[0]],
      ['fork', 'b', conditions[1]],
      ['a', 'join'],
      ['b', 'join'],
      ['join', 'after'],
    ],
  );

/** The run just forked at `fork` into a and b (as completeNode leaves it). */
async function forked(w: WorkflowDefinition): Promise<RunRecord> {
  const run = runAt({ nodeId: 'fork', ordinals: {} });
  const t1 = await completeNode(w, run, done({}), NOW);
  return runAt(t1.patch.cursor as RunCursor, { state: t1.patch.state ?? run.state });
}

const branch = (run: RunRecord, nodeId: string) =>
  run.cursor.branches?.find((b) => b.nodeId === nodeId) as BranchCursor;

/** `run` with `fields` set on the branch at `nodeId`. */
function withBranch(run: RunRecord, nodeId: string, fields: Partial<BranchCursor>): RunRecord {
  const branches = run.cursor.branches?.map((b) => (b.nodeId === nodeId ? { ...b, ...fields } : b));
  return { ...run, cursor: { ...run.cursor, branches } };
}

describe('completeNode: forks and joins (branches.ts)', () => {
  it('a core.parallel forks one branch per edge that holds; the run stays running', async () => {
    const w = forkJoin({ mode: 'all' }, [undefined, 'inputs.n > 5']);
    const t1 = await completeNode(w, runAt({ nodeId: 'fork', ordinals: {} }), done({}), NOW);
    assert.equal(t1.patch.status, 'running');
    assert.deepEqual(
      t1.patch.cursor?.branches?.map((b) => b.id),
      ['fork#0/a'],
      'the branch whose edge does not hold is not started',
    );
    assert.deepEqual(t1.patch.cursor?.forks?.['fork#0'], { nodeId: 'fork', join: 'join', arrived: [], outputs: {} });
    assert.equal(t1.patch.wakeAt, undefined);
  });

  it('a core.parallel with no edge that holds fails the run with no_branch', async () => {
    const w = forkJoin({ mode: 'all' }, ['false', 'false']);
    const t1 = await completeNode(w, runAt({ nodeId: 'fork', ordinals: {} }), done({}), NOW);
    assert.equal(t1.patch.status, 'failed');
    assert.equal(t1.patch.error?.code, 'no_branch');
  });

  it('a fork past maxBranches fails the run with too_many_branches; at the limit it forks', async () => {
    const w = forkJoin();
    const over = await completeNode(w, runAt({ nodeId: 'fork', ordinals: {} }), done({}), NOW, undefined, 1);
    assert.equal(over.patch.status, 'failed');
    assert.equal(over.patch.error?.code, 'too_many_branches');
    assert.deepEqual(over.patch.error?.details, { branches: 2, maxBranches: 1 });
    const at = await completeNode(w, runAt({ nodeId: 'fork', ordinals: {} }), done({}), NOW, undefined, 2);
    assert.equal(at.patch.cursor?.branches?.length, 2);
  });

  it('the first branch to arrive waits at the join; the last fires it and the run goes on unforked', async () => {
    const w = forkJoin();
    let run = await forked(w);
    const first = await completeNode(w, run, done('A'), NOW, branch(run, 'a'));
    assert.deepEqual(
      first.patch.cursor?.branches?.map((b) => b.nodeId),
      ['b'],
    );
    assert.deepEqual(first.patch.cursor?.forks?.['fork#0']?.arrived, ['a']);
    // The branch's own events carry its id.
    assert.deepEqual(first.events[1]?.payload, { ordinal: 0, branch: 'fork#0/a' });
    run = runAt(first.patch.cursor as RunCursor, { state: first.patch.state ?? run.state });
    const last = await completeNode(w, run, done('B'), NOW, branch(run, 'b'));
    assert.deepEqual(last.patch.cursor, { nodeId: 'after', ordinals: { fork: 1, a: 1, b: 1, join: 1 } });
    assert.equal(last.patch.status, 'running');
    assert.deepEqual(last.patch.state?.outputs.join, { arrived: ['a', 'b'], outputs: { a: 'A', b: 'B' } });
    assert.deepEqual(types(last.events), [
      'node.started:b',
      'node.completed:b',
      'node.started:join',
      'node.completed:join',
    ]);
  });

  it('a join of mode any fires on the first arrival and withdraws the other branch', async () => {
    const w = forkJoin({ mode: 'any' });
    const run = await forked(w);
    const t1 = await completeNode(w, run, done('A'), NOW, branch(run, 'a'));
    assert.equal(t1.patch.cursor?.nodeId, 'after');
    assert.deepEqual(
      t1.withdrawn?.map((b) => b.id),
      ['fork#0/b'],
    );
    assert.ok(types(t1.events).includes('branch.withdrawn:b'));
  });

  it('while a sibling waits on a person the run waits too; while it sleeps the run sleeps until it is due', async () => {
    const w = forkJoin();
    const run = await forked(w);
    const waiting = withBranch(run, 'b', { started: true, waiting: 'approval' });
    const t1 = await completeNode(w, waiting, done('A'), NOW, branch(waiting, 'a'));
    assert.equal(t1.patch.status, 'waiting-approval');
    assert.equal(t1.patch.wakeAt, undefined);
    const sleeping = withBranch(run, 'b', { started: true, wakeAt: NOW_MS + 5_000 });
    const t2 = await completeNode(w, sleeping, done('A'), NOW, branch(sleeping, 'a'));
    assert.equal(t2.patch.status, 'running');
    assert.equal(t2.patch.wakeAt, NOW_MS + 5_000);
  });

  it('failAt in a forked run withdraws every other branch before the run fails', async () => {
    const w = forkJoin();
    const run = await forked(w);
    const t1 = failAt(run, branch(run, 'a'), { code: 'boom', message: 'x' }, NOW, []);
    assert.equal(t1.patch.status, 'failed');
    assert.deepEqual(
      t1.withdrawn?.map((b) => b.id),
      ['fork#0/b'],
    );
    assert.deepEqual(types(t1.events), ['branch.withdrawn:b', 'node.failed:a', 'run.failed']);
  });

  it('Frontier.of keeps the run’s cursor untouched (the transition works on copies)', async () => {
    const w = forkJoin();
    const run = await forked(w);
    const copy = structuredClone(run.cursor);
    Frontier.of(run.cursor, {}, {}).withdrawAll(undefined, 'x');
    await completeNode(w, run, done('A'), NOW, branch(run, 'a'));
    assert.deepEqual(run.cursor, copy);
  });
});
