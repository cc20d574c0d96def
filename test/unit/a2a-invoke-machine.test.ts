// The a2a.invoke state machine (src/engine/nodes/a2a-invoke/machine.ts, state.ts), pure: a state
// and a peer's answer in, the verdict out, with the engine's clock and the random source injected.
// A change in how the node waits, asks, relays, retries or gives up fails here, before any
// two-host test runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { a2aInvoke } from '../../src/engine/nodes/a2a-invoke/index.js';
import {
  afterFailure,
  type Facts,
  gaveUp,
  pollBackoff,
  relayed,
  replyContent,
  settle,
  type Verdict,
} from '../../src/engine/nodes/a2a-invoke/machine.js';
import {
  describe as describeState,
  type Sending,
  stateOf,
  type Waiting,
} from '../../src/engine/nodes/a2a-invoke/state.js';
import type { NodeResult } from '../../src/engine/nodes/types.js';
import type { Message, TaskState, TaskView } from '../../src/a2a/model.js';
import type { NewEvent } from '../../src/store/model.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const DEADLINE = NOW + 600_000;

/** The engine's clock at NOW, a 1 s … 60 s poll, and a random source in the middle (no jitter). */
const facts = (over: Partial<Facts> = {}): Facts => ({
  nodeId: 'ask',
  now: NOW,
  late: false,
  timeoutMs: 600_000,
  onInputRequired: 'clarify',
  poll: pollBackoff({ pollMinMs: 1000, pollMaxMs: 60_000 }),
  random: () => 0.5,
  ...over,
});

const waiting = (over: Partial<Waiting> = {}): Waiting => ({
  phase: 'wait',
  deadline: DEADLINE,
  attempt: 0,
  agent: 'reviewer',
  target: { agent: 'reviewer' },
  protocolVersion: '1.0',
  binding: 'JSONRPC',
  taskId: 'task-1',
  contextId: 'ctx-1',
  mode: ['poll'],
  waitId: 'wait-1',
  replies: 0,
  ...over,
});

const sending = (over: Partial<Sending> = {}): Sending => ({
  phase: 'send',
  deadline: DEADLINE,
  attempt: 1,
  target: { agent: 'reviewer' },
  ...over,
});

/** A peer task as the peer client hands it over (the neutral model). */
const task = (state: TaskState, over: { timestamp?: string; message?: Message } = {}): TaskView => ({
  id: 'task-1',
  contextId: 'ctx-1',
  status: {
    state,
    ...(over.timestamp ? { timestamp: over.timestamp } : {}),
    ...(over.message ? { message: over.message } : {}),
  },
  artifacts: [],
});

const LINKED: NewEvent = { type: 'a2a.task.linked', nodeId: 'ask', payload: {} };

/** The NodeResult of a verdict that is returned as is, or of a sleep. */
function resultOf(v: Verdict): NodeResult {
  assert.ok(v.kind !== 'overdue', `expected a result, got ${v.kind}`);
  return v.result;
}

function sleepOf(v: Verdict) {
  assert.equal(v.kind, 'sleep');
  return v as Extract<Verdict, { kind: 'sleep' }>;
}

