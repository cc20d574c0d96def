// The one pure projection OpenWOP run → A2A Task (the neutral model, model.ts), shared by tasks/get, streams, pushes and
// the REST read seam, so every surface reports the same state for the same run. The status table
// is docs/protocol/openwop.md#forward-projection verbatim. Also: A2A message parts → run inputs, and a resume
// message → an interrupt resolution (docs/protocol/openwop.md#resume-by-message).
//
//   const task = toTask({ run, contextId, stateTimestamp: run.updatedAt, artifacts, history });
import {
  type InterruptKind,
  type RunEvent,
  type RunEventType,
  type RunHead,
  type RunStatus,
  statusOfInterrupt,
  type TaskRecord,
} from '../store/model.js';
import type { InterruptVote } from '../store/model.js';
import { artifactHash } from '../engine/audit.js';
import { normalizeApprovalAction } from '../engine/vocabulary.js';
import { withActivity } from './activity.js';
import { isPlainObject, stringArray } from './values.js';
import {
  type A2AInterruptKind,
  type A2APushConfigRecord,
  type A2ATaskState,
  type Artifact,
  type ArtifactUpdate,
  INTERRUPTED_STATES,
  type Message,
  type StatusUpdate,
  TERMINAL_STATES,
  type TaskState,
  type TaskView,
} from './model.js';

// ---------------------------------------------------------------- state table

export interface ProjectedState {
  state: TaskState;
  /** Set iff `state` is `input-required` and the wait is an approval or a clarification. */
  interruptKind?: A2AInterruptKind;
}

const STATE_TABLE: Record<RunStatus, ProjectedState> = {
  pending: { state: 'submitted' },
  running: { state: 'working' },
  // Drift #1: A2A has no pause. A cancelling run stays working until it is terminal (RFC 0094).
  paused: { state: 'working' },
  cancelling: { state: 'working' },
  'waiting-approval': { state: 'input-required', interruptKind: 'approval' },
  'waiting-input': { state: 'input-required', interruptKind: 'clarification' },
  // RFC 0152 §D.4: input-required, but interruptKind has no value for an external event.
  'waiting-external': { state: 'input-required' },
  completed: { state: 'completed' },
  failed: { state: 'failed' },
  cancelled: { state: 'canceled' },
};

/** Run status → A2A state. The run status alone decides the kind (the engine enters
 * waiting-approval only for approvals and waiting-input only for clarifications), so the open
 * interrupt's kind is accepted for call-site symmetry but never overrides the table. Never
 * yields auth-required or rejected: those exist only for the reverse direction. */
export function projectState(status: RunStatus, _interruptKind?: InterruptKind): ProjectedState {
  const row = STATE_TABLE[status];
  return row.interruptKind ? { state: row.state, interruptKind: row.interruptKind } : { state: row.state };
}

export const isTerminalState = (state: TaskState): boolean => TERMINAL_STATES.has(state);

/** A message/stream (and a blocking send) ends at a terminal state or when the caller must act. */
export const isFinalForMessageStream = (state: TaskState): boolean =>
  TERMINAL_STATES.has(state) || INTERRUPTED_STATES.has(state);

/** A state an event moves a task into, with what a status update says about it. */
export interface EventState extends ProjectedState {
  error?: { code: string; message: string };
}

/**
 * The A2A state a run event moves its task into, if it moves it at all — by the same table as
 * `projectState`, applied to the run status the event records entering.
 */
export function stateAfterEvent(e: RunEvent): EventState | undefined {
  switch (e.type) {
    case 'run.started':
    case 'node.resumed':
      return projectState('running');
    case 'interrupt.requested':
      return projectState(statusOfInterrupt(e.payload.kind as InterruptKind));
    case 'run.completed':
      return projectState('completed');
    case 'run.failed': {
      const err = (e.payload.error ?? {}) as { code?: string; message?: string };
      const error = { code: err.code ?? 'run_failed', message: err.message ?? 'The run failed' };
      return { ...projectState('failed'), error };
    }
    case 'run.cancelled':
      return projectState('cancelled');
    default:
      return undefined;
  }
}

// ---------------------------------------------------------------- stored record

/** The published RFC 0100 A2ATaskState of a stored task record (closed: tenant, principal and
 * messageId stay internal), with the task's default push config when it has one. */
