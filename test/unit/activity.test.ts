// Why a run is not moving (src/engine/activity.ts): from its status, its lines and the node state
// they recorded, and its open interrupts; a forked run shows its most pressing line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { activityOf, activityOfEvent, nextRetry, retryEvent } from '../../src/engine/activity.js';
import { childRunId } from '../../src/engine/ids.js';
import type { RunCursor, RunHead, RunStatus } from '../../src/store/model.js';

const T0 = '2026-12-07T12:00:00.000Z';
const T1 = '2026-12-07T12:03:00.000Z';

function run(status: RunStatus, cursor: RunCursor): RunHead {
  return {
    runId: 'run_1',
    tenantId: 't',
    principalId: 'p',
    workflowId: 'w',
    status,
    cursor,
    tags: [],
    nextSeq: 5,
    version: 3,
    createdAt: T0,
    updatedAt: T1,
  };
}

const retry = {
  attempt: 4,
  nextAttemptAt: '2026-12-07T12:04:10.000Z',
  lastError: { code: 'external_call_failed', message: 'connect ECONNREFUSED 127.0.0.1:9' },
  since: '2026-12-07T12:01:00.000Z',
  what: 'the call to agent reviewer',
};

describe('activityOf', () => {
  it('is absent once the run has ended', () => {
    for (const s of ['completed', 'failed', 'cancelled'] as const) {
      assert.equal(activityOf(run(s, { ordinals: {} })), undefined);
    }
  });

  it('says starting, running and cancelling', () => {
    assert.deepEqual(activityOf(run('pending', { ordinals: {}, nodeId: 'a' })), {
      kind: 'running',
      summary: 'Starting',
      since: T0,
    });
    assert.deepEqual(activityOf(run('running', { ordinals: {}, nodeId: 'a' })), {
      kind: 'running',
      nodeId: 'a',
      summary: 'Running node a',
      since: T1,
    });
    assert.equal(activityOf(run('cancelling', { ordinals: {}, nodeId: 'a' }))?.summary, 'Cancelling');
  });

  it('a retry: attempt, next attempt, last error, and the peer it calls', () => {
    const state = { phase: 'send', target: { agent: 'reviewer' }, retry };
    const a = activityOf(run('running', { ordinals: {}, nodeId: 'ask', wakeAt: 1, nodeState: state }));
    assert.deepEqual(a, {
      kind: 'retrying',
      nodeId: 'ask',
      summary:
        'Retrying the call to agent reviewer (attempt 4, next at 12:04:10 UTC): connect ECONNREFUSED 127.0.0.1:9',
      since: retry.since,
      attempt: 4,
      nextAttemptAt: retry.nextAttemptAt,
      lastError: retry.lastError,
      peer: { agent: 'reviewer' },
    });
  });

  it('a person: what the gate asks, since it opened', () => {
    const cursor = { ordinals: {}, nodeId: 'gate' };
    const approval = { kind: 'approval' as const, nodeId: 'gate', data: { title: 'Publish the note' }, createdAt: T0 };
    assert.deepEqual(activityOf(run('waiting-approval', cursor), [approval]), {
      kind: 'waiting-person',
      nodeId: 'gate',
      summary: 'Waiting for approval: Publish the note',
      since: T0,
    });
    const questions = [
      { id: 'a', question: 'Which market?' },
      { id: 'b', question: 'Which tone?' },
    ];
    const clarification = { kind: 'clarification' as const, nodeId: 'gate', data: { questions } };
    assert.equal(
      activityOf(run('waiting-input', cursor), [clarification])?.summary,
      'Waiting for an answer: Which market? (+1 more)',
    );
  });

  it('a peer task, since its state last changed', () => {
    const waitingOn = { agent: 'reviewer', peerTaskId: 'task-9', state: 'working' };
    const nodeState = { waitingOn, waitingSince: T0 };
    const a = activityOf(run('running', { ordinals: {}, nodeId: 'ask', wakeAt: 9, nodeState }));
    assert.deepEqual(a, {
      kind: 'waiting-peer',
      nodeId: 'ask',
      summary: 'Waiting for agent reviewer (task task-9 is working)',
      since: T0,
      peer: { agent: 'reviewer', taskId: 'task-9', state: 'working' },
    });
  });

  it('a child run: the first one still open, by its derived id', () => {
    const cursor = { ordinals: { each: 2 }, nodeId: 'each', wakeAt: 9, nodeState: { started: 3, open: [1, 2] } };
    const a = activityOf(run('running', cursor));
    const runId = childRunId('run_1:each:2:1');
    assert.equal(a?.kind, 'waiting-child');
    assert.deepEqual(a?.child, { runId });
    assert.equal(a?.summary, `Waiting for child run ${runId} and 1 more (node each)`);
  });

  it('a timer', () => {
    const a = activityOf(run('running', { ordinals: {}, nodeId: 'pause', wakeAt: Date.parse('2026-12-07T13:00:00Z') }));
    assert.equal(a?.kind, 'sleeping');
    assert.equal(a?.summary, 'Sleeping at node pause until 13:00:00 UTC');
  });

  it('a forked run shows its most pressing line: a retry before a person, a person before a timer', () => {
    const branches = [
      { id: 'f/a', fork: 'f', nodeId: 'wait', wakeAt: 5 },
      { id: 'f/b', fork: 'f', nodeId: 'gate', waiting: 'approval' as const },
      { id: 'f/c', fork: 'f', nodeId: 'call', wakeAt: 5, nodeState: { attempts: 4, retry } },
    ];
    const gate = { kind: 'approval' as const, nodeId: 'gate', data: { title: 'OK?' } };
    assert.equal(activityOf(run('waiting-approval', { ordinals: {}, branches }), [gate])?.nodeId, 'call');
    const calm = branches.slice(0, 2);
    assert.equal(activityOf(run('waiting-approval', { ordinals: {}, branches: calm }), [gate])?.kind, 'waiting-person');
  });
});

describe('retry records', () => {
  it('count attempts and keep the time of the first failure', () => {
    const now = Date.parse(T0);
    const first = nextRetry(undefined, now, now + 1000, 'the call', { code: 'timeout', message: 'timed out' });
    assert.deepEqual(first, {
      attempt: 1,
      nextAttemptAt: '2026-12-07T12:00:01.000Z',
      lastError: { code: 'timeout', message: 'timed out' },
      since: T0,
      what: 'the call',
    });
    const second = nextRetry({ retry: first }, now + 1000, now + 3000, 'the call', {
      code: 'http_503',
      message: '503',
    });
    assert.equal(second.attempt, 2);
    assert.equal(second.since, T0);
    assert.equal(second.nextAttemptAt, '2026-12-07T12:00:03.000Z');
  });

  it('a node.retrying event is the activity a stream announces', () => {
    const e = { ...retryEvent('ask', retry), runId: 'run_1', sequence: 7, timestamp: T1 };
    assert.equal(activityOfEvent(e)?.kind, 'retrying');
    assert.equal(activityOfEvent(e)?.attempt, 4);
    const linked = {
      type: 'a2a.task.linked' as const,
      nodeId: 'ask',
      runId: 'run_1',
      sequence: 8,
      timestamp: T1,
      payload: { agent: 'reviewer', peerTaskId: 'task-9', state: 'submitted' },
    };
    assert.equal(activityOfEvent(linked)?.summary, 'Waiting for agent reviewer (task task-9 is submitted)');
    assert.equal(activityOfEvent({ ...linked, type: 'node.started' }), undefined);
  });
});