describe('a2a.invoke: waiting on the peer task', () => {
  it('after the send, sleeps one poll minimum on the task it linked, logging no update of its own', () => {
    const v = sleepOf(settle(waiting(), task('working', { timestamp: 't1' }), [LINKED], facts()));
    assert.equal(v.result.wakeAt, NOW + 1000);
    assert.deepEqual(v.result.events, [LINKED]);
    assert.deepEqual(v.result.state, {
      ...waiting(),
      state: 'working',
      stateAt: 't1',
      attempt: 0,
      waitingSince: new Date(NOW).toISOString(),
    });
    assert.equal(v.hold, undefined, 'a poll-only wait holds no stream');
  });

  it('backs off while nothing changes: the poll step doubles to the ceiling, never past the deadline', () => {
    const wakes = [0, 1, 5, 9].map((attempt) => {
      const v = sleepOf(settle(waiting({ state: 'working', attempt }), task('working'), [], facts()));
      assert.deepEqual(v.result.events, [], 'no news, no event');
      assert.equal((v.result.state as Waiting).attempt, attempt + 1);
      return v.result.wakeAt - NOW;
    });
    assert.deepEqual(wakes, [2000, 4000, 60_000, 60_000]);
    const near = sleepOf(
      settle(waiting({ state: 'working', attempt: 9, deadline: NOW + 5000 }), task('working'), [], facts()),
    );
    assert.equal(near.result.wakeAt, NOW + 5000);
  });

  it('logs a changed state and polls from the minimum again', () => {
    const v = sleepOf(
      settle(waiting({ state: 'submitted', attempt: 4 }), task('working', { timestamp: 't2' }), [], facts()),
    );
    assert.equal(v.result.wakeAt, NOW + 1000);
    assert.deepEqual(v.result.events, [
      {
        type: 'a2a.task.updated',
        nodeId: 'ask',
        payload: { peerTaskId: 'task-1', state: 'working', peerTimestamp: 't2' },
      },
    ]);
  });

  it('asks the stream holder to watch the task when the wait streams', () => {
    const v = sleepOf(settle(waiting({ mode: ['stream', 'poll'] }), task('working'), [LINKED], facts()));
    assert.equal(v.hold?.taskId, 'task-1');
    assert.equal(v.hold?.state, 'working');
  });

  it('drops the last transport failure and the previous peer clock once the task is read', () => {
    const s = waiting({ state: 'working', stateAt: 'old', lastFailure: 'reading task: reset' });
    const next = sleepOf(settle(s, task('working'), [], facts())).result.state as Waiting;
    assert.equal(next.lastFailure, undefined);
    assert.equal(next.stateAt, undefined);
  });
});

describe('a2a.invoke: the peer task ends', () => {
  it('completed: the node completes with the untrusted output and the replay record', () => {
    const v = settle(waiting({ state: 'working' }), task('completed', { timestamp: 't9' }), [], facts());
    assert.equal(v.kind, 'ended');
    const r = resultOf(v);
    assert.equal(r.kind, 'completed');
    if (r.kind !== 'completed') return;
    assert.deepEqual(r.output, {
      taskId: 'task-1',
      contextId: 'ctx-1',
      state: 'completed',
      artifacts: [],
      contentTrust: 'untrusted',
    });
    assert.deepEqual(r.detail?.peer, {
      agent: 'reviewer',
      protocolVersion: '1.0',
      binding: 'JSONRPC',
      task: r.output,
      peerTimestamp: 't9',
      recordedAt: new Date(NOW).toISOString(),
    });
    assert.deepEqual(
      r.events?.map((e) => e.type),
      ['a2a.task.updated'],
    );
  });

  it('failed, rejected and canceled: the node fails, or the run ends cancelled', () => {
    const ends = (['failed', 'rejected', 'canceled'] as const).map((state) => {
      const r = resultOf(settle(waiting({ state: 'working' }), task(state), [], facts()));
      return r.kind === 'failed' ? r.error.code : r.kind === 'cancelled' ? r.reason : r.kind;
    });
    assert.deepEqual(ends, ['external_task_failed', 'rejected_by_remote', 'cross_protocol_cancel']);
  });
});

describe('a2a.invoke: the peer asks for input', () => {
  const said: Message = { messageId: 'q1', role: 'agent', parts: [{ kind: 'text', text: 'Which year?' }] };

  it('clarify: opens a clarification on the run that expires with the call', () => {
    const v = settle(
      waiting({ state: 'working' }),
      task('input-required', { message: said, timestamp: 't3' }),
      [],
      facts(),
    );
    assert.equal(v.kind, 'result');
    const r = resultOf(v);
    assert.equal(r.kind, 'interrupt');
    if (r.kind !== 'interrupt') return;
    assert.equal(r.interrupt.kind, 'clarification');
    assert.equal(r.expiresAt, DEADLINE);
    assert.deepEqual(r.interrupt.data.questions, [{ id: 'answer', question: 'Which year?' }]);
    assert.equal(r.interrupt.data.expiresAt, new Date(DEADLINE).toISOString());
    assert.equal(r.interrupt.data.timeoutMs, 600_000);
    assert.deepEqual(r.state, {
      ...waiting(),
      state: 'input-required',
      stateAt: 't3',
      attempt: 0,
      waitingSince: new Date(NOW).toISOString(),
    });
  });

  it('fail: fails the node external_input_required with what the peer said', () => {
    const r = resultOf(
      settle(
        waiting({ state: 'working' }),
        task('input-required', { message: said }),
        [],
        facts({ onInputRequired: 'fail' }),
      ),
    );
    assert.equal(r.kind, 'failed');
    if (r.kind !== 'failed') return;
    assert.equal(r.error.code, 'external_input_required');
    assert.equal(r.error.message, "agent 'reviewer' asks for input: Which year?");
  });

  it('wait: keeps waiting (the peer’s own people answer)', () => {
    assert.equal(
      settle(waiting({ state: 'working' }), task('auth-required'), [], facts({ onInputRequired: 'wait' })).kind,
      'sleep',
    );
  });

  it('after relaying an answer, the same question (state and peer clock) is not asked again; a new one is', () => {
    const s = waiting({ state: 'input-required', answered: { state: 'input-required', at: 't3' } });
    const same = sleepOf(settle(s, task('input-required', { timestamp: 't3' }), [], facts()));
    assert.deepEqual((same.result.state as Waiting).answered, { state: 'input-required', at: 't3' });
    const again = resultOf(settle(s, task('input-required', { timestamp: 't4' }), [], facts()));
    assert.equal(again.kind, 'interrupt');
    if (again.kind === 'interrupt') assert.equal((again.state as Waiting).answered, undefined);
  });
});

