// The one small shape a caller of a peer needs, whatever protocol version the peer spoke: the SDK
// hands back A2A 1.0 objects (0.3 answers already translated), and these become plain JSON with
// the stored RFC 0100 state spellings.
import { type Artifact, type Message, type Part, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import type * as N from '../a2a/model.js';
import { INVALID_AGENT_RESPONSE, peerError } from './errors.js';

export type PeerPart =
  | { kind: 'text'; text: string }
  | { kind: 'data'; data: unknown }
  | { kind: 'file'; uri?: string; bytes?: string; name?: string; mediaType?: string };

export interface PeerArtifact {
  artifactId: string;
  name?: string;
  parts: PeerPart[];
}

/** The agent's words with a state: the question of input-required, the reason of failed. */
export interface PeerStatusMessage {
  /** The text parts joined by newlines ('' when there are none). */
  text: string;
  parts: PeerPart[];
}

export interface PeerTask {
  taskId: string;
  contextId: string;
  state: N.TaskState;
  statusMessage?: PeerStatusMessage;
  artifacts: PeerArtifact[];
  /** The peer's clock at its last status change (ISO 8601), when it gave one. */
  peerTimestamp?: string;
  /** The task's metadata as the peer sent it (e.g. a Handoff peer's `openwop.interrupt.questions`). */
  metadata?: Record<string, unknown>;
}

/** A peer may answer a message with a message instead of a task (no task was made). */
export interface PeerMessage {
  messageId: string;
  contextId?: string;
  text: string;
  parts: PeerPart[];
}

const STATES: Partial<Record<TaskState, N.TaskState>> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'submitted',
  [TaskState.TASK_STATE_WORKING]: 'working',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
};

/** A peer task's terminal and interrupted states: the A2A vocabulary's own. */
export { INTERRUPTED_STATES, TERMINAL_STATES } from '../a2a/model.js';

function stateOf(state: TaskState | undefined, taskId: string): N.TaskState {
  const stored = state === undefined ? undefined : STATES[state];
  if (!stored) throw peerError(INVALID_AGENT_RESPONSE, `task ${taskId} has no known state (${String(state)})`);
  return stored;
}

function toPeerPart(part: Part): PeerPart {
  const c = part.content;
  const file = {
    ...(part.filename ? { name: part.filename } : {}),
    ...(part.mediaType ? { mediaType: part.mediaType } : {}),
  };
  switch (c?.$case) {
    case 'text':
      return { kind: 'text', text: c.value };
    case 'data':
      return { kind: 'data', data: c.value ?? null };
    case 'url':
      return { kind: 'file', uri: c.value, ...file };
    case 'raw':
      return { kind: 'file', bytes: Buffer.from(c.value).toString('base64'), ...file };
    default:
      throw peerError(INVALID_AGENT_RESPONSE, 'a part has no content');
  }
}

const textOf = (parts: PeerPart[]): string =>
  parts
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('\n');

const toArtifact = (a: Artifact): PeerArtifact => ({
  artifactId: a.artifactId,
  ...(a.name ? { name: a.name } : {}),
  parts: a.parts.map(toPeerPart),
});

function toStatusMessage(m: Message | undefined): PeerStatusMessage | undefined {
  if (!m) return undefined;
  const parts = m.parts.map(toPeerPart);
  return { text: textOf(parts), parts };
}

export function toPeerTask(task: Task): PeerTask {
  const statusMessage = toStatusMessage(task.status?.message);
  return {
    taskId: task.id,
    contextId: task.contextId,
    state: stateOf(task.status?.state, task.id),
    ...(statusMessage ? { statusMessage } : {}),
    artifacts: task.artifacts.map(toArtifact),
    ...(task.status?.timestamp ? { peerTimestamp: task.status.timestamp } : {}),
    ...(task.metadata && Object.keys(task.metadata).length > 0 ? { metadata: task.metadata } : {}),
  };
}

export function toPeerMessage(m: Message): PeerMessage {
  const parts = m.parts.map(toPeerPart);
  return { messageId: m.messageId, ...(m.contextId ? { contextId: m.contextId } : {}), text: textOf(parts), parts };
}

/**
 * Fold one stream event into the task as known so far. A Task event replaces it; status and
 * artifact updates change it; a stray Message changes nothing.
 */
export function applyStreamEvent(known: PeerTask | undefined, event: StreamResponse): PeerTask | undefined {
  const p = event.payload;
  if (p?.$case === 'task') return toPeerTask(p.value);
  if (p?.$case === 'statusUpdate') {
    const u = p.value;
    const statusMessage = toStatusMessage(u.status?.message);
    const {
      statusMessage: _old,
      peerTimestamp: _oldTime,
      ...rest
    } = known ?? {
      taskId: u.taskId,
      contextId: u.contextId,
      artifacts: [],
    };
    return {
      ...rest,
      state: stateOf(u.status?.state, u.taskId),
      ...(statusMessage ? { statusMessage } : {}),
      ...(u.status?.timestamp ? { peerTimestamp: u.status.timestamp } : {}),
    };
  }
  if (p?.$case === 'artifactUpdate' && known && p.value.artifact) {
    return { ...known, artifacts: mergeArtifact(known.artifacts, toArtifact(p.value.artifact), p.value.append) };
  }
  return known;
}

function mergeArtifact(list: PeerArtifact[], next: PeerArtifact, append: boolean): PeerArtifact[] {
  const i = list.findIndex((a) => a.artifactId === next.artifactId);
  if (i < 0) return [...list, next];
  const merged = append ? { ...list[i]!, parts: [...list[i]!.parts, ...next.parts] } : next;
  return list.map((a, j) => (j === i ? merged : a));
}
