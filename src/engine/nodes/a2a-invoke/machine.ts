// The a2a.invoke state machine, pure: from the node's state and what the peer answered (a task, or
// a failure) to what the engine commits next. No clock of its own (`Facts.now` is the engine's),
// no randomness but `Facts.random`, no I/O: index.ts does the exchange with the peer, and acts on a
// verdict's side effects (finish the wait, ask for the cancel, hold a stream) before returning it.
import { type Backoff, retryMs, stepMs } from '../../../egress/backoff.js';
import type { PeerTarget } from '../../../peers/client.js';
import type { PeerFailure } from '../../../peers/errors.js';
import { INTERRUPTED_STATES, type TaskView } from '../../../a2a/model.js';
import { textOf } from '../../../peers/normalize.js';
import type { NewEvent } from '../../../store/model.js';
import { nextRetry, retryEvent } from '../../activity.js';
import type { NodeResult } from '../types.js';
import type { InvokeConfig } from './config.js';
import { type CallInfo, outputOf, questionOf, terminalResult } from './project.js';
import type { InvokeState, Waiting } from './state.js';

/** What a decision needs besides the state and the peer's answer. */
export interface Facts {
  nodeId: string;
  /** Epoch ms by the engine's clock, at the start of the execution. */
  now: number;
  /** The deadline passed in real time during this execution's requests. */
  late: boolean;
  timeoutMs: number;
  onInputRequired: NonNullable<InvokeConfig['onInputRequired']>;
  /** Polling and retries (src/egress/backoff.ts): the poll bounds, ±20 %. */
  poll: Backoff;
  random?: () => number;
}

type Sleep = Extract<NodeResult, { kind: 'sleep' }>;

export type Verdict =
  /** The peer task ended: the node's outcome (its wait is finished first). */
  | { kind: 'ended'; result: NodeResult }
  /** The deadline passed: the node gives up (giveUp), the peer task's cancel asked for first. */
  | { kind: 'overdue'; state: InvokeState; events: NewEvent[] }
  /** Sleep until `result.wakeAt`; with `hold`, a stream on that wait's peer task may wake it sooner. */
  | { kind: 'sleep'; result: Sleep; hold?: Waiting }
  /** Anything else, as is: a question for this run, or a failure. */
  | { kind: 'result'; result: NodeResult };

/** The poll backoff of a host: `pollMinMs` doubling to `pollMaxMs`, ±20 %, until the deadline. */
export const pollBackoff = (bounds: { pollMinMs: number; pollMaxMs: number }): Backoff => ({
  maxAttempts: Number.POSITIVE_INFINITY,
  baseDelayMs: bounds.pollMinMs,
  maxDelayMs: bounds.pollMaxMs,
  jitter: 'around',
});

export const nameOf = (t: PeerTarget): string => ('agent' in t ? t.agent : t.url);

export const fail = (code: string, message: string, details?: Record<string, unknown>): NodeResult => ({
  kind: 'failed',
  error: { code, message, ...(details ? { details } : {}) },
});

const overdue = (s: InvokeState, f: Facts): boolean => f.now >= s.deadline || f.late;

/** The wakeAt of a sleep of `ms` from now, never past the deadline. */
const until = (s: InvokeState, f: Facts, ms: number): number => Math.min(s.deadline, f.now + ms);

/** Decide from the peer task just read (or sent to): an outcome, a question for this run, or another sleep. */
export function settle(s: Waiting, task: TaskView, events: NewEvent[], f: Facts): Verdict {
  const call: CallInfo = { agent: s.agent, protocolVersion: s.protocolVersion, binding: s.binding };
  const changed = task.status.state !== s.state;
  const own: NewEvent[] = [...events];
  if (changed && events.every((e) => e.type !== 'a2a.task.linked')) {
    own.push({
      type: 'a2a.task.updated',
      nodeId: f.nodeId,
      payload: { peerTaskId: task.id, state: task.status.state, peerTimestamp: task.status.timestamp ?? null },
    });
  }
  const done = terminalResult(task, call, f.now);
  if (done) return { kind: 'ended', result: withEvents(done, own) };
  // News from the peer ends a run of transport failures (`retry`); `waitingSince` is the activity's.
  const { answered, stateAt: _at, lastFailure: _failed, retry: _retry, ...prior } = s;
  const unread =
    answered !== undefined && answered.state === task.status.state && answered.at === task.status.timestamp;
  const next: Waiting = {
    ...prior,
    state: task.status.state,
    ...(task.status.timestamp ? { stateAt: task.status.timestamp } : {}),
    ...(unread ? { answered } : {}),
    attempt: changed ? 0 : s.attempt + 1,
    waitingSince: changed || !s.waitingSince ? new Date(f.now).toISOString() : s.waitingSince,
  };
  if (overdue(s, f)) return { kind: 'overdue', state: next, events: own };
  if (INTERRUPTED_STATES.has(task.status.state) && f.onInputRequired !== 'wait' && !unread) {
    return { kind: 'result', result: asked(s, next, task, own, f) };
  }
  // Sleeping: a stream wait watches the task until news, whatever its state (src/peers/streams.ts).
  const wakeAt = until(s, f, stepMs(f.poll, next.attempt + 1, f.random));
  const result: Sleep = { kind: 'sleep', wakeAt, state: { ...next }, events: own };
  return next.mode.includes('stream') ? { kind: 'sleep', result, hold: next } : { kind: 'sleep', result };
}

