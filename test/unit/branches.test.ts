// The pure side of parallel work (src/engine/branches.ts): how lines fork, arrive, fire a join,
// get withdrawn, and what status and timer a forked run derives from its branches.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dueLines, Frontier, forkedStatus, forkedWakeAt, type Line, linesOf } from '../../src/engine/branches.js';
import type { EvalScope } from '../../src/engine/nodes/types.js';
import type { WorkflowDefinition } from '../../src/engine/workflow/definition.js';
import type { BranchCursor, RunCursor, RunRecord } from '../../src/store/model.js';

const n = (id: string, typeId = 'core.transform', config: Record<string, unknown> = {}) => ({
  id,
  typeId,
  name: id,
  position: { x: 0, y: 0 },
  config,
  inputs: {},
});

/** fork → a, b, c → join (mode) → after */
const def = (mode: Record<string, unknown>): WorkflowDefinition => ({
  id: 'w',
  name: 'w',
  version: '1',
  nodes: [n('fork', 'core.parallel'), n('a'), n('b'), n('c'), n('join', 'core.join', mode), n('after')],
  edges: [
    ['fork', 'a'],
    ['fork', 'b'],
    ['fork', 'c'],
    ['a', 'join'],
    ['b', 'join'],
    ['c', 'join'],
    ['join', 'after'],
  ].map(([s, t], i) => ({ id: `e${i}`, sourceNodeId: s as string, targetNodeId: t as string })),
  triggers: [],
  variables: [],
  metadata: {},
  settings: {},
});

const scope = (outputs: Record<string, unknown>): EvalScope => ({
  inputs: {},
  vars: {},
  nodes: outputs,
  carry: {},
  run: { runId: 'r', workflowId: 'w' },
});

/** The run forked at `fork` into a, b and c. */
function forked(d: WorkflowDefinition): { f: Frontier; cursor: RunCursor } {
  const f = Frontier.of({ nodeId: 'fork', ordinals: {} }, {}, { fork: 1 });
  f.fork(d, linesOf({ nodeId: 'fork', ordinals: {} })[0] as Line, 'fork', 0, ['a', 'b', 'c']);
  return { f, cursor: f.cursor() };
}

const branch = (cursor: RunCursor, nodeId: string) => cursor.branches?.find((b) => b.nodeId === nodeId) as BranchCursor;

describe('Frontier', () => {
  it('forks a line into one branch per target, each named by fork and first node', () => {
    const { cursor } = forked(def({ mode: 'all' }));
    assert.deepEqual(
      cursor.branches?.map((b) => [b.id, b.fork, b.nodeId]),
      [
        ['fork#0/a', 'fork#0', 'a'],
        ['fork#0/b', 'fork#0', 'b'],
        ['fork#0/c', 'fork#0', 'c'],
      ],
    );
    assert.deepEqual(cursor.forks?.['fork#0'], { nodeId: 'fork', join: 'join', arrived: [], outputs: {} });
    assert.equal(cursor.nodeId, undefined);
  });

  it('all: fires once the last branch arrives, in arrival order, and the run is unforked again', async () => {
    const d = def({ mode: 'all' });
    let { cursor } = forked(d);
    for (const id of ['b', 'c', 'a']) {
      const f = Frontier.of(cursor, {}, {});
      f.leave(d, branch(cursor, id), id, { from: id }, 'join');
      await f.settle(d, scope);
      cursor = f.cursor();
      if (id !== 'a') {
        assert.equal(f.events.length, 0, 'not satisfied yet');
        continue;
      }
      assert.deepEqual(
        f.events.map((e) => [e.type, e.nodeId]),
        [
          ['node.started', 'join'],
          ['node.completed', 'join'],
        ],
      );
      assert.deepEqual(f.outputs.join, {
        arrived: ['b', 'c', 'a'],
        outputs: { b: { from: 'b' }, c: { from: 'c' }, a: { from: 'a' } },
      });
      assert.deepEqual(cursor, { nodeId: 'after', ordinals: { join: 1 } });
    }
  });

  it('count 2: fires at the second arrival and withdraws the third', async () => {
    const d = def({ mode: 'count', count: 2 });
    let { cursor } = forked(d);
    let f = Frontier.of(cursor, {}, {});
    f.leave(d, branch(cursor, 'c'), 'c', 1, 'join');
    await f.settle(d, scope);
    cursor = f.cursor();
    f = Frontier.of(cursor, {}, {});
    f.leave(d, branch(cursor, 'a'), 'a', 2, 'join');
    await f.settle(d, scope);
    assert.deepEqual(
      f.withdrawn.map((b) => b.id),
      ['fork#0/b'],
    );
    assert.deepEqual(
      f.events.map((e) => e.type),
      ['branch.withdrawn', 'node.started', 'node.completed'],
    );
    assert.deepEqual(f.cursor().nodeId, 'after');
  });

  it('a join that can no longer be satisfied fails the run', async () => {
    const d = def({ mode: 'count', count: 3 });
    let { cursor } = forked(d);
    for (const [id, next] of [
      ['a', 'join'],
      ['b', undefined],
      ['c', undefined],
    ] as const) {
      const f = Frontier.of(cursor, {}, {});
      f.leave(d, branch(cursor, id), id, 0, next);
      await f.settle(d, scope);
      cursor = f.cursor();
      if (id === 'c') assert.equal(f.failed?.code, 'join_unsatisfied');
      else assert.equal(f.failed, undefined);
    }
  });

  it('a fork past the limit fails before any branch starts', () => {
    const d = def({ mode: 'all' });
    const f = Frontier.of({ nodeId: 'fork', ordinals: {} }, {}, {});
    f.fork(d, linesOf({ nodeId: 'fork', ordinals: {} })[0] as Line, 'fork', 0, ['a', 'b', 'c'], 2);
    assert.equal(f.failed?.code, 'too_many_branches');
  });
});