describe('a2a.invoke: relaying the answer', () => {
  it('the resolveInterrupt hook keeps the state and adds the answer for the next execution', () => {
    const stored = { ...waiting({ state: 'input-required' }), waitingOn: { agent: 'reviewer' } };
    const next = a2aInvoke.resolveInterrupt?.(stored, { answers: { answer: '1999' } });
    assert.deepEqual(next, { ...stored, reply: { answers: { answer: '1999' } } });
    assert.equal(stateOf(next)?.phase, 'wait');
  });

  it('once relayed: the reply is gone, counted, the backoff reset, the answered question remembered', () => {
    const s = waiting({
      state: 'input-required',
      stateAt: 't3',
      attempt: 3,
      replies: 1,
      reply: { answers: { answer: 'x' } },
    });
    const { reply: _r, ...rest } = s;
    assert.deepEqual(relayed(s, 2), {
      ...rest,
      replies: 2,
      attempt: 0,
      answered: { state: 'input-required', at: 't3' },
    });
    assert.equal(
      relayed(waiting({ state: 'input-required' }), 1).answered,
      undefined,
      'no peer clock: taken at its word',
    );
  });

  it('an object answer goes as data, anything else as text', () => {
    assert.deepEqual(replyContent({ year: 1999 }), { data: { year: 1999 } });
    assert.deepEqual(replyContent('1999'), { text: '1999' });
    assert.deepEqual(replyContent([1, 2]), { text: '[1,2]' });
    assert.deepEqual(replyContent(undefined), { text: 'null' });
  });
});