/** The peer asks its caller for input: fail, or open a clarification that expires with the call. */
function asked(s: Waiting, next: Waiting, task: TaskView, own: NewEvent[], f: Facts): NodeResult {
  if (f.onInputRequired === 'fail') {
    const message = `agent '${s.agent}' asks for input: ${textOf(task.status.message)}`;
    return withEvents(fail('external_input_required', message, { peerTaskId: task.id, output: outputOf(task) }), own);
  }
  // The question expires with the call: its expiry re-executes the node, which then gives up.
  const expires = { timeoutMs: f.timeoutMs, expiresAt: new Date(s.deadline).toISOString() };
  return {
    kind: 'interrupt',
    interrupt: { kind: 'clarification', data: { ...questionOf(task, s.agent), ...expires } },
    expiresAt: s.deadline,
    state: { ...next },
    events: own,
  };
}

/**
 * A failed exchange (`s` already counts it in `attempt`): a transport problem sleeps and retries
 * until the deadline, honouring a peer's Retry-After up to the poll ceiling; the rest fail now.
 */
export function afterFailure(failure: PeerFailure, s: InvokeState, what: string, f: Facts): Verdict {
  if (failure.kind === 'transport') {
    const failed: InvokeState = { ...s, lastFailure: `${what}: ${failure.message}` };
    if (overdue(s, f)) return { kind: 'overdue', state: failed, events: [] };
    const wakeAt = until(s, f, retryMs(f.poll, s.attempt + 1, failure.retryAfterMs, f.random));
    // What the run's activity shows while it retries, and the `node.retrying` event streams turn into an update.
    const error = { code: 'external_call_failed', message: failure.message };
    const retry = nextRetry(s as unknown as Record<string, unknown>, f.now, wakeAt, retryWhat(s), error);
    return {
      kind: 'sleep',
      result: { kind: 'sleep', wakeAt, state: { ...failed, retry }, events: [retryEvent(f.nodeId, retry)] },
    };
  }
  if (failure.kind === 'refused') {
    const code = failure.code ?? 'external_call_refused';
    return { kind: 'result', result: fail(code, `${what}: ${failure.reason}`, { kind: 'refused' }) };
  }
  const details = { kind: 'peer', peerCode: failure.code };
  return { kind: 'result', result: fail('external_call_failed', `${what}: ${failure.message}`, details) };
}

/** What a retry calls, for people (the activity's summary). */
const retryWhat = (s: InvokeState): string =>
  s.phase === 'send' ? `the call to agent ${nameOf(s.target)}` : `the call to agent ${s.agent} (task ${s.taskId})`;

/** `timeoutMs` passed: the node fails (its peer task, recorded or not, is cancelled by the caller). */
export function gaveUp(s: InvokeState, events: NewEvent[], timeoutMs: number): NodeResult {
  if (s.phase === 'send') {
    const what = s.lastFailure ?? `agent '${nameOf(s.target)}' was not reachable`;
    return withEvents(
      fail('external_call_failed', `${what} (gave up after ${timeoutMs} ms)`, { kind: 'transport' }),
      events,
    );
  }
  const what = `task ${s.taskId} of agent '${s.agent}' did not end within ${timeoutMs} ms`;
  return withEvents(fail('external_call_failed', what, { peerTaskId: s.taskId }), events);
}

/** The state after the `n`-th answer was relayed: the answered question remembered, backoff reset. */
export function relayed(s: Waiting, n: number): Waiting {
  const { reply: _done, ...rest } = s;
  return {
    ...rest,
    replies: n,
    attempt: 0,
    ...(s.state && s.stateAt ? { answered: { state: s.state, at: s.stateAt } } : {}),
  };
}

/** The message part an answer is relayed as: an object as data, anything else as text. */
export function replyContent(answer: unknown): { data: Record<string, unknown> } | { text: string } {
  if (answer !== null && typeof answer === 'object' && !Array.isArray(answer)) {
    return { data: answer as Record<string, unknown> };
  }
  return { text: typeof answer === 'string' ? answer : JSON.stringify(answer ?? null) };
}

/** `r` with `events` before its own; a sleep or a question keeps only its own. */
function withEvents(r: NodeResult, events: NewEvent[]): NodeResult {
  if (events.length === 0) return r;
  if (r.kind === 'sleep' || r.kind === 'interrupt') return r;
  return { ...r, events: [...events, ...(r.events ?? [])] };
}
