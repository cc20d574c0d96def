// One step of a run: execute the node at the cursor, then commit what it did.
//
// Two ways in, one commit path:
// - `workerStep` (the worker): the node executes OUTSIDE any transaction — it may call another
//   host and take seconds — and its result is committed afterwards in a short transaction fenced
//   by the worker's lease and the run's version. A crash between the two re-executes the node
//   with the same idempotency key (`runId:nodeId:ordinal`); a committed completion never repeats.
// - `inlineStep` (a request): the instantaneous prefix of a run (inline node types only: no I/O)
//   executes inside the very transaction that created or resumed it, so a request that needs no
//   waiting commits once.
import type { RetryRecord } from './activity.js';
import {
  type InterruptKind,
  isTerminal,
  type NewEvent,
  type RunEventType,
  type RunRecord,
  type RunStatus,
  statusOfInterrupt,
} from '../store/model.js';

/** The kind's own event beside the neutral `interrupt.requested`. */
const REQUESTED_EVENT: Record<InterruptKind, RunEventType> = {
  approval: 'approval.requested',
  clarification: 'clarification.requested',
  'external-event': 'external-event.requested',
};
import type { Store, StoreTx } from '../store/store.js';
import { cancelNow } from './cancel.js';
import { type Clock, iso } from './clock.js';
import { isExpiryDue } from './deadlines.js';
import { newInterruptId } from './ids.js';
import { NODE_TYPES } from './nodes/index.js';
import type { NodeServices } from './nodes/services.js';
import type { NodeContext, NodeResult, NodeType } from './nodes/types.js';
import { expireGate } from './resolution.js';
import { scrubbed } from './scrub.js';
import { described } from './nodes/view.js';
import { spread } from './spread.js';
import {
  type Completion,
  commitTransition,
  completeNode,
  failAt,
  failureRoute,
  findNode,
  noLease,
  scopeOf,
  type Transition,
} from './transitions.js';
import {
  DEFAULT_MAX_BRANCHES,
  dueLines,
  forkedStatus,
  forkedWakeAt,
  isForked,
  type Line,
  lineById,
  linesOf,
  placed,
  stamped,
} from './branches.js';
import type { WorkflowDefinition, WorkflowNode } from './workflow/definition.js';
import {
  failSpanWith,
  inSpan,
  linksToActive,
  type Span,
  type SpanOptions,
  runTraceParent,
  tracingEnabled,
} from '../telemetry/tracing.js';

export interface StepContext {
  clock: Clock;
  /** Counts node executions by type and outcome. */
  onExecuted?: (typeId: string, outcome: string) => void;
  /** A node that reaches out failed an attempt (a retry is scheduled when `nextAttemptAt` is set). */
  onAttemptFailed?: (attempt: FailedAttempt) => void;
  /** Require that this worker still holds the run's lease (fencing). */
  fence?: { owner: string };
  /** Handed to every node executed (see NodeServices). */
  services?: NodeServices;
  /** Branches one run may have live at once (HANDOFF_MAX_BRANCHES; default 64). */
  maxBranches?: number;
  /** The executors by typeId (default: NODE_TYPES); tests lend a node that counts or blocks. */
  nodeTypes?: ReadonlyMap<string, NodeType<any>>;
}

/** What the log says of a failed attempt: where, which error (redacted), and the next try if any. */
export interface FailedAttempt {
  runId: string;
  nodeId: string;
  typeId: string;
  code: string;
  message: string;
  attempt?: number;
  nextAttemptAt?: string;
}

export type StepOutcome =
  /** Committed; the run wants another step now. */
  | { kind: 'continue'; run: RunRecord }
  /** Committed (or nothing to do); the run sleeps, waits for a human, or has ended. */
  | { kind: 'settled'; run: RunRecord }
  /** Nothing committed: the run is not runnable now (timer not due, suspended, terminal). */
  | { kind: 'idle'; run: RunRecord };

/** What a step of `run` is, decided from its snapshot alone. */
type Plan = { kind: 'cancel' } | { kind: 'idle' } | { kind: 'expire' } | { kind: 'execute'; prefix: NewEvent[] };

