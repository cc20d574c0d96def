// The run-facing A2A work over the engine: start or resume a task by message, wait, and build the
// Task, all in the neutral model (model.ts); the bindings encode it for their version. Every answer is built from the store by the one
// projection (projection.ts), so tasks/get after a restart says exactly what a live call said.
import type { ChangeBus } from '../bus/bus.js';
import type { Caller, Engine } from '../engine/engine.js';
import { isForked } from '../engine/branches.js';
import { EngineError } from '../engine/errors.js';
import {
  type InterruptRecord,
  type NewEvent,
  type RunEvent,
  type RunEventType,
  type RunHead,
  type RunRecord,
  type TaskRecord,
  isWaiting,
} from '../store/model.js';
import { newContextId } from '../engine/ids.js';
import { spread } from '../engine/spread.js';
import { isTerminal } from '../store/model.js';
import {
  A2AError,
  invalidParams,
  pushNotSupported,
  pushUrlRefused,
  taskNotFound,
  unsupportedOperation,
} from './errors.js';
import {
  collectArtifacts,
  isFinalForMessageStream,
  projectState,
  TASK_EVENT_TYPES,
  type ToTaskInput,
  toTask,
} from './projection.js';
import { expectedHashOf, namedNode, parseResumeMessage, partsToInputs } from './messages.js';
import { contextIdOf } from './task-records.js';
import { putConfig } from '../push/configs.js';
import { checkPushUrl, type EgressPolicy } from '../egress/address.js';
import type { Vault } from '../push/vault.js';
import type { StoreTx } from '../store/store.js';
import type { ProtocolVersion } from './versions.js';
import type { Message, Part, PushConfigInput, SendRequest, TaskView } from './model.js';

/** Push support: absent means every push method answers -32003. */
export interface PushSupport {
  vault: Vault;
  policy: EgressPolicy;
  /** HANDOFF_PUSH_MAX_CONFIGS_PER_TASK: one more is -32602. */
  maxConfigsPerTask: number;
}

export interface A2AServiceOptions {
  defaultSkill: string;
  push?: PushSupport;
  /** Skills exposed over A2A (workflow ids). */
  skills: () => string[];
  /** How long a blocking message/send waits before returning the current Task. */
  blockingTimeoutMs?: number;
}

export class A2AService {
  constructor(
    readonly engine: Engine,
    private readonly bus: ChangeBus,
    private readonly opts: A2AServiceOptions,
  ) {}

  /** message/send: start or resume, then (blocking) wait until the caller must act or the end.
   * `version`: the request's, in which an inline push config is registered. */
  async send(caller: Caller, p: SendRequest, version: ProtocolVersion): Promise<TaskView> {
    const { run, created, open, known, appended } = await this.startOrResume(caller, p, version);
    const settled = p.configuration.blocking ? await this.waitSettled(caller, run) : run;
    const historyLength = p.configuration.historyLength;
    // A task this request created and settled in its own transaction: its whole log is known, and
    // so is the interrupt it waits at, if any.
    if (created && settled === run) return this.taskFromLog(run, created, open, historyLength);
    // A reply's transaction left the run and its record as they are, and appended the newest
    // events: only the log before them is read.
    if (settled !== run) return this.task(caller, settled.runId, historyLength, settled);
    return this.task(caller, settled.runId, historyLength, settled, known, appended);
  }

  /**
   * Start a task, or resume one with a reply. `before` is the last event sequence that preceded
   * this message's effects (-1 for a new task), where a stream of this turn begins.
   */
  async startOrResume(
    caller: Caller,
    p: SendRequest,
    version: ProtocolVersion,
  ): Promise<Started & { known?: TaskRecord; appended?: RunEvent[] }> {
    const inline = p.configuration.pushConfig;
    if (inline) this.checkPush(inline.url, version);
    const register = inline ? this.registerInline(caller, inline, version) : undefined;
    // A reply may register a config too, in the transaction that applies it (a refused reply
    // registers nothing); it applies from this message's transitions on.
    if (p.message.taskId) return this.resume(caller, p.message, register);
    return this.start(caller, p, register);
  }

