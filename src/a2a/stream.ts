// A2A streams over the durable event log: message/stream and tasks/resubscribe. Each run event
// that changes what an A2A client sees becomes a status-update or artifact-update whose SSE id is
// the event's sequence, so a client can re-attach after any id and miss nothing. A node's
// `node.started` becomes a `working` update whose message names the node (progress), unless the
// workflow sets `settings.a2aProgress: false`; pushes never carry it (they follow the task record).
import type { ChangeBus } from '../bus/bus.js';
import type { Caller, Engine } from '../engine/engine.js';
import { isForked } from '../engine/branches.js';
import { followRun } from '../engine/follow.js';
import { isTerminal, isWaiting, type RunEvent } from '../store/model.js';
import type { WorkflowDefinition } from '../engine/workflow/definition.js';
import {
  artifactFromEvent,
  isTerminalState,
  projectState,
  stateAfterEvent,
  toArtifactUpdate,
  toProgressUpdate,
  toStatusUpdate,
} from './projection.js';
import { activityUpdate } from './activity.js';
import type { A2AService } from './service.js';
import type { WireCodec } from './codec/codec.js';
import { unsupportedOperation } from './errors.js';
import type { SendRequest, StreamEvent, TaskState, TaskView } from './model.js';
import type { ProtocolVersion } from './versions.js';

/** `message`: the turn ends at input-required too; `observe` (resubscribe) only at a terminal state. */
export type StreamMode = 'message' | 'observe';

export interface StreamItem {
  /** The run event sequence: the SSE id a client resumes after. */
  id?: number;
  /** A Task (the first item), a status update or an artifact update, in the neutral model. */
  event: StreamEvent;
  /** The last item of the stream (0.3 writes it as a status update's `final`). */
  final: boolean;
}

const taskItem = (task: TaskView, id?: number): StreamItem =>
  id === undefined
    ? { event: { kind: 'task', task }, final: false }
    : { id, event: { kind: 'task', task }, final: false };

export interface OpenedStream {
  taskId: string;
  contextId: string;
  /** Sent first (a Task), if any. */
  first?: StreamItem;
  /** Follow the log after this sequence. */
  after: number;
  mode: StreamMode;
  /** The state the client last saw, so repeats are not sent. */
  state?: TaskState;
  /** Node id → what a progress update says when it starts; absent when the workflow turns it off. */
  progress?: ReadonlyMap<string, string>;
  /**
   * A reply's message/stream into a forked run that still waits on a person elsewhere: the last
   * sequence of the reply's own commit. Past it, the turn is over although the state did not
   * change (input-required before and after): the stream ends there with a final update.
   */
  turnEndsAt?: number;
}

const labelsByDef = new WeakMap<WorkflowDefinition, ReadonlyMap<string, string> | undefined>();

/**
 * What each node's progress update says: its name (its id if unnamed) and its place in the
 * workflow's node list, "Count the step (3 of 4)". Undefined when `settings.a2aProgress` is false.
 * Definitions are immutable once loaded, so the labels are built once per definition.
 */
export function progressLabels(def: WorkflowDefinition | undefined): ReadonlyMap<string, string> | undefined {
  if (!def || def.settings.a2aProgress === false) return undefined;
  if (labelsByDef.has(def)) return labelsByDef.get(def);
  const total = def.nodes.length;
  const labels = new Map(def.nodes.map((n, i) => [n.id, `${n.name.trim() || n.id} (${i + 1} of ${total})`] as const));
  labelsByDef.set(def, labels);
  return labels;
}

export class A2AStreams {
  constructor(
    private readonly engine: Engine,
    private readonly bus: ChangeBus,
    private readonly service: A2AService,
  ) {}

  /** message/stream: start or resume like message/send (errors surface before any SSE byte). */
  async openMessage(caller: Caller, req: SendRequest, version: ProtocolVersion): Promise<OpenedStream> {
    const { run, before } = await this.service.startOrResume(caller, req, version);
    const task = await this.service.task(caller, run.runId, req.configuration.historyLength);
    // The first Task shows the state before this message's effects; the log replays the rest.
    const state: TaskState = before === -1 ? 'submitted' : 'input-required';
    const first: TaskView = {
      ...task,
      status: { state, timestamp: before === -1 ? run.createdAt : task.status.timestamp },
    };
    if (before === -1) delete first.artifacts;
    const opened: OpenedStream = {
      taskId: run.runId,
      contextId: task.contextId,
      first: taskItem(first),
      after: before,
      mode: 'message',
      state,
      ...this.progressOf(run.workflowId),
    };
    if (before !== -1 && isForked(run.cursor) && isWaiting(run.status)) opened.turnEndsAt = run.nextSeq - 1;
    return opened;
  }

  /**
   * tasks/resubscribe, SubscribeToTask: read-only. Without a cursor the current Task first; with
   * one, the backlog. `terminalRefused` (1.0): a finished task is UnsupportedOperationError instead
   * of a lone snapshot.
   */
  async openObserver(
    caller: Caller,
    taskId: string,
    lastEventId?: number,
    terminalRefused = false,
  ): Promise<OpenedStream> {
    await this.service.visibleTask(caller, taskId);
    // Read the run (its last sequence) before building the Task: the Task may then be newer
    // than the cursor, never older, and a repeated state is not sent twice.
    const run = await this.engine.getRun(caller, taskId);
    const task = await this.service.task(caller, taskId);
    if (lastEventId !== undefined) {
      return {
        taskId,
        contextId: task.contextId,
        after: lastEventId,
        mode: 'observe',
        ...this.progressOf(run.workflowId),
      };
    }
    const opened: OpenedStream = {
      taskId,
      contextId: task.contextId,
      first: taskItem(task, run.nextSeq - 1),
      after: run.nextSeq - 1,
      mode: 'observe',
      state: task.status.state,
      ...this.progressOf(run.workflowId),
    };
    // A terminal task: the snapshot is all there is.
    if (isTerminal(run.status)) {
      if (terminalRefused)
        throw unsupportedOperation(`task ${taskId} is ${task.status.state}: nothing to subscribe to`);
      opened.after = Number.MAX_SAFE_INTEGER;
    }
    return opened;
  }

