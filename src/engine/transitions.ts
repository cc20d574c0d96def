// Pure helpers that turn "a node finished" into the next run patch and events. Shared by the
// worker (nodes that finish on their own) and by interrupt resolution (gates a human finished).
import type { BranchCursor, NewEvent, RunError, RunRecord, RunState } from '../store/model.js';
import type { RunChange, RunPatch, StoreTx } from '../store/store.js';
import { releaseHeld, requestCancel } from './cancel.js';
import {
  allNext,
  ConditionError,
  Frontier,
  firstNext,
  forkedStatus,
  forkedWakeAt,
  isForked,
  type Line,
  linesOf,
  onFailure,
  stamped,
} from './branches.js';
import type { EvalScope } from './nodes/types.js';
import type { WorkflowDefinition, WorkflowNode } from './workflow/definition.js';
import { spread, withEntry } from './spread.js';
import { isJoin, PARALLEL } from './workflow/graph.js';

/** What a step commits: the run's patch, its events, and the branches it withdrew (their
 * interrupts are closed and what their nodes hold released in the same transaction: cancel.ts). */
export interface Transition {
  patch: RunPatch;
  events: NewEvent[];
  withdrawn?: BranchCursor[];
}

/** Commit `t` to `run` at `now` (epoch ms): close what it withdrew, then the run's one commit. */
export async function commitTransition(
  tx: StoreTx,
  run: RunRecord,
  t: Transition,
  fence: { owner?: string },
  now: number,
): Promise<RunChange> {
  const withdrawn = new Set((t.withdrawn ?? []).map((b) => b.nodeId));
  for (const nodeId of withdrawn) await closeBranch(tx, run.runId, nodeId);
  if (withdrawn.size > 0) await cancelChildrenAt(tx, run, withdrawn, now);
  return tx.commitRun(run, t.patch, t.events, fence);
}

/** A withdrawn branch's open interrupt closes (deciding it is then 409) and what its node holds is released. */
async function closeBranch(tx: StoreTx, runId: string, nodeId: string): Promise<void> {
  await tx.interrupts.cancelOpen(runId, nodeId);
  await releaseHeld(tx, runId, nodeId);
}

/** The child runs a withdrawn branch's core.forEach / core.subWorkflow started are cancelled too. */
async function cancelChildrenAt(tx: StoreTx, run: RunRecord, nodeIds: Set<string>, now: number): Promise<void> {
  const payload = { reason: 'its branch was withdrawn', parentRunId: run.runId };
  for (const child of await tx.childRuns(run.runId)) {
    if (child.parentNodeId !== undefined && nodeIds.has(child.parentNodeId)) {
      await requestCancel(tx, child, payload, now);
    }
  }
}

/** The scope expressions of `run` see; `vars` and `nodes` as they are about to be committed, if given. */
export function scopeOf(run: RunRecord, vars = run.state.vars, nodes = run.state.outputs): EvalScope {
  return {
    inputs: run.inputs,
    vars,
    nodes,
    carry: run.cursor.carry ?? {},
    run: { runId: run.runId, workflowId: run.workflowId },
  };
}

export function findNode(def: WorkflowDefinition, nodeId: string): WorkflowNode {
  const node = def.nodes.find((n) => n.id === nodeId);
  if (!node) throw new Error(`workflow ${def.id} has no node ${nodeId}`);
  return node;
}

export interface Completion {
  output: unknown;
  vars?: Record<string, unknown>;
  /** Extra payload for the node.completed event (e.g. the approval action). */
  detail?: Record<string, unknown>;
  /** The node's own events, logged after its node.started and before its node.completed. */
  events?: NewEvent[];
  /** node.started was already committed for this execution (timer or interrupt). */
  started: boolean;
}

/**
 * Patch and events for "the node of `line` completed" (the run's own line by default): advance
 * along the edges, fork at a `core.parallel`, arrive at a `core.join`, or finish the run.
 */