  /**
   * `created`: the new run's whole committed log, when this call created and ran it inline (and
   * `open`, the interrupt it waits at).
   * A retried message (same principal and messageId) is answered with the task it started; that
   * task is looked up only when this start fails (the task record's messageId is a unique key).
   */
  private async start(caller: Caller, p: SendRequest, register?: Registration): Promise<Started> {
    const msg = p.message;
    const prior = async () => {
      const rec = await this.engine.store.tasks.findByMessage(caller.tenantId, caller.principalId, msg.messageId);
      return rec && { run: await this.engine.getRun(caller, rec.taskId), before: -1 };
    };
    try {
      return await this.startNew(caller, p, register);
    } catch (err) {
      // Started before (a retry), or a parallel copy won the race: that task is the answer.
      const again = await prior();
      if (again) return again;
      if (err instanceof EngineError && err.code === 'validation_error') throw invalidParams(err.message, err.details);
      throw err;
    }
  }

  private async startNew(caller: Caller, p: SendRequest, register?: Registration): Promise<Started> {
    const msg = p.message;
    const skill = skillOf(msg, p) ?? this.opts.defaultSkill;
    if (!this.opts.skills().includes(skill)) {
      throw invalidParams(`unknown skill '${skill}'; available: ${this.opts.skills().join(', ')}`, {
        skills: this.opts.skills(),
      });
    }
    const contextId = msg.contextId;
    const { inputs } = partsToInputs(msg.parts);
    let attempt = 0;
    const { run, events, open } = await this.engine.startRun(caller, {
      workflowId: skill,
      inputs,
      tags: contextId ? [`a2a:${msg.messageId}`, `a2a:${contextId}`] : [`a2a:${msg.messageId}`],
      // A2A content crosses a trust boundary into the run (docs/protocol/openwop.md#trust-boundary). The task's
      // contextId is the caller's, else made here (the task record keeps the same one).
      metadata: {
        a2a: { messageId: msg.messageId, contextId: contextId ?? newContextId() },
        contentTrust: 'untrusted',
      },
      events: [messageEvent(msg)],
      onCreated: async (tx, created) => {
        // A retried transaction (a conflict: perhaps a copy of this message started a task
        // first) looks for that task before running anything again.
        if (attempt++ > 0 && (await tx.tasks.findByMessage(caller.tenantId, caller.principalId, msg.messageId))) {
          throw invalidParams(`message ${msg.messageId} already started a task`);
        }
        await register?.(tx, created);
      },
    });
    // Assigned, not spread in: a conditional spread takes V8's slow path on every send.
    const started: Started = { run, before: -1 };
    if (events) {
      started.created = events;
      if (open) started.open = open;
    }
    return started;
  }

  /**
   * A message into an existing task resolves its open interrupt (same path as REST). The task,
   * its run and the open interrupt are read in the resolving transaction, in one statement; a
   * copy of an applied reply is found only when this one fails (its a2a_messages row is the
   * unique key, so a concurrent copy fails its transaction).
   */
  private async resume(
    caller: Caller,
    msg: Message,
    onAccepted?: Registration,
  ): Promise<{ run: RunRecord; before: number; known?: TaskRecord; appended?: RunEvent[] }> {
    const taskId = msg.taskId as string;
    // Set once the task is found and the context matches: a failure after that may be because
    // this very reply was applied already (then it is answered like a retry).
    let mayBeApplied = false;
    let before = -1;
    let rec: TaskRecord | undefined;
    let attempt = 0;
    try {
      const result = await this.engine.resolveRead(
        caller,
        async (tx) => {
          const found = await tx.tasks.getForReply(taskId, caller.tenantId);
          if (!found) throw taskNotFound(taskId);
          if (msg.contextId !== undefined && msg.contextId !== found.rec.contextId) {
            throw invalidParams(`message.contextId does not match task ${taskId}`);
          }
          mayBeApplied = true;
          // A retried transaction (a conflict: perhaps a copy of this reply committed first)
          // looks for the copy before resolving anything again.
          if (attempt++ > 0 && (await tx.tasks.findReply(caller.tenantId, caller.principalId, msg.messageId))) {
            throw unsupportedOperation(`message ${msg.messageId} was already applied`);
          }
          const { run } = found;
          ({ rec } = found);
          before = run.nextSeq - 1;
          if (isTerminal(run.status))
            throw unsupportedOperation(
              `task ${taskId} is ${projectState(run.status).state}; send a new message to start a new task`,
            );
          const open = await this.interruptNamed(tx, run, found.open, msg);
          if (!open) throw unsupportedOperation(`task ${taskId} is not waiting for input`);
          const parsed = parseResumeMessage(msg.parts, msg.metadata, open.kind);
          if (parsed.kind === 'invalid') throw invalidParams(parsed.reason);
          const value = parsed.kind === 'ask' ? { action: 'ask', question: parsed.question } : parsed.value;
          const read = { run, interrupt: open, resumeValue: value, events: [messageEvent(msg, caller.principalId)] };
          // §3: a reply bound to the artifact it saw (data part or metadata.openwop `expectedArtifactHash`).
          const expectedArtifactHash = expectedHashOf(msg.parts, msg.metadata);
          return expectedArtifactHash === undefined ? read : { ...read, expectedArtifactHash };
        },
        onAccepted,
        (tx) => tx.tasks.stateSet(taskId)?.updatedAt,
      );
      // The record as this transaction left it: its state time moved only if its state did.
      const resumed: { run: RunRecord; before: number; known?: TaskRecord; appended?: RunEvent[] } = {
        run: result.run,
        before,
        appended: result.appended,
      };
      if (rec) resumed.known = spread(rec, { updatedAt: result.settled ?? rec.updatedAt });
      return resumed;
    } catch (err) {
      // A copy of this reply applied first (earlier, or by a parallel request): answer like a retry.
      if (mayBeApplied && (await this.replyApplied(caller, msg.messageId, taskId))) {
        const run = await this.engine.getRun(caller, taskId);
        return { run, before: await this.replyCursor(taskId, msg.messageId, before < 0 ? run.nextSeq - 1 : before) };
      }
      throw engineToA2A(err, taskId);
    }
  }

