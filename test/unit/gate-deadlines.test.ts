// Gate deadlines, the pure parts: config checks, the deadline a gate opens with, which runs are
// due, and what an expiry does for each onTimeout (src/engine/deadlines.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadlineProblems, expire, isExpiryDue, openDeadline } from '../../src/engine/deadlines.js';
import { EngineError } from '../../src/engine/errors.js';
import { decide } from '../../src/engine/interrupts.js';
import { approvalGate, clarificationGate } from '../../src/engine/nodes/gates.js';
import { validateWorkflow, WorkflowValidationError } from '../../src/engine/workflow/loader.js';
import type { InterruptRecord, RunRecord } from '../../src/store/model.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const HOUR = 3_600_000;

function gate(over: Partial<InterruptRecord> = {}, data: Record<string, unknown> = {}): InterruptRecord {
  const opened = openDeadline({ timeoutMs: HOUR, ...data }, T0);
  return {
    interruptId: 'int_1',
    runId: 'run_1',
    nodeId: 'review',
    kind: 'approval',
    status: 'open',
    data: { title: 'Review', artifact: { text: 'draft' }, actions: ['accept', 'reject'], ...opened?.data, ...data },
    votes: [],
    exchanges: [],
    createdAt: new Date(T0).toISOString(),
    ...over,
  };
}

const types = (events: Array<{ type: string }>) => events.map((e) => e.type);

/** A workflow of one approval gate `review` with `config` beside its title. */
const reviewGate = (config: Record<string, unknown>) => ({
  id: 'review-gate',
  nodes: [{ id: 'review', typeId: 'core.approvalGate', config: { title: 'Review', ...config } }],
});

describe('gate deadline config', () => {
  it('timeoutMs alone is enough; onTimeout defaults to reject', () => {
    assert.deepEqual(deadlineProblems({ timeoutMs: 1000 }), []);
    assert.deepEqual(openDeadline({ timeoutMs: 1000 }, T0)?.data, {
      timeoutMs: 1000,
      onTimeout: 'reject',
      expiresAt: '2026-01-01T00:00:01.000Z',
    });
    assert.equal(openDeadline({}, T0), undefined);
  });

  it('refuses escalate without escalateTo, escalateTo without escalate, and either without timeoutMs', () => {
    assert.deepEqual(deadlineProblems({ timeoutMs: 1, onTimeout: 'escalate' }), [
      'config.onTimeout "escalate" needs config.escalateTo (who the gate escalates to)',
    ]);
    assert.deepEqual(deadlineProblems({ timeoutMs: 1, onTimeout: 'accept', escalateTo: ['boss'] }), [
      'config.escalateTo is used only with config.onTimeout "escalate"',
    ]);
    assert.deepEqual(deadlineProblems({ onTimeout: 'escalate', escalateTo: ['boss'] }), [
      'config.onTimeout needs config.timeoutMs',
      'config.escalateTo needs config.timeoutMs',
    ]);
  });

  it('a workflow with a bad deadline fails to load, naming the node and the setting', () => {
    const def = reviewGate({ timeoutMs: 0, onTimeout: 'explode' });
    assert.throws(
      () => validateWorkflow(def, 'workflows/late.json'),
      (err: unknown) =>
        err instanceof WorkflowValidationError && /review/.test(err.message) && /timeoutMs/.test(err.message),
    );
  });

  it('an approval gate takes group and role refs (unique, non-empty) but no audience (RFC 0104)', async () => {
    const def = reviewGate;
    validateWorkflow(def({ approverGroupRefs: ['finance'], approverRoleRefs: ['controller'] }), 'w.json');
    for (const bad of [
      { approverGroupRefs: [''] },
      { approverGroupRefs: ['finance', 'finance'] },
      { approverRoleRefs: 'controller' },
      { approverRoleRefs: [7] },
      { audience: { groups: ['finance'] } },
    ]) {
      assert.throws(
        () => validateWorkflow(def(bad), 'w.json'),
        (err: unknown) => err instanceof WorkflowValidationError && /review/.test(err.message),
        JSON.stringify(bad),
      );
    }
    const node = { id: 'g', typeId: 'x', name: 'g', position: { x: 0, y: 0 }, config: {}, inputs: {} };
    const opened = await approvalGate.execute({
      runId: 'run_1',
      workflowId: 'w',
      ordinal: 0,
      scope: { inputs: {}, vars: {}, nodes: {}, carry: {}, run: { runId: 'run_1', workflowId: 'w' } },
      now: T0,
      idempotencyKey: 'run_1:g:0',
      node,
      config: { title: 'T', approverGroupRefs: ['finance'], approverRoleRefs: [] },
    });
    assert.ok(opened.kind === 'interrupt');
    assert.deepEqual(opened.interrupt.data.approverGroupRefs, ['finance']);
    assert.equal('approverRoleRefs' in opened.interrupt.data, false);
  });

  it('both gates record the deadline in their data and as the run timer', async () => {
    const base = {
      runId: 'run_1',
      workflowId: 'w',
      ordinal: 0,
      scope: { inputs: {}, vars: {}, nodes: {}, carry: {}, run: { runId: 'run_1', workflowId: 'w' } },
      now: T0,
      idempotencyKey: 'run_1:g:0',
    };
    const node = { id: 'g', typeId: 'x', name: 'g', position: { x: 0, y: 0 }, config: {}, inputs: {} };
    const a = await approvalGate.execute({
      ...base,
      node,
      config: { title: 'T', timeoutMs: 5000, onTimeout: 'escalate', escalateTo: ['boss'] },
    });
    assert.ok(a.kind === 'interrupt');
    assert.equal(a.expiresAt, T0 + 5000);
    assert.equal(a.interrupt.data.expiresAt, '2026-01-01T00:00:05.000Z');
    assert.deepEqual(a.interrupt.data.escalateTo, ['boss']);
    const c = await clarificationGate.execute({
      ...base,
      node,
      config: { questions: [{ id: 'q', question: 'Why?' }], timeoutMs: 7000, onTimeout: 'accept' },
    });
    assert.ok(c.kind === 'interrupt');
    assert.equal(c.expiresAt, T0 + 7000);
    assert.equal(c.interrupt.data.onTimeout, 'accept');
    const none = await clarificationGate.execute({
      ...base,
      node,
      config: { questions: [{ id: 'q', question: 'Why?' }] },
    });
    assert.ok(none.kind === 'interrupt');
    assert.equal(none.expiresAt, undefined);
    assert.equal(none.interrupt.data.expiresAt, undefined);
  });
});