describe('a2a.invoke: failures and the deadline', () => {
  it('a transport failure sleeps one backoff step, remembering what failed', () => {
    const v = sleepOf(
      afterFailure({ kind: 'transport', message: 'fetch failed' }, sending({ attempt: 1 }), 'calling agent', facts()),
    );
    assert.equal(v.result.wakeAt, NOW + 2000);
    assert.deepEqual(v.result.state, {
      ...sending({ attempt: 1 }),
      lastFailure: 'calling agent: fetch failed',
      retry: {
        attempt: 1,
        nextAttemptAt: new Date(NOW + 2000).toISOString(),
        lastError: { code: 'external_call_failed', message: 'fetch failed' },
        since: new Date(NOW).toISOString(),
        what: 'the call to agent reviewer',
      },
    });
    assert.deepEqual(
      v.result.events?.map((e) => e.type),
      ['node.retrying'],
      'a retry is an event (the activity streams show)',
    );
    assert.equal(v.hold, undefined);
  });

  it('news from the peer ends the retry record; the wait keeps its start while the state holds', () => {
    const retry = { attempt: 2, nextAttemptAt: 'x', lastError: { code: 'c', message: 'm' }, since: 's', what: 'w' };
    const first = sleepOf(settle(waiting({ state: 'working', retry }), task('working'), [], facts()));
    const next = first.result.state as Waiting;
    assert.equal(next.retry, undefined);
    assert.equal(next.waitingSince, new Date(NOW).toISOString());
    const later = sleepOf(settle(next, task('working'), [], facts({ now: NOW + 5000 })));
    assert.equal(
      (later.result.state as Waiting).waitingSince,
      new Date(NOW).toISOString(),
      'unchanged state: the same start',
    );
  });

  it('a peer’s Retry-After is honoured up to the poll ceiling, and never past the deadline', () => {
    const failed = (retryAfterMs: number, deadline = DEADLINE) =>
      sleepOf(
        afterFailure({ kind: 'transport', message: '429', retryAfterMs }, waiting({ deadline }), 'reading', facts()),
      ).result.wakeAt - NOW;
    assert.equal(failed(30_000), 30_000);
    assert.equal(failed(100), 1000, 'a shorter Retry-After keeps the own step');
    assert.equal(failed(999_999_999_000), 60_000, 'Retry-After: 999999999 does not park the run');
    assert.equal(failed(30_000, NOW + 10_000), 10_000);
  });

  it('a refusal or a peer error fails the node at once', () => {
    const refused = resultOf(
      afterFailure({ kind: 'refused', reason: 'not in the registry' }, sending(), 'calling agent', facts()),
    );
    assert.deepEqual(refused, {
      kind: 'failed',
      error: {
        code: 'external_call_refused',
        message: 'calling agent: not in the registry',
        details: { kind: 'refused' },
      },
    });
    const peer = resultOf(
      afterFailure({ kind: 'peer', code: -32001, message: 'no such task' }, waiting(), 'reading', facts()),
    );
    assert.deepEqual(peer, {
      kind: 'failed',
      error: {
        code: 'external_call_failed',
        message: 'reading: no such task',
        details: { kind: 'peer', peerCode: -32001 },
      },
    });
  });

  it('past the deadline, by the engine’s clock or in real time, the node gives up instead of sleeping', () => {
    const late = afterFailure(
      { kind: 'transport', message: 'timeout' },
      sending(),
      'calling agent',
      facts({ late: true }),
    );
    assert.equal(late.kind, 'overdue');
    if (late.kind === 'overdue') assert.equal(late.state.lastFailure, 'calling agent: timeout');
    const read = settle(waiting({ state: 'working' }), task('working'), [], facts({ now: DEADLINE }));
    assert.equal(read.kind, 'overdue');
    if (read.kind === 'overdue') assert.equal((read.state as Waiting).state, 'working');
    assert.equal(
      settle(waiting(), task('completed'), [], facts({ late: true })).kind,
      'ended',
      'an end read in time still counts',
    );
  });

  it('giving up says why: the last failure, an unreachable agent, or the task that did not end', () => {
    const code = (r: NodeResult) => (r.kind === 'failed' ? [r.error.code, r.error.message, r.error.details] : r.kind);
    assert.deepEqual(code(gaveUp(sending({ lastFailure: 'calling agent: reset' }), [], 5000)), [
      'external_call_failed',
      'calling agent: reset (gave up after 5000 ms)',
      { kind: 'transport' },
    ]);
    assert.deepEqual(code(gaveUp(sending({ target: { url: 'https://b.example/a2a' } }), [], 5000)), [
      'external_call_failed',
      "agent 'https://b.example/a2a' was not reachable (gave up after 5000 ms)",
      { kind: 'transport' },
    ]);
    const events: NewEvent[] = [{ type: 'a2a.task.updated', nodeId: 'ask', payload: {} }];
    const r = gaveUp(waiting({ state: 'working' }), events, 5000);
    assert.deepEqual(code(r), [
      'external_call_failed',
      "task task-1 of agent 'reviewer' did not end within 5000 ms",
      { peerTaskId: 'task-1' },
    ]);
    assert.deepEqual(r.events, events);
  });
});

describe('a2a.invoke: its state as stored', () => {
  it('reads states written before replies and wait modes were recorded', () => {
    const { replies: _r, mode: _m, ...old } = waiting();
    assert.deepEqual(stateOf(old), waiting());
    assert.equal(stateOf(undefined), undefined);
    assert.deepEqual(stateOf(sending()), sending());
  });

  it('describes itself for views: the peer task once read, nothing while sending', () => {
    assert.deepEqual(describeState(waiting({ state: 'input-required' })), {
      waitingOn: { agent: 'reviewer', peerTaskId: 'task-1', state: 'input-required' },
    });
    assert.equal(describeState(waiting()), undefined);
    assert.equal(describeState(sending()), undefined);
    assert.equal(a2aInvoke.describe, describeState);
  });
});