export async function completeNode(
  def: WorkflowDefinition,
  run: RunRecord,
  c: Completion,
  nowIso: string,
  line: Line = linesOf(run.cursor)[0] as Line,
  /** Branches the run may have live at once (only a core.parallel's completion forks). */
  maxBranches?: number,
): Promise<Transition> {
  const node = findNode(def, line.nodeId);
  const ordinal = run.cursor.ordinals[node.id] ?? 0;
  const state = {
    outputs: withEntry(run.state.outputs, node.id, c.output),
    vars: spread(run.state.vars, c.vars ?? {}),
  };
  const events: NewEvent[] = [];
  if (!c.started) events.push({ type: 'node.started', nodeId: node.id, payload: { ordinal, typeId: node.typeId } });
  if (c.events) events.push(...c.events);
  events.push({
    type: 'node.completed',
    nodeId: node.id,
    payload: c.detail ? spread({ ordinal }, c.detail) : { ordinal },
  });
  if (node.outputRole === 'artifact') {
    events.push({
      type: 'artifact.created',
      nodeId: node.id,
      payload: { artifactId: node.id, name: node.name, data: c.output },
    });
  }
  const ordinals = withEntry(run.cursor.ordinals, node.id, ordinal + 1);
  try {
    const done = { node, ordinal, output: c.output, state, ordinals };
    return await advance(def, run, line, done, events, nowIso, maxBranches);
  } catch (err) {
    if (!(err instanceof ConditionError)) throw err;
    // The node completed; the edge after it could not be decided: the run fails, saying which.
    const failed = failAt(run, line, err.error, nowIso, stamped(events, line));
    return { ...failed, events: failed.events.filter((e) => !(e.type === 'node.failed' && e.nodeId === node.id)) };
  }
}

/** Where the line goes after its node completed: the first edge that holds, or the Frontier. */
async function advance(
  def: WorkflowDefinition,
  run: RunRecord,
  line: Line,
  done: Omit<Done, 'scope'>,
  events: NewEvent[],
  nowIso: string,
  maxBranches: number | undefined,
): Promise<Transition> {
  const { node, state, ordinals } = done;
  const scope = scopeOf(run, state.vars, state.outputs);
  if (node.typeId !== PARALLEL && !isForked(run.cursor)) {
    // The common case, kept free of the branch machinery: one line, the first edge that holds.
    const next = await firstNext(def, node.id, scope);
    if (next === undefined) return completed(def, state, ordinals, events, nowIso);
    if (!isJoin(def, next)) {
      return { patch: { status: 'running', state, cursor: { nodeId: next, ordinals }, wakeAt: undefined }, events };
    }
  }
  return moveLines(def, run, line, { ...done, scope }, events, nowIso, maxBranches);
}

/** What the step that completed a node hands on. */
interface Done {
  node: WorkflowNode;
  ordinal: number;
  output: unknown;
  state: RunState;
  ordinals: Record<string, number>;
  scope: EvalScope;
}

/** The step of a forked run, or of a line that forks or joins: the Frontier decides. */
async function moveLines(
  def: WorkflowDefinition,
  run: RunRecord,
  line: Line,
  done: Done,
  nodeEvents: NewEvent[],
  nowIso: string,
  maxBranches: number | undefined,
): Promise<Transition> {
  const f = Frontier.of(run.cursor, done.state.outputs, { ...done.ordinals });
  if (done.node.typeId === PARALLEL) {
    const targets = await allNext(def, done.node.id, done.scope);
    if (targets.length === 0) {
      const error = { code: 'no_branch', message: `no outgoing edge of '${done.node.id}' holds: nothing to run` };
      return failLines(run, f, line, error, nowIso, stamped(nodeEvents, line));
    }
    f.fork(def, line, done.node.id, done.ordinal, targets, maxBranches);
    if (f.failed) return failLines(run, f, line, f.failed, nowIso, stamped(nodeEvents, line));
  } else {
    f.leave(def, line, done.node.id, done.output, await firstNext(def, done.node.id, done.scope));
  }
  await f.settle(def, (outputs) => scopeOf(run, done.state.vars, outputs));
  const state = { outputs: f.outputs, vars: done.state.vars };
  const events = [...stamped(nodeEvents, line), ...f.events];
  if (f.failed) return failLines({ ...run, state }, f, undefined, f.failed, nowIso, events);
  if (f.ended) return completed(def, state, f.ordinals, events, nowIso, f.withdrawn);
  const cursor = f.cursor();
  const status = isForked(cursor) ? forkedStatus(cursor) : 'running';
  const wakeAt = isForked(cursor) ? forkedWakeAt(cursor, status, Date.parse(nowIso)) : undefined;
  return { patch: { status, state, cursor, wakeAt }, events, withdrawn: f.withdrawn };
}