describe('which runs are due', () => {
  const run = (status: RunRecord['status'], wakeAt?: number) => ({ status, wakeAt }) as RunRecord;
  it('a waiting run whose deadline has come, and no other', () => {
    assert.equal(isExpiryDue(run('waiting-approval', T0), T0), true);
    assert.equal(isExpiryDue(run('waiting-input', T0 - 1), T0), true);
    assert.equal(isExpiryDue(run('waiting-approval', T0 + 1), T0), false);
    assert.equal(isExpiryDue(run('waiting-approval'), T0), false);
    assert.equal(isExpiryDue(run('running', T0), T0), false);
  });
});

describe('what an expiry does', () => {
  const at = T0 + HOUR;

  it('reject (the default) resolves the gate as rejected by the deadline', () => {
    const e = expire(gate(), at);
    assert.ok(e.kind === 'resolve');
    assert.equal(e.action, 'reject');
    assert.equal(e.timedOut, true);
    assert.equal(e.decidedBy, 'system:timeout');
    assert.deepEqual(types(e.events), ['interrupt.expired', 'interrupt.resolved']);
    assert.equal(e.events[1]?.payload?.reason, 'timeout');
    assert.equal(e.events[0]?.payload?.expiresAt, '2026-01-01T01:00:00.000Z');
    assert.equal(e.interrupt.status, 'resolved');
  });

  it('accept lets an approval go on with the artifact it showed, a clarification with no answers', () => {
    const a = expire(gate({}, { onTimeout: 'accept' }), at);
    assert.ok(a.kind === 'resolve');
    assert.equal(a.action, 'accept');
    assert.deepEqual(a.output.artifact, { text: 'draft' });
    assert.equal(a.output.timedOut, true);
    assert.deepEqual(types(a.events), ['interrupt.expired', 'interrupt.resolved', 'node.resumed']);
    const c = expire(gate({ kind: 'clarification' }, { onTimeout: 'accept', questions: [{ id: 'q' }] }), at);
    assert.ok(c.kind === 'resolve');
    assert.equal(c.action, 'answer');
    assert.deepEqual(c.output.answers, {});
  });

  it('escalate re-opens the gate for escalateTo with a new deadline, keeping only their votes', () => {
    const votes = [
      { principalId: 'alice', action: 'accept', at: 'x', value: {} },
      { principalId: 'boss', action: 'accept', at: 'x', value: {} },
    ];
    const e = expire(
      gate({ votes }, { onTimeout: 'escalate', escalateTo: ['boss', 'cto'], approversList: ['alice'] }),
      at,
    );
    assert.ok(e.kind === 'escalate');
    assert.equal(e.wakeAt, at + HOUR);
    assert.equal(e.interrupt.status, 'open');
    assert.deepEqual(e.interrupt.data.approversList, ['boss', 'cto']);
    assert.equal(e.interrupt.data.escalated, true);
    assert.equal(e.interrupt.data.expiresAt, '2026-01-01T02:00:00.000Z');
    assert.deepEqual(
      e.interrupt.votes.map((v) => v.principalId),
      ['boss'],
    );
    assert.deepEqual(types(e.events), ['interrupt.expired', 'interrupt.escalated']);
    assert.deepEqual(e.events[1]?.payload, {
      interruptId: 'int_1',
      kind: 'approval',
      escalateTo: ['boss', 'cto'],
      expiresAt: '2026-01-01T02:00:00.000Z',
      previousExpiresAt: '2026-01-01T01:00:00.000Z',
    });
  });

  it("escalate drops the gate's group and role refs: escalateTo alone may decide", () => {
    const e = expire(
      gate(
        {},
        {
          onTimeout: 'escalate',
          escalateTo: ['boss'],
          approverGroupRefs: ['finance'],
          approverRoleRefs: ['controller'],
        },
      ),
      at,
    );
    assert.ok(e.kind === 'escalate');
    assert.deepEqual(e.interrupt.data.approversList, ['boss']);
    assert.equal('approverGroupRefs' in e.interrupt.data, false);
    assert.equal('approverRoleRefs' in e.interrupt.data, false);
  });

  it('escalate ends relaying on a declared-voter gate: escalateTo vote as themselves, relayed votes go', () => {
    const votes = [
      { principalId: 'boss', action: 'accept', at: 'x', value: { voter: 'boss' }, castBy: 'mallory' },
      { principalId: 'cto', action: 'accept', at: 'x', value: {} },
    ];
    const e = expire(
      gate(
        { votes },
        {
          onTimeout: 'escalate',
          escalateTo: ['boss', 'cto'],
          approversList: ['alice'],
          voterIdentity: 'declared',
          relayers: ['mallory'],
        },
      ),
      at,
    );
    assert.ok(e.kind === 'escalate');
    assert.equal('voterIdentity' in e.interrupt.data, false);
    assert.equal('relayers' in e.interrupt.data, false);
    assert.deepEqual(
      e.interrupt.votes.map((v) => v.principalId),
      ['cto'],
    );
    // mallory can no longer cast boss's vote: she is now her own voter, and not on escalateTo.
    assert.throws(
      () => decide(e.interrupt, { principalId: 'mallory' }, { action: 'accept', voter: 'boss' }, 'now'),
      (err: unknown) => err instanceof EngineError && err.code === 'forbidden',
    );
  });

  it('declared voters: relayers are required beside an approvers list, group/role refs refused, relayers need declared', () => {
    const def = reviewGate;
    validateWorkflow(def({ voterIdentity: 'declared' }), 'w.json');
    validateWorkflow(def({ voterIdentity: 'declared', approversList: ['a'], relayers: ['bot'] }), 'w.json');
    for (const [bad, why] of [
      [{ voterIdentity: 'declared', approversList: ['a'] }, /needs relayers/],
      [{ voterIdentity: 'declared', approverGroupRefs: ['finance'], relayers: ['bot'] }, /cannot be combined/],
      [{ voterIdentity: 'declared', approverRoleRefs: ['ctrl'] }, /cannot be combined/],
      [{ relayers: ['bot'] }, /only with voterIdentity/],
      [{ voterIdentity: 'declared', relayers: [] }, /review/],
    ] as const) {
      assert.throws(
        () => validateWorkflow(def(bad), 'w.json'),
        (err: unknown) => err instanceof WorkflowValidationError && why.test(err.message),
        JSON.stringify(bad),
      );
    }
  });

  it('an escalated gate that expires again is rejected: escalation happens once', () => {
    const first = expire(gate({}, { onTimeout: 'escalate', escalateTo: ['boss'] }), at);
    assert.ok(first.kind === 'escalate');
    const second = expire(first.interrupt, first.wakeAt);
    assert.ok(second.kind === 'resolve');
    assert.equal(second.action, 'reject');
    assert.equal(second.events[0]?.payload?.outcome, 'reject');
    assert.equal(second.events[0]?.payload?.escalated, true);
  });
});