  /**
   * The open interrupt a reply answers: the one at the node it names (a data part's `nodeId`, or
   * `metadata.openwop.nodeId`), else the only one open. Several open and none named, or a node
   * with none open, is -32602 listing the open nodes; nothing changes.
   */
  private async interruptNamed(
    tx: StoreTx,
    run: RunRecord,
    joined: InterruptRecord | undefined,
    msg: Message,
  ): Promise<InterruptRecord | undefined> {
    const named = namedNode(msg.parts, msg.metadata);
    if (named === undefined && !isForked(run.cursor)) return joined;
    const opens = isForked(run.cursor) ? await tx.interrupts.listOpen(run.runId) : joined ? [joined] : [];
    if (opens.length === 0) return undefined;
    const nodes = opens.map((i) => i.nodeId);
    if (named === undefined) {
      if (opens.length === 1) return opens[0];
      throw invalidParams(
        `task ${run.runId} waits at several nodes (${nodes.join(', ')}): name one with a data part {"nodeId": …} or metadata openwop.nodeId`,
        { openNodeIds: nodes },
      );
    }
    const at = opens.find((i) => i.nodeId === named);
    if (!at) {
      throw invalidParams(`task ${run.runId} has no open interrupt at node '${named}'; open: ${nodes.join(', ')}`, {
        openNodeIds: nodes,
      });
    }
    return at;
  }

  private async replyCursor(runId: string, messageId: string, fallback: number): Promise<number> {
    const replies = await this.engine.store.events.listOfTypes(runId, ['a2a.message']);
    const original = replies.find(
      (e) => (e.payload.message as Message | undefined)?.messageId === messageId && e.payload.principalId !== undefined,
    );
    return original ? original.sequence - 1 : fallback;
  }

  /** True if this reply was already applied to `taskId`; a messageId reused for another task is refused. */
  private async replyApplied(caller: Caller, messageId: string, taskId: string): Promise<boolean> {
    const appliedTo = await this.engine.store.tasks.findReply(caller.tenantId, caller.principalId, messageId);
    if (appliedTo !== undefined && appliedTo !== taskId) {
      throw invalidParams(`messageId '${messageId}' was already used for a reply to another task`);
    }
    return appliedTo === taskId;
  }

  // ------------------------------------------------------------------ push notification configs

  private pushSupport(): PushSupport {
    if (!this.opts.push) throw pushNotSupported();
    return this.opts.push;
  }

  /** The egress guard's registration arm: before anything is looked up or written. */
  private checkPush(url: string, version: ProtocolVersion = '0.3'): void {
    const verdict = checkPushUrl(url, this.pushSupport().policy);
    if (!verdict.ok) throw pushUrlRefused(verdict, version, true);
  }