function completed(
  def: WorkflowDefinition,
  state: RunState,
  ordinals: Record<string, number>,
  events: NewEvent[],
  nowIso: string,
  withdrawn: BranchCursor[] = [],
): Transition {
  events.push({ type: 'run.completed', payload: { outputs: artifactOutputs(def, state.outputs) } });
  return {
    patch: {
      status: 'completed' as const,
      state,
      cursor: { ordinals },
      wakeAt: undefined,
      completedAt: nowIso,
      leaseOwner: undefined,
      leaseExpiresAt: undefined,
    },
    events,
    withdrawn,
  };
}

/**
 * A node of an unforked run failed and has an outgoing `any_failed` edge: the node fails (its
 * `node.failed`, its error as its output) and the run goes on along that edge instead of failing.
 * Undefined when there is no such edge (or the run is forked): the run fails (failAt).
 */
export function failureRoute(
  def: WorkflowDefinition,
  run: RunRecord,
  line: Line,
  error: RunError,
  before: NewEvent[],
): Transition | undefined {
  if (isForked(run.cursor)) return undefined;
  const edge = def.edges.find((e) => e.sourceNodeId === line.nodeId && onFailure(e));
  if (!edge) return undefined;
  const nodeId = line.nodeId;
  const ordinal = run.cursor.ordinals[nodeId] ?? 0;
  const state = { outputs: withEntry(run.state.outputs, nodeId, { error }), vars: run.state.vars };
  const ordinals = withEntry(run.cursor.ordinals, nodeId, ordinal + 1);
  const failed: NewEvent = { type: 'node.failed', nodeId, payload: { ordinal, error, routedTo: edge.targetNodeId } };
  return {
    patch: { status: 'running', state, cursor: { nodeId: edge.targetNodeId, ordinals }, wakeAt: undefined },
    events: [...before, failed],
  };
}

/**
 * The run fails at `line`'s node (after `before`, the node's own events); in a forked run every
 * other branch is withdrawn first.
 */
export function failAt(run: RunRecord, line: Line, error: RunError, nowIso: string, before: NewEvent[]): Transition {
  if (!isForked(run.cursor)) {
    const f = failRun(run, error, nowIso, true, line);
    return { patch: f.patch, events: [...before, ...f.events] };
  }
  return failLines(run, Frontier.of(run.cursor, run.state.outputs, run.cursor.ordinals), line, error, nowIso, before);
}

/** A forked run fails: every other branch is withdrawn, then the run fails. */
function failLines(
  run: RunRecord,
  f: Frontier,
  line: Line | undefined,
  error: RunError,
  nowIso: string,
  before: NewEvent[],
): Transition {
  f.withdrawAll(line, `the run failed: ${error.code}`);
  const failed = failRun(run, error, nowIso, true, line);
  const state = run.state;
  return {
    patch: { ...failed.patch, state },
    events: [...before, ...f.events, ...failed.events],
    withdrawn: f.withdrawn,
  };
}

/** Patch and events for a run that fails at `line`'s node (the run's own line by default). */
export function failRun(
  run: RunRecord,
  error: { code: string; message: string; details?: Record<string, unknown> },
  nowIso: string,
  started: boolean,
  line: Line | undefined = linesOf(run.cursor)[0],
): { patch: RunPatch; events: NewEvent[] } {
  const nodeId = line?.nodeId;
  const events: NewEvent[] = [];
  if (nodeId !== undefined && line) {
    const ordinal = run.cursor.ordinals[nodeId] ?? 0;
    if (!started) events.push({ type: 'node.started', nodeId, payload: { ordinal } });
    events.push({ type: 'node.failed', nodeId, payload: { ordinal, error } });
  }
  events.push({ type: 'run.failed', payload: { error } });
  return {
    patch: {
      status: 'failed',
      error,
      cursor: { ordinals: run.cursor.ordinals },
      wakeAt: undefined,
      completedAt: nowIso,
      ...noLease,
    },
    events: line ? stamped(events, line) : events,
  };
}

/** Terminal and suspended commits hand the lease back in the same transaction. */
export const noLease = { leaseOwner: undefined, leaseExpiresAt: undefined } as const;

function artifactOutputs(def: WorkflowDefinition, outputs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const n of def.nodes) if (n.outputRole === 'artifact' && n.id in outputs) out[n.id] = outputs[n.id];
  return out;
}