function plan(run: RunRecord, now: number, line: Line | undefined): Plan {
  if (run.status === 'cancelling') return { kind: 'cancel' };
  if (isForked(run.cursor)) return planLine(run, now, line);
  // A gate's deadline passed with no decision (deadlines.ts).
  if (isExpiryDue(run, now)) return { kind: 'expire' };
  if (run.status !== 'pending' && run.status !== 'running') return { kind: 'idle' };
  if (run.wakeAt !== undefined && run.wakeAt > now) return { kind: 'idle' };
  // A pending run starts in the same commit as its first step.
  const prefix: NewEvent[] =
    run.status === 'pending' ? [{ type: 'run.started', payload: { workflowId: run.workflowId } }] : [];
  return { kind: 'execute', prefix };
}

/** A branch of a forked run: due to execute, due to expire, or not due (the run's status is the
 * whole run's: waiting on a person while any branch does). */
function planLine(run: RunRecord, now: number, line: Line | undefined): Plan {
  const due = line && dueLines(run, now).find((d) => d.line.id === line.id);
  return due ? (due.kind === 'expire' ? { kind: 'expire' } : { kind: 'execute', prefix: [] }) : { kind: 'idle' };
}

/** The worker's step: execute outside any transaction, then commit the result in a short one. */
export function workerStep(store: Store, def: WorkflowDefinition, run: RunRecord, ctx: StepContext) {
  return stepWith(
    def,
    run,
    ctx,
    (commit) => store.transaction(commit),
    undefined,
    () => run,
  );
}

/**
 * The worker's step of one branch of a forked run. Its siblings execute at the same time, so
 * `commitInTurn` runs commits one at a time, and `current` is the run as the last of them left it:
 * the branch's result is applied to that (see samePlace), never to the run it started from.
 */
export function branchStep(
  def: WorkflowDefinition,
  run: RunRecord,
  ctx: StepContext,
  line: Line,
  current: () => RunRecord,
  commitInTurn: (commit: (tx: StoreTx) => Promise<StepOutcome>) => Promise<StepOutcome>,
) {
  return stepWith(def, run, ctx, commitInTurn, line, current);
}

/** A request's step: only for inline nodes, executed inside the caller's transaction. */
export function inlineStep(tx: StoreTx, def: WorkflowDefinition, run: RunRecord, ctx: StepContext, line?: Line) {
  return stepWith(
    def,
    run,
    ctx,
    (commit) => commit(tx),
    line,
    () => run,
  );
}

/** Plan, execute (where `within` is not yet a transaction for the worker), commit `within`. */
async function stepWith(
  def: WorkflowDefinition,
  run: RunRecord,
  ctx: StepContext,
  within: (commit: (tx: StoreTx) => Promise<StepOutcome>) => Promise<StepOutcome>,
  line: Line | undefined,
  current: () => RunRecord,
): Promise<StepOutcome> {
  const p = plan(run, ctx.clock.now(), line);
  if (p.kind === 'idle') return { kind: 'idle', run };
  if (p.kind === 'cancel')
    return within(async (tx) => ({ kind: 'settled', run: (await cancelNow(tx, run, {}, iso(ctx.clock))).run }));
  if (p.kind === 'expire') {
    return within(async (tx) => {
      // A sibling branch may have committed since `run` was read: expire against the run as it is.
      const now = current();
      const at = line && lineById(now.cursor, line.id);
      if (line && !at) return { kind: 'idle', run: now };
      const after = await expireGate(tx, def, now, ctx.clock.now(), ctx.fence ?? {}, at);
      // `accept` moves the run on (the lease is still ours); escalate and reject hand it back.
      return after.status === 'running' || isForked(after.cursor)
        ? { kind: 'continue', run: after }
        : { kind: 'settled', run: after };
    });
  }
  const at = line ?? (linesOf(run.cursor)[0] as Line);
  const result = await execute(def, run, at, ctx);
  return committed(run, at, result, () =>
    within(async (tx) => {
      // A sibling branch may have committed while this one executed: apply to the run as it is
      // now, if this branch is still where it was (else it was withdrawn: its result is dropped).
      const now = current();
      // A cancel committed meanwhile wins: the worker cancels the run next (plan), dropping this.
      if (line !== undefined && now.status === 'cancelling') return { kind: 'idle', run: now };
      const still = line === undefined ? at : samePlace(now, run, line);
      if (!still) return { kind: 'idle', run: now };
      return apply(tx, def, now, still, result, p.prefix, ctx);
    }),
  );
}