describe('a forked run’s status and timer', () => {
  const at = (branches: Partial<BranchCursor>[]): RunCursor => ({
    ordinals: {},
    branches: branches.map((b, i) => ({ id: `f#0/${i}`, fork: 'f#0', nodeId: `n${i}`, ...b })),
    forks: {},
  });

  it('waiting-approval while any approval is open, waiting-input for clarifications only, else running', () => {
    assert.equal(forkedStatus(at([{ waiting: 'clarification' }, { waiting: 'approval' }])), 'waiting-approval');
    assert.equal(forkedStatus(at([{ waiting: 'clarification' }, { wakeAt: 5 }])), 'waiting-input');
    assert.equal(forkedStatus(at([{}, { wakeAt: 5 }])), 'running');
  });

  it('the timer is now while a branch is runnable (a number when the run waits), else the earliest', () => {
    assert.equal(forkedWakeAt(at([{ waiting: 'approval' }, {}]), 'waiting-approval', 100), 100);
    assert.equal(forkedWakeAt(at([{}, { wakeAt: 500 }]), 'running', 100), undefined);
    assert.equal(
      forkedWakeAt(at([{ wakeAt: 700 }, { waiting: 'approval', wakeAt: 300 }]), 'waiting-approval', 100),
      300,
    );
    assert.equal(forkedWakeAt(at([{ waiting: 'approval' }]), 'waiting-approval', 100), undefined);
  });

  it('due lines: runnable ones, expired gates; woken early, every sleeping branch', () => {
    const run = (cursor: RunCursor, wakeAt?: number) => ({ cursor, wakeAt }) as unknown as RunRecord;
    const c = at([{ wakeAt: 500 }, { waiting: 'approval', wakeAt: 50 }, { waiting: 'approval' }, {}]);
    assert.deepEqual(
      dueLines(run(c, 50), 100).map((d) => [d.line.nodeId, d.kind]),
      [
        ['n1', 'expire'],
        ['n3', 'execute'],
      ],
    );
    const sleeping = at([{ wakeAt: 500 }, { wakeAt: 900 }, { waiting: 'approval' }]);
    assert.deepEqual(dueLines(run(sleeping, 500), 100), [], 'not woken: nothing is due');
    assert.deepEqual(
      dueLines(run(sleeping, 100), 100).map((d) => d.line.nodeId),
      ['n0', 'n1'],
    );
  });
});