export function toTaskState(rec: TaskRecord, pushConfig?: A2APushConfigRecord): A2ATaskState {
  const out: A2ATaskState = {
    taskId: rec.taskId,
    runId: rec.taskId,
    contextId: rec.contextId,
    state: rec.state as TaskState,
    updatedAt: rec.updatedAt,
  };
  if (rec.interruptKind) out.interruptKind = rec.interruptKind;
  if (pushConfig) out.pushConfig = pushConfigRecord(pushConfig);
  return out;
}

const pushConfigRecord = (p: A2APushConfigRecord): A2APushConfigRecord =>
  p.tokenFingerprint === undefined ? { url: p.url } : { url: p.url, tokenFingerprint: p.tokenFingerprint };

// ---------------------------------------------------------------- Task

/** The open interrupt as the engine stores it (InterruptRecord's kind, nodeId and data). */
export interface InterruptView {
  kind: InterruptKind;
  nodeId: string;
  data: Record<string, unknown>;
  /** Quorum votes: an edit vote changes what is decided on (its `artifactHash`). */
  votes?: InterruptVote[];
}

/** The events a Task is built from: its artifacts and its message history. */
export const TASK_EVENT_TYPES: readonly RunEventType[] = ['artifact.created', 'a2a.message'];

export interface ToTaskInput {
  /** The run without its inputs, state and metadata: a Task shows none of them. */
  run: RunHead;
  contextId: string;
  interruptKind?: InterruptKind;
  /** The oldest open interrupt (`metadata.openwop.interrupt`). */
  interrupt?: InterruptView;
  /** Every open interrupt, oldest first, when a forked run may have several (absent: `interrupt` alone). */
  interrupts?: InterruptView[];
  /** When the projected state last changed (the A2ATaskState updatedAt). */
  stateTimestamp: string;
  artifacts: Artifact[];
  history: Message[];
  /** undefined → all history, 0 → none, N → the last N messages. */
  historyLength?: number;
}

export function toTask(input: ToTaskInput): TaskView {
  const { run, contextId } = input;
  const { state } = projectState(run.status, input.interruptKind ?? input.interrupt?.kind);
  // runStatus keeps what the projection loses (drift #1: paused; also cancelling, waiting-external).
  const openwop: Record<string, unknown> = { runId: run.runId, workflowId: run.workflowId, runStatus: run.status };
  const task: TaskView = { id: run.runId, contextId, status: { state, timestamp: input.stateTimestamp } };

  if (state === 'input-required') {
    openwop.interrupt = interruptMetadata(run.status, input.interrupt);
    openwop.interrupts = interruptList(input.interrupts ?? (input.interrupt ? [input.interrupt] : []));
  }
  // The peer task an a2a.invoke node waits on ({agent, peerTaskId, state}), shown by `handoff watch`.
  const on = run.completedAt === undefined ? run.cursor.nodeState?.waitingOn : undefined;
  if (on !== null && typeof on === 'object') openwop.waitingOn = on;
  if (state === 'failed') {
    const error = runError(run);
    openwop.error = error;
    task.status.message = agentMessage(`${run.runId}:status:failed`, run.runId, contextId, error.message);
  }
  if (input.artifacts.length > 0) task.artifacts = input.artifacts;
  const history = sliceHistory(input.history, input.historyLength);
  if (history.length > 0) task.history = history;
  task.metadata = { openwop };
  withActivity(task, run, input.interrupts ?? (input.interrupt ? [input.interrupt] : []));
  return task;
}

function sliceHistory(history: Message[], n: number | undefined): Message[] {
  if (n === undefined) return history;
  return n <= 0 ? [] : history.slice(-n);
}

const runError = (run: RunHead): { code: string; message: string } => ({
  code: run.error?.code ?? 'run_failed',
  message: run.error?.message ?? 'The run failed',
});

/** A status message is an agent Message; its id is derived so repeated reads are identical. */
const agentMessage = (messageId: string, taskId: string, contextId: string, text: string): Message => ({
  messageId,
  role: 'agent',
  taskId,
  contextId,
  parts: [{ kind: 'text', text }],
});

/** `metadata.openwop.interrupts`: every open interrupt, for a reply to name its node. */
function interruptList(all: InterruptView[]): Array<Record<string, unknown>> {
  return all.map((i) => {
    const item: Record<string, unknown> = { nodeId: i.nodeId, kind: i.kind };
    if (typeof i.data.title === 'string') item.title = i.data.title;
    item.artifactHash = artifactHash(i); // §3: what a reply naming this node is bound to
    return item;
  });
}