/** The commit of a node's result, as a span of the run's trace when tracing is on. */
function committed(
  run: RunRecord,
  at: Line,
  result: NodeResult,
  commit: () => Promise<StepOutcome>,
): Promise<StepOutcome> {
  if (!tracingEnabled()) return commit();
  const attributes = { 'handoff.run.id': run.runId, 'handoff.node.id': at.nodeId, 'handoff.node.outcome': result.kind };
  const parent = runTraceParent(run.metadata.traceContext);
  return inSpan('handoff.commit', { parent, attributes }, commit);
}

/** `line` as `now` has it, if it still stands where it stood in `then` (same node, same execution). */
function samePlace(now: RunRecord, then: RunRecord, line: Line): Line | undefined {
  const found = lineById(now.cursor, line.id);
  if (!found || found.nodeId !== line.nodeId) return undefined;
  if ((now.cursor.ordinals[line.nodeId] ?? 0) !== (then.cursor.ordinals[line.nodeId] ?? 0)) return undefined;
  return found.started === line.started && found.wakeAt === line.wakeAt && found.waiting === undefined
    ? found
    : undefined;
}

/** Whether the node at the cursor may run inside a request's transaction (fast, no I/O). */
function isInlineStep(def: WorkflowDefinition, run: RunRecord): boolean {
  if (run.status !== 'pending' && run.status !== 'running') return false;
  if (run.wakeAt !== undefined || run.cursor.nodeId === undefined) return false;
  return isInlineNode(def, run.cursor.nodeId);
}

function isInlineNode(def: WorkflowDefinition, nodeId: string): boolean {
  const node = def.nodes.find((n) => n.id === nodeId);
  return node !== undefined && NODE_TYPES.get(node.typeId)?.inline === true;
}

/** A branch of a forked run that may run inside a request's transaction now. */
function inlineLine(def: WorkflowDefinition, run: RunRecord, now: number): Line | undefined {
  if (run.status === 'cancelling' || !isForked(run.cursor)) return undefined;
  return dueLines(run, now).find((d) => d.kind === 'execute' && isInlineNode(def, d.line.nodeId))?.line;
}

/**
 * Drive a run's instantaneous steps inside `tx` (the request's own transaction), up to `maxSteps`,
 * and as many more as a run may have branches (a fork's branches each take a step of their own).
 * Stops before any node that is not inline, and at sleep, interrupt or the end.
 */
export async function driveInline(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  ctx: StepContext,
  maxSteps = 64,
): Promise<RunRecord> {
  let current = run;
  const limit = maxSteps + (ctx.maxBranches ?? DEFAULT_MAX_BRANCHES);
  for (let i = 0; i < limit; i++) {
    if (isInlineStep(def, current)) {
      const out = await inlineStep(tx, def, current, ctx);
      current = out.run;
      if (out.kind !== 'continue') break;
      continue;
    }
    // A forked run: its inline branches, one after another, in the same transaction.
    const line = inlineLine(def, current, ctx.clock.now());
    if (!line) break;
    current = (await inlineStep(tx, def, current, ctx, line)).run;
  }
  return current;
}

async function execute(def: WorkflowDefinition, run: RunRecord, line: Line, ctx: StepContext): Promise<NodeResult> {
  const node = findNode(def, line.nodeId);
  const type = (ctx.nodeTypes ?? NODE_TYPES).get(node.typeId);
  const ordinal = run.cursor.ordinals[node.id] ?? 0;
  if (!type) return { kind: 'failed', error: { code: 'unknown_node_type', message: `no executor for ${node.typeId}` } };
  // What a node that reaches outside returns may echo a credential: scrubbed before it is committed.
  const redactor = type.inline ? undefined : ctx.services?.redactor;
  const recorded = (r: NodeResult) => (redactor ? scrubbed(r, redactor) : r);
  const executeOnce = async (span: Span | undefined): Promise<NodeResult> => {
    try {
      const result = await type.execute(nodeContext(run, line, node, ordinal, ctx));
      ctx.onExecuted?.(node.typeId, result.kind);
      describeOutcome(span, result);
      // What views show of the node (NodeType.describe) is recorded with its state, then scrubbed.
      const shown = recorded(described(type, result));
      if (!type.inline) reportFailedAttempt(ctx, run.runId, node, shown);
      return shown;
    } catch (err) {
      ctx.onExecuted?.(node.typeId, 'error');
      failSpanWith(span, 'node_execution_error', (err as Error).message);
      return recorded({ kind: 'failed', error: { code: 'node_execution_error', message: (err as Error).message } });
    }
  };
  if (!tracingEnabled()) return executeOnce(undefined);
  // A span of the run's own trace (the context it stored when it was made), whenever and wherever
  // this execution happens: after a restart, on another instance, a day after a decision.
  return inSpan('handoff.node', nodeSpan(run, node, ordinal), executeOnce);
}