  /** An inline config is registered in the version of the request that carried it. */
  private registerInline(caller: Caller, config: PushConfigInput, protocolVersion: ProtocolVersion): Registration {
    const { vault, maxConfigsPerTask } = this.pushSupport();
    return async (tx: StoreTx, run: RunRecord) => {
      const input = spread(config, { protocolVersion });
      await putConfig(tx, vault, run.runId, caller.tenantId, input, maxConfigsPerTask, caller);
    };
  }

  private async taskAndRun(caller: Caller, taskId: string): Promise<{ rec: TaskRecord; run: RunRecord }> {
    const found = await this.engine.store.tasks.getWithRun(taskId, caller.tenantId);
    if (!found) throw taskNotFound(taskId);
    return found;
  }

  /** The task record as `caller` may see it; another tenant's task is -32001, like an unknown one. */
  async visibleTask(caller: Caller, taskId: string): Promise<TaskRecord> {
    const rec = await this.engine.store.tasks.get(taskId, caller.tenantId);
    if (!rec) throw taskNotFound(taskId);
    return rec;
  }

  /**
   * Build the live Task from the store. `run` (and its task record) may be passed when the
   * caller has just read or committed them (a committed run is what the store holds), and with
   * them the events that commit appended (`appended`, up to the run's `nextSeq`); everything else
   * is read here.
   */
  async task(
    caller: Caller,
    taskId: string,
    historyLength?: number,
    known?: RunRecord,
    knownRec?: TaskRecord,
    appended?: RunEvent[],
  ): Promise<TaskView> {
    const { rec, run } = known
      ? { rec: knownRec ?? (await this.visibleTask(caller, taskId)), run: known }
      : await this.taskAndRun(caller, taskId);
    const waiting = isWaiting(run.status);
    // A forked run may wait at several nodes at once; an unforked one at one at most.
    const opens = !waiting
      ? []
      : isForked(run.cursor)
        ? await this.engine.store.interrupts.listOpen(run.runId)
        : [await this.engine.store.interrupts.getOpen(run.runId)].filter((i) => i !== undefined);
    // One row per commit (event_batches): the log of a task is a few rows, read after its commit.
    const first = appended?.[0];
    const events = first
      ? [
          ...(await this.engine.store.events.listOfTypes(run.runId, TASK_EVENT_TYPES, first.sequence)),
          ...(appended as RunEvent[]).filter((e) => TASK_EVENT_TYPES.includes(e.type)),
        ]
      : await this.engine.store.events.listOfTypes(run.runId, TASK_EVENT_TYPES);
    const input = taskInput(run, rec.contextId, rec.updatedAt, events, opens[0], historyLength);
    if (opens.length > 1) input.interrupts = opens.map(interruptView);
    return toTask(input);
  }

  /**
   * A Task as ListTasks shows it, from its record and run read with the page: the log is read only
   * for what the request asks for — history (`historyLength` > 0) and artifacts — and never the
   * run's inputs or state.
   */
  async listedTask(
    rec: TaskRecord,
    run: RunHead,
    open: InterruptRecord | undefined,
    ask: { historyLength: number; artifacts: boolean },
  ): Promise<TaskView> {
    const types: RunEventType[] = [];
    if (ask.artifacts) types.push('artifact.created');
    if (ask.historyLength > 0) types.push('a2a.message');
    const events = await this.engine.store.events.listOfTypes(run.runId, types);
    return toTask(taskInput(run, rec.contextId, rec.updatedAt, events, open, ask.historyLength));
  }

  /**
   * The Task of a run created by this request, from the snapshot and log its transaction
   * committed: the same projection as `task()`, without reading back what was just written.
   * Its record's context is the one in the run's metadata and its state time the run's update, and
   * its open interrupt the one that transaction opened (`open`).
   */
  private taskFromLog(run: RunRecord, log: RunEvent[], open?: InterruptRecord, historyLength?: number): TaskView {
    return toTask(taskInput(run, contextIdOf(run), run.updatedAt, log, open, historyLength));
  }

  /** Blocking send returns at a terminal state or when the caller must act (input-required). */
  private waitSettled(caller: Caller, run: RunRecord): Promise<RunRecord> {
    return this.waitFor(caller, run.runId, (r) => isFinalForMessageStream(projectState(r.status).state), run);
  }

