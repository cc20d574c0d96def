// What an a2a.invoke execution hands the next one (the run's cursor.nodeState): a typed union by
// phase, read back once per execution (stateOf). Also the node's lifecycle hooks that only touch
// this state: the answer to its clarification (withReply) and what views show (describe).
import type { PeerTarget } from '../../../peers/client.js';
import type { TaskState } from '../../../a2a/model.js';
import type { RetryRecord } from '../../activity.js';
import type { NodeView } from '../types.js';
import type { WaitMode } from './service.js';

/** No peer task linked yet: the first send, or one repeated after a transport failure. */
export type Sending = {
  phase: 'send';
  /** Epoch ms after which the call gives up. */
  deadline: number;
  /** Sends tried so far (the backoff exponent). */
  attempt: number;
  target: PeerTarget;
  /** The last transport failure (what the node says when the deadline passes on it). */
  lastFailure?: string;
  /** While transport failures are retried: attempts, last error, next attempt (the run's activity). */
  retry?: RetryRecord;
};

/** Linked to a peer task: waiting for it to change (polled, pushed or streamed). */
export type Waiting = {
  phase: 'wait';
  deadline: number;
  /** Consecutive sleeps without news (the backoff exponent). */
  attempt: number;
  agent: string;
  target: PeerTarget;
  protocolVersion: string;
  binding: string;
  taskId: string;
  contextId: string;
  mode: WaitMode[];
  waitId: string;
  /** Replies relayed so far (each gets its own message id). */
  replies: number;
  /** The peer task's state as last read (absent only before the first read: the send's answer). */
  state?: TaskState;
  /** The peer's clock of that state, when it gave one. */
  stateAt?: string;
  /**
   * The question last relayed (its state and peer clock): while the peer task still shows it, the
   * peer has not taken the answer up yet (an @a2a-js/sdk 1.x peer answers a non-blocking send with
   * the task as stored, before its executor runs), so the node waits instead of asking again.
   */
  answered?: { state: TaskState; at: string };
  /** This run's clarification was answered: relay it, then wait again (set by withReply). */
  reply?: { answers?: Record<string, unknown> };
  /** Since when the peer task has been in `state` (the run's activity). */
  waitingSince?: string;
  lastFailure?: string;
  retry?: RetryRecord;
};

export type InvokeState = Sending | Waiting;

/**
 * The state the engine hands back: what an execution of this node returned (plus the view the
 * engine recorded with it, ignored here). States written before `replies` and `mode` were always
 * recorded read as none relayed and polling.
 */
export function stateOf(raw: Record<string, unknown> | undefined): InvokeState | undefined {
  if (raw === undefined) return undefined;
  const s = raw as InvokeState;
  if (s.phase !== 'wait') return s;
  return { ...s, replies: s.replies ?? 0, mode: s.mode ?? ['poll'] };
}

/** resolveInterrupt: the answer to the clarification this node opened, to be relayed into the peer task. */
export function withReply(raw: Record<string, unknown> | undefined, answer: Record<string, unknown>) {
  return { ...(raw ?? {}), reply: answer };
}

/** describe: while linked and read, the peer task the node waits on ({agent, peerTaskId, state}). */
export function describe(raw: Record<string, unknown>): NodeView | undefined {
  const s = stateOf(raw);
  if (s?.phase !== 'wait' || s.state === undefined) return undefined;
  return { waitingOn: { agent: s.agent, peerTaskId: s.taskId, state: s.state } };
}