function nodeSpan(run: RunRecord, node: WorkflowNode, ordinal: number): SpanOptions {
  const parent = runTraceParent(run.metadata.traceContext);
  return {
    parent,
    links: linksToActive(parent),
    attributes: {
      'handoff.run.id': run.runId,
      'handoff.workflow.id': run.workflowId,
      'handoff.node.id': node.id,
      'handoff.node.type': node.typeId,
      'handoff.node.ordinal': ordinal,
      'handoff.tenant': run.tenantId,
    },
  };
}

/** The span's outcome attribute (and error) from what the node returned. */
function describeOutcome(span: Span | undefined, result: NodeResult): void {
  if (!span) return;
  span.setAttribute('handoff.node.outcome', result.kind);
  if (result.kind === 'failed') failSpanWith(span, result.error.code, result.error.message);
}

/**
 * One line per failed attempt of a node that reaches out: a retry it scheduled (its retry record)
 * or its failure. From the scrubbed result, so no secret reaches the log.
 */
function reportFailedAttempt(ctx: StepContext, runId: string, node: WorkflowNode, result: NodeResult): void {
  if (!ctx.onAttemptFailed) return;
  const base = { runId, nodeId: node.id, typeId: node.typeId };
  if (result.kind === 'failed') {
    ctx.onAttemptFailed({ ...base, code: result.error.code, message: result.error.message });
    return;
  }
  const retry = result.kind === 'sleep' ? (result.state?.retry as RetryRecord | undefined) : undefined;
  if (retry === undefined || !result.events?.some((e) => e.type === 'node.retrying')) return;
  const { code, message } = retry.lastError;
  ctx.onAttemptFailed({ ...base, code, message, attempt: retry.attempt, nextAttemptAt: retry.nextAttemptAt });
}

/** What a node executes with. Optional fields are assigned, not spread in (V8's slow path). */
function nodeContext(run: RunRecord, line: Line, node: WorkflowNode, ordinal: number, ctx: StepContext): NodeContext {
  const c: NodeContext = {
    runId: run.runId,
    workflowId: run.workflowId,
    node,
    config: node.config,
    ordinal,
    scope: line.id === undefined ? scopeOf(run) : spread(scopeOf(run), { carry: line.carry ?? {} }),
    now: ctx.clock.now(),
    idempotencyKey: `${run.runId}:${node.id}:${ordinal}`,
  };
  if (line.wakeAt !== undefined) c.wakeAt = line.wakeAt;
  if (line.nodeState !== undefined) c.state = line.nodeState;
  if (ctx.services) c.services = ctx.services;
  return c;
}