  /**
   * Subscribe first, then read, so a commit in between cannot be missed; bounded by a timeout.
   * `known` is a committed snapshot the caller already holds: when it satisfies `done` there is
   * nothing to wait for and nothing to read.
   */
  async waitFor(caller: Caller, runId: string, done: (r: RunRecord) => boolean, known?: RunRecord): Promise<RunRecord> {
    if (known && done(known)) return known;
    const deadline = Date.now() + (this.opts.blockingTimeoutMs ?? 60_000);
    let wake: () => void = () => {};
    const unsubscribe = this.bus.subscribeRun(runId, () => wake());
    try {
      for (;;) {
        const woken = new Promise<void>((r) => (wake = r));
        const run = await this.engine.getRun(caller, runId);
        const left = deadline - Date.now();
        if (done(run) || left <= 0) return run;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([woken, new Promise<void>((r) => (timer = setTimeout(r, left)))]);
        clearTimeout(timer);
      }
    } finally {
      unsubscribe();
    }
  }
}

/** What registers a request's inline push config, in the transaction that starts or resumes its task. */
type Registration = (tx: StoreTx, run: RunRecord) => Promise<void>;

/** A task this message started (`before` -1; `created` and `open` as `start` documents them). */
interface Started {
  run: RunRecord;
  before: number;
  created?: RunEvent[];
  open?: InterruptRecord;
}

/**
 * What the projection builds a Task from: the run, its record's context and state time, its
 * artifacts and message history from `events`, and its open interrupt. Optional fields are
 * assigned, not spread in (a conditional spread takes V8's slow path, on every send and get).
 */
function taskInput(
  run: RunHead,
  contextId: string,
  stateTimestamp: string,
  events: RunEvent[],
  open: InterruptRecord | undefined,
  historyLength: number | undefined,
): ToTaskInput {
  const artifactEvents: RunEvent[] = [];
  const history: Message[] = [];
  for (const e of events) {
    if (e.type === 'artifact.created') artifactEvents.push(e);
    else if (e.type === 'a2a.message') history.push(e.payload.message as Message);
  }
  const input: ToTaskInput = { run, contextId, stateTimestamp, artifacts: collectArtifacts(artifactEvents), history };
  if (historyLength !== undefined) input.historyLength = historyLength;
  if (open) input.interrupt = interruptView(open);
  return input;
}

const interruptView = (i: InterruptRecord) => ({ kind: i.kind, nodeId: i.nodeId, data: i.data, votes: i.votes });

function skillOf(msg: Message, p: SendRequest): string | undefined {
  const fromMsg = msg.metadata?.skillId;
  const fromParams = p.metadata?.skillId;
  const s = typeof fromMsg === 'string' ? fromMsg : typeof fromParams === 'string' ? fromParams : undefined;
  return s;
}

/** The caller's message, kept in the run's event log as task history, in the neutral form
 * (content stays internal). */
function messageEvent(msg: Message, replyFrom?: string): NewEvent {
  const message = msg.parts.some(hasBytes) ? spread(msg, { parts: msg.parts.map(withoutBytes) }) : msg;
  return { type: 'a2a.message', payload: replyFrom ? { message, principalId: replyFrom } : { message } };
}

const hasBytes = (part: Part): boolean => part.kind === 'file' && part.bytes !== undefined;

/** Inline file bytes never enter the event log: keep the reference (name, type, size) only. */
function withoutBytes(part: Part): Part {
  if (part.kind !== 'file' || part.bytes === undefined) return part;
  const { bytes, ...rest } = part;
  return { ...rest, uri: `omitted:${Buffer.byteLength(bytes, 'base64')}-bytes` };
}

function engineToA2A(err: unknown, taskId: string): unknown {
  if (!(err instanceof EngineError)) return err;
  switch (err.code) {
    case 'not_found':
      return taskNotFound(taskId);
    case 'validation_error':
    case 'correlation_mismatch':
    case 'forbidden':
      return invalidParams(err.message, err.details);
    case 'interrupt_already_resolved':
    case 'interrupt_cancelled':
    case 'interrupt_gone':
    case 'interrupt_withdrawn':
    case 'interrupt_not_found':
    case 'run_terminal':
      return unsupportedOperation(err.message);
    case 'artifact_changed': {
      // The code in every form: the message, 0.3's `data`, 1.0's ErrorInfo metadata.
      const details = { error: 'artifact_changed', ...(err.details as Record<string, string>) };
      return new A2AError('unsupported-operation', `artifact_changed: ${err.message}`, details, details);
    }
    default:
      return err;
  }
}