  /**
   * A branch of a forked run resuming or starting a node (`payload.branch`) while the task shows
   * input-required: the task stays input-required if the run still waits on a person at another
   * branch (what tasks/get says). The run as it is now decides: later than `e` at worst, which
   * only ever skips a `working` that had already ended.
   */
  private async stillWaiting(taskId: string, state: TaskState | undefined, e: RunEvent): Promise<boolean> {
    if (state !== 'input-required' || typeof e.payload.branch !== 'string') return false;
    const run = await this.engine.store.runs.get(taskId);
    return run !== undefined && isWaiting(run.status);
  }

  /** The final input-required update of a reply's turn, with the kind the run now waits on. */
  private async turnOver(opened: OpenedStream, e: RunEvent): Promise<StreamItem> {
    const run = await this.engine.store.runs.get(opened.taskId);
    const kind = run ? projectState(run.status).interruptKind : undefined;
    const update = toStatusUpdate(opened.taskId, opened.contextId, 'input-required', e.timestamp, {
      ...(kind ? { interruptKind: kind } : {}),
    });
    return { id: e.sequence, event: { kind: 'status-update', update }, final: true };
  }

  private progressOf(workflowId: string): Pick<OpenedStream, 'progress'> {
    const progress = progressLabels(this.engine.workflows.get(workflowId));
    return progress ? { progress } : {};
  }

  /** The updates after `opened.after`, ending with the `final: true` update of the stream's mode. */
  async *updates(opened: OpenedStream, signal: AbortSignal): AsyncGenerator<StreamItem> {
    if (opened.after === Number.MAX_SAFE_INTEGER) return;
    let state = opened.state;
    for await (const e of followRun(this.engine.store, this.bus, opened.taskId, { after: opened.after, signal })) {
      const art = e.type === 'artifact.created' ? artifactFromEvent(e) : undefined;
      if (art) {
        const update = toArtifactUpdate(opened.taskId, opened.contextId, art, { lastChunk: true });
        yield { id: e.sequence, event: { kind: 'artifact-update', update }, final: false };
        continue;
      }
      const activity = state === 'working' ? activityUpdate(opened.taskId, opened.contextId, e) : undefined;
      if (activity) {
        yield { id: e.sequence, event: { kind: 'status-update', update: activity }, final: false };
        continue;
      }
      const label = e.type === 'node.started' && e.nodeId !== undefined ? opened.progress?.get(e.nodeId) : undefined;
      const next = label === undefined ? stateAfterEvent(e) : undefined;
      if ((label !== undefined || next?.state === 'working') && (await this.stillWaiting(opened.taskId, state, e))) {
        continue;
      }
      if (label !== undefined) {
        // A node starts in a running run (or in a branch of one no branch of which waits on a
        // person, above): the task is working, whatever it showed before.
        state = 'working';
        const update = toProgressUpdate(opened.taskId, opened.contextId, e, label);
        yield { id: e.sequence, event: { kind: 'status-update', update }, final: false };
        continue;
      }
      if (opened.turnEndsAt !== undefined && e.sequence >= opened.turnEndsAt && state === 'input-required') {
        // A reply to one of several open interrupts: the others still wait, so does the task.
        yield await this.turnOver(opened, e);
        return;
      }
      if (!next || next.state === state) continue;
      state = next.state;
      const final = isTerminalState(next.state) || (opened.mode === 'message' && next.state === 'input-required');
      const update = toStatusUpdate(opened.taskId, opened.contextId, next.state, e.timestamp, {
        ...(next.interruptKind ? { interruptKind: next.interruptKind } : {}),
        ...(next.error ? { error: next.error } : {}),
      });
      yield { id: e.sequence, event: { kind: 'status-update', update }, final };
      if (final) return;
    }
  }
}

/**
 * The first Task of a stream when the whole Task is larger than a stream may buffer
 * (HANDOFF_SSE_MAX_BUFFER): no history, no artifacts, and of the interrupt only what names it
 * (the artifact to approve and the questions can be large); `metadata.openwop.truncated` says so
 * and points to tasks/get, which returns it whole. The status is kept: it is what streams are about.
 */
export function trimmedTask(task: TaskView): TaskView {
  const openwop = { ...((task.metadata?.openwop ?? {}) as Record<string, unknown>) };
  const interrupt = openwop.interrupt as Record<string, unknown> | undefined;
  if (interrupt) openwop.interrupt = { kind: interrupt.kind, nodeId: interrupt.nodeId, actions: interrupt.actions };
  openwop.truncated = true;
  openwop.hint = `This Task is too large for a stream (HANDOFF_SSE_MAX_BUFFER); read it whole with tasks/get, id "${task.id}"`;
  return { id: task.id, contextId: task.contextId, status: task.status, metadata: { openwop } };
}

/** A stream item on `codec`'s wire: the one conversion an item makes. */
export const encodeItem = (codec: WireCodec, item: StreamItem): unknown =>
  codec.encodeStreamEvent(item.event, item.final);

/** The item to send in place of a first Task too large for the stream (`trimmedTask`). */
export function trimmedItem(item: StreamItem): StreamItem {
  return item.event.kind === 'task' ? { ...item, event: { kind: 'task', task: trimmedTask(item.event.task) } } : item;
}