async function apply(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  line: Line,
  result: NodeResult,
  prefix: NewEvent[],
  ctx: StepContext,
): Promise<StepOutcome> {
  const nowIso = iso(ctx.clock);
  const nodeId = line.nodeId;
  const started = line.started === true;
  const ordinal = run.cursor.ordinals[nodeId] ?? 0;
  const startEvent: NewEvent[] = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal } }];
  const commit = async (t: Transition) => (await commitTransition(tx, run, t, ctx.fence ?? {}, ctx.clock.now())).run;
  const own = (events: NewEvent[]) => stamped(events, line);
  switch (result.kind) {
    case 'completed': {
      const completion: Completion = { output: result.output, started };
      if (result.vars) completion.vars = result.vars;
      if (result.events) completion.events = result.events;
      if (result.detail) completion.detail = result.detail;
      const next = await completeNode(def, run, completion, nowIso, line, ctx.maxBranches);
      const after = await commit(prefix.length === 0 ? next : spread(next, { events: [...prefix, ...next.events] }));
      return after.status === 'running' || (isForked(after.cursor) && !isTerminal(after.status))
        ? { kind: 'continue', run: after }
        : { kind: 'settled', run: after };
    }
    case 'failed': {
      // The node's own events go after its node.started and before its node.failed.
      const before = [...prefix, ...own([...startEvent, ...(result.events ?? [])])];
      const routed = failureRoute(def, run, line, result.error, before);
      if (routed) return { kind: 'continue', run: await commit(routed) };
      return { kind: 'settled', run: await commit(failAt(run, line, result.error, nowIso, before)) };
    }
    case 'cancelled': {
      const events = [...prefix, ...own([...startEvent, ...(result.events ?? [])])];
      const ended = await cancelNow(tx, run, { reason: result.reason }, nowIso, events, ctx.fence ?? {});
      return { kind: 'settled', run: ended.run };
    }
    case 'sleep': {
      const wakeAt = new Date(result.wakeAt).toISOString();
      const events: NewEvent[] = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal, wakeAt } }];
      const place = { wakeAt: result.wakeAt, started: true, ...sleepState(result.state) };
      const all = [...prefix, ...own([...events, ...(result.events ?? [])])];
      if (line.id !== undefined)
        return { kind: 'continue', run: await commit(branchPatch(run, line, place, all, ctx)) };
      const cursor = spread(run.cursor, place);
      const patch = { status: 'running' as const, cursor, wakeAt: result.wakeAt, ...noLease };
      return { kind: 'settled', run: await commit({ patch, events: all }) };
    }
    case 'interrupt': {
      const { kind, data } = result.interrupt;
      const kept = sleepState(result.state);
      const interruptId = newInterruptId();
      await tx.interrupts.insert({
        interruptId,
        runId: run.runId,
        nodeId,
        kind,
        status: 'open',
        data,
        votes: [],
        exchanges: [],
        createdAt: nowIso,
      });
      const key = `${run.runId}:${nodeId}:${ordinal}`;
      const events: NewEvent[] = [
        ...prefix,
        ...own([
          ...startEvent,
          ...(result.events ?? []),
          { type: 'node.suspended', nodeId, payload: { kind, interruptId } },
          {
            type: REQUESTED_EVENT[kind],
            nodeId,
            payload: { interruptId, ...data },
          },
          {
            type: 'interrupt.requested',
            nodeId,
            payload: { interruptId, kind, key, ...(data.timeoutMs !== undefined ? { timeoutMs: data.timeoutMs } : {}) },
          },
        ]),
      ];
      if (line.id !== undefined) {
        const place = { started: true, waiting: kind, wakeAt: result.expiresAt, ...kept };
        return { kind: 'continue', run: await commit(branchPatch(run, line, place, events, ctx)) };
      }
      const status: RunStatus = statusOfInterrupt(kind);
      // The gate's deadline, if it has one, is the run's timer while it waits (deadlines.ts).
      const cursor = spread(run.cursor, { started: true, ...kept });
      const patch = { status, cursor, wakeAt: result.expiresAt, ...noLease };
      return { kind: 'settled', run: await commit({ patch, events }) };
    }
  }
}

/**
 * A branch sleeps or waits: its place changes, the run's status and timer follow from all its
 * branches. The lease stays with the worker, which may be executing a sibling; it hands the
 * lease back when no branch of the run is due (runner.ts).
 */
function branchPatch(
  run: RunRecord,
  line: Line,
  place: Parameters<typeof placed>[2],
  events: NewEvent[],
  ctx: StepContext,
): Transition {
  const cursor = placed(run.cursor, line, place);
  const status = forkedStatus(cursor);
  return { patch: { status, cursor, wakeAt: forkedWakeAt(cursor, status, ctx.clock.now()) }, events };
}

/** The node state a sleep records (absent: keep what the cursor holds). */
const sleepState = (state: Record<string, unknown> | undefined) => (state ? { nodeState: state } : {});