/** `metadata.openwop.interrupt`: drift #2 disambiguation, plus what the caller needs to answer. */
function interruptMetadata(status: RunStatus, interrupt?: InterruptView): Record<string, unknown> {
  // Only waiting-external lacks a table kind; the metadata carrier is then the only place to say it.
  const kind = STATE_TABLE[status].interruptKind ?? 'external-event';
  const meta: Record<string, unknown> = { kind };
  if (!interrupt) return meta;
  meta.nodeId = interrupt.nodeId;
  if (kind === 'approval') {
    const actions = stringArray(interrupt.data.actions);
    // Gates may list `edit`; the resume wire name is `edit-accept` (docs/protocol/openwop.md#approval).
    if (actions) meta.actions = actions.map(normalizeApprovalAction);
    // What the caller is asked to approve; Task reads are authenticated (pushes stay content-free).
    if (typeof interrupt.data.title === 'string') meta.title = interrupt.data.title;
    if ('artifact' in interrupt.data) meta.artifact = interrupt.data.artifact;
  }
  if (kind === 'clarification' && Array.isArray(interrupt.data.questions)) {
    meta.questions = interrupt.data.questions;
  }
  // The gate's deadline (docs/protocol/openwop.md#deadlines); it moves when the gate escalates.
  if (typeof interrupt.data.expiresAt === 'string') meta.expiresAt = interrupt.data.expiresAt;
  // §3: what the decision is bound to; a reply may send it back as `expectedArtifactHash`.
  if (kind === 'approval' || kind === 'clarification') meta.artifactHash = artifactHash(interrupt);
  return meta;
}

// ---------------------------------------------------------------- events

export interface StatusUpdateOptions {
  interruptKind?: A2AInterruptKind;
  error?: { code: string; message: string };
}

/** Content-free status update (stream events and push bodies): state, kind and error only; never
 * run inputs, outputs or interrupt payloads. Whether it ends a stream is the stream's to say. */
export function toStatusUpdate(
  taskId: string,
  contextId: string,
  state: TaskState,
  timestamp: string,
  opts: StatusUpdateOptions = {},
): StatusUpdate {
  const openwop: Record<string, unknown> = { runId: taskId };
  if (state === 'input-required' && opts.interruptKind) openwop.interrupt = { kind: opts.interruptKind };
  if (state === 'failed' && opts.error) openwop.error = { code: opts.error.code, message: opts.error.message };
  return { taskId, contextId, status: { state, timestamp }, metadata: { openwop } };
}

/**
 * A node started: a `working` update whose agent message names it ("Count the step (3 of 12)").
 * Streams only (pushes stay on the RFC 0100 transitions). The message id derives from the event,
 * so a replay after a Last-Event-ID sends the same message.
 */
export function toProgressUpdate(taskId: string, contextId: string, e: RunEvent, label: string): StatusUpdate {
  const message = agentMessage(`${taskId}:progress:${e.sequence}`, taskId, contextId, label);
  return {
    taskId,
    contextId,
    status: { state: 'working', timestamp: e.timestamp, message },
    metadata: { openwop: { runId: taskId, nodeId: e.nodeId } },
  };
}

export function toArtifactUpdate(
  taskId: string,
  contextId: string,
  artifact: Artifact,
  opts: { append?: boolean; lastChunk?: boolean } = {},
): ArtifactUpdate {
  const ev: ArtifactUpdate = { taskId, contextId, artifact };
  if (opts.append !== undefined) ev.append = opts.append;
  if (opts.lastChunk !== undefined) ev.lastChunk = opts.lastChunk;
  return ev;
}

/** An `artifact.created` run event → A2A Artifact; undefined for any other event. A bare value
 * is wrapped as `{value}`: an artifact's data is an object in every version (0.3 requires it, and
 * 1.0 clients have always read it so). */
export function artifactFromEvent(event: RunEvent): Artifact | undefined {
  if (event.type !== 'artifact.created') return undefined;
  const { artifactId, name, data } = event.payload;
  if (typeof artifactId !== 'string' || artifactId === '') return undefined;
  const artifact: Artifact = {
    artifactId,
    parts: [{ kind: 'data', data: isPlainObject(data) ? data : { value: data ?? null } }],
  };
  if (typeof name === 'string') artifact.name = name;
  return artifact;
}

/** The task's artifacts from its event log: the latest version of each, in first-seen order. */
export function collectArtifacts(events: Iterable<RunEvent>): Artifact[] {
  const byId = new Map<string, Artifact>();
  for (const ev of events) {
    const a = artifactFromEvent(ev);
    if (a) byId.set(a.artifactId, a);
  }
  return [...byId.values()];
}
