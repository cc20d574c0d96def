// A peer's answers in the A2A core's own neutral model (src/a2a/model.ts), whatever protocol
// version the peer spoke: the SDK hands back A2A 1.0 objects (0.3 answers already translated), and
// these become the neutral Task and Message the server side speaks too — no model of their own.
// Parts keep what a caller of a peer has always been given: a text, a data value, a file's
// reference or bytes with its name and media type.
import { type Artifact, type Message, type Part, Role, type StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import type * as N from '../a2a/model.js';
import { INVALID_AGENT_RESPONSE, peerError } from './errors.js';

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
  const known = state === undefined ? undefined : STATES[state];
  if (!known) throw peerError(INVALID_AGENT_RESPONSE, `task ${taskId} has no known state (${String(state)})`);
  return known;
}

function partOf(part: Part): N.Part {
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

/** A message's text parts joined by newlines ('' when there are none). */
export const textOf = (message: N.Message | undefined): string =>
  (message?.parts ?? [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('\n');

const artifactOf = (a: Artifact): N.Artifact => ({
  artifactId: a.artifactId,
  ...(a.name ? { name: a.name } : {}),
  parts: a.parts.map(partOf),
});

export function messageOf(m: Message): N.Message {
  return {
    messageId: m.messageId,
    role: m.role === Role.ROLE_AGENT ? 'agent' : 'user',
    parts: m.parts.map(partOf),
    ...(m.contextId ? { contextId: m.contextId } : {}),
    ...(m.taskId ? { taskId: m.taskId } : {}),
  };
}

function statusOf(status: Task['status'], taskId: string): N.TaskStatus {
  return {
    state: stateOf(status?.state, taskId),
    ...(status?.message ? { message: messageOf(status.message) } : {}),
    ...(status?.timestamp ? { timestamp: status.timestamp } : {}),
  };
}

/** A peer's Task; `artifacts` is always there (`[]` when it has none). */
export function taskOf(task: Task): N.TaskView {
  return {
    id: task.id,
    contextId: task.contextId,
    status: statusOf(task.status, task.id),
    artifacts: task.artifacts.map(artifactOf),
    ...(task.metadata && Object.keys(task.metadata).length > 0 ? { metadata: task.metadata } : {}),
  };
}

/**
 * Fold one stream event into the task as known so far. A Task event replaces it; status and
 * artifact updates change it; a stray Message changes nothing.
 */
export function applyStreamEvent(known: N.TaskView | undefined, event: StreamResponse): N.TaskView | undefined {
  const p = event.payload;
  if (p?.$case === 'task') return taskOf(p.value);
  if (p?.$case === 'statusUpdate') {
    const u = p.value;
    const base = known ?? { id: u.taskId, contextId: u.contextId, artifacts: [] };
    return { ...base, status: statusOf(u.status, u.taskId) };
  }
  if (p?.$case === 'artifactUpdate' && known && p.value.artifact) {
    const artifacts = mergeArtifact(known.artifacts ?? [], artifactOf(p.value.artifact), p.value.append);
    return { ...known, artifacts };
  }
  return known;
}

function mergeArtifact(list: N.Artifact[], next: N.Artifact, append: boolean): N.Artifact[] {
  const i = list.findIndex((a) => a.artifactId === next.artifactId);
  if (i < 0) return [...list, next];
  const merged = append ? { ...list[i]!, parts: [...list[i]!.parts, ...next.parts] } : next;
  return list.map((a, j) => (j === i ? merged : a));
}
