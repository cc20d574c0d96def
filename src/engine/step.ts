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
import type { NewEvent, RunRecord, RunStatus } from '../store/model.js';
import type { RunPatch, Store, StoreTx } from '../store/store.js';
import { cancelNow } from './cancel.js';
import { type Clock, iso } from './clock.js';
import { isExpiryDue } from './deadlines.js';
import { newInterruptId } from './ids.js';
import { NODE_TYPES } from './nodes/index.js';
import type { NodeServices } from './nodes/services.js';
import type { NodeContext, NodeResult } from './nodes/types.js';
import { expireGate } from './resolution.js';
import { scrubbed } from './scrub.js';
import { spread } from './spread.js';
import { type Completion, completeNode, failRun, findNode, noLease, scopeOf } from './transitions.js';
import type { WorkflowDefinition, WorkflowNode } from './workflow/definition.js';

export interface StepContext {
  clock: Clock;
  /** Counts node executions by type and outcome. */
  onExecuted?: (typeId: string, outcome: string) => void;
  /** Require that this worker still holds the run's lease (fencing). */
  fence?: { owner: string };
  /** Handed to every node executed (see NodeServices). */
  services?: NodeServices;
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

function plan(run: RunRecord, now: number): Plan {
  if (run.status === 'cancelling') return { kind: 'cancel' };
  // A gate's deadline passed with no decision (deadlines.ts).
  if (isExpiryDue(run, now)) return { kind: 'expire' };
  if (run.status !== 'pending' && run.status !== 'running') return { kind: 'idle' };
  if (run.wakeAt !== undefined && run.wakeAt > now) return { kind: 'idle' };
  // A pending run starts in the same commit as its first step.
  const prefix: NewEvent[] =
    run.status === 'pending' ? [{ type: 'run.started', payload: { workflowId: run.workflowId } }] : [];
  return { kind: 'execute', prefix };
}

/** The worker's step: execute outside any transaction, then commit the result in a short one. */
export function workerStep(store: Store, def: WorkflowDefinition, run: RunRecord, ctx: StepContext) {
  return stepWith(def, run, ctx, (commit) => store.transaction(commit));
}

/** A request's step: only for inline nodes, executed inside the caller's transaction. */
export function inlineStep(tx: StoreTx, def: WorkflowDefinition, run: RunRecord, ctx: StepContext) {
  return stepWith(def, run, ctx, (commit) => commit(tx));
}

/** Plan, execute (where `within` is not yet a transaction for the worker), commit `within`. */
async function stepWith(
  def: WorkflowDefinition,
  run: RunRecord,
  ctx: StepContext,
  within: (commit: (tx: StoreTx) => Promise<StepOutcome>) => Promise<StepOutcome>,
): Promise<StepOutcome> {
  const p = plan(run, ctx.clock.now());
  if (p.kind === 'idle') return { kind: 'idle', run };
  if (p.kind === 'cancel')
    return within(async (tx) => ({ kind: 'settled', run: (await cancelNow(tx, run, {}, iso(ctx.clock))).run }));
  if (p.kind === 'expire') {
    return within(async (tx) => {
      const after = await expireGate(tx, def, run, ctx.clock.now(), ctx.fence ?? {});
      // `accept` moves the run on (the lease is still ours); escalate and reject hand it back.
      return after.status === 'running' ? { kind: 'continue', run: after } : { kind: 'settled', run: after };
    });
  }
  const result = await execute(def, run, ctx);
  return within((tx) => apply(tx, def, run, result, p.prefix, ctx));
}

/** Whether the node at the cursor may run inside a request's transaction (fast, no I/O). */
function isInlineStep(def: WorkflowDefinition, run: RunRecord): boolean {
  if (run.status !== 'pending' && run.status !== 'running') return false;
  if (run.wakeAt !== undefined || run.cursor.nodeId === undefined) return false;
  const node = def.nodes.find((n) => n.id === run.cursor.nodeId);
  return node !== undefined && NODE_TYPES.get(node.typeId)?.inline === true;
}

/**
 * Drive a run's instantaneous steps inside `tx` (the request's own transaction), up to `maxSteps`.
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
  for (let i = 0; i < maxSteps && isInlineStep(def, current); i++) {
    const out = await inlineStep(tx, def, current, ctx);
    current = out.run;
    if (out.kind !== 'continue') break;
  }
  return current;
}

async function execute(def: WorkflowDefinition, run: RunRecord, ctx: StepContext): Promise<NodeResult> {
  const node = findNode(def, run.cursor.nodeId as string);
  const type = NODE_TYPES.get(node.typeId);
  const ordinal = run.cursor.ordinals[node.id] ?? 0;
  if (!type) return { kind: 'failed', error: { code: 'unknown_node_type', message: `no executor for ${node.typeId}` } };
  // What a node that reaches outside returns may echo a credential: scrubbed before it is committed.
  const redactor = type.inline ? undefined : ctx.services?.redactor;
  const recorded = (r: NodeResult) => (redactor ? scrubbed(r, redactor) : r);
  try {
    const result = await type.execute(nodeContext(run, node, ordinal, ctx));
    ctx.onExecuted?.(node.typeId, result.kind);
    return recorded(result);
  } catch (err) {
    ctx.onExecuted?.(node.typeId, 'error');
    return recorded({ kind: 'failed', error: { code: 'node_execution_error', message: (err as Error).message } });
  }
}

/** What a node executes with. Optional fields are assigned, not spread in (V8's slow path). */
function nodeContext(run: RunRecord, node: WorkflowNode, ordinal: number, ctx: StepContext): NodeContext {
  const c: NodeContext = {
    runId: run.runId,
    workflowId: run.workflowId,
    node,
    config: node.config,
    ordinal,
    scope: scopeOf(run),
    now: ctx.clock.now(),
    idempotencyKey: `${run.runId}:${node.id}:${ordinal}`,
  };
  if (run.cursor.wakeAt !== undefined) c.wakeAt = run.cursor.wakeAt;
  if (run.cursor.nodeState !== undefined) c.state = run.cursor.nodeState;
  if (ctx.services) c.services = ctx.services;
  return c;
}

async function apply(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  result: NodeResult,
  prefix: NewEvent[],
  ctx: StepContext,
): Promise<StepOutcome> {
  const nowIso = iso(ctx.clock);
  const nodeId = run.cursor.nodeId as string;
  const started = run.cursor.started === true;
  const ordinal = run.cursor.ordinals[nodeId] ?? 0;
  const startEvent: NewEvent[] = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal } }];
  const commit = async (patch: RunPatch, events: NewEvent[]) =>
    (await tx.commitRun(run, patch, events, ctx.fence ?? {})).run;
  switch (result.kind) {
    case 'completed': {
      const completion: Completion = { output: result.output, started };
      if (result.vars) completion.vars = result.vars;
      if (result.events) completion.events = result.events;
      if (result.detail) completion.detail = result.detail;
      const next = await completeNode(def, run, completion, nowIso);
      const after = await commit(next.patch, prefix.length === 0 ? next.events : [...prefix, ...next.events]);
      return after.status === 'running' ? { kind: 'continue', run: after } : { kind: 'settled', run: after };
    }
    case 'failed': {
      // The node's own events go after its node.started and before its node.failed.
      const f = failRun(run, result.error, nowIso, true);
      return {
        kind: 'settled',
        run: await commit(f.patch, [...prefix, ...startEvent, ...(result.events ?? []), ...f.events]),
      };
    }
    case 'cancelled': {
      const events = [...prefix, ...startEvent, ...(result.events ?? [])];
      const ended = await cancelNow(tx, run, { reason: result.reason }, nowIso, events, ctx.fence ?? {});
      return { kind: 'settled', run: ended.run };
    }
    case 'sleep': {
      const cursor = spread(run.cursor, { wakeAt: result.wakeAt, started: true, ...sleepState(result.state) });
      const wakeAt = new Date(result.wakeAt).toISOString();
      const events: NewEvent[] = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal, wakeAt } }];
      const patch = { status: 'running' as const, cursor, wakeAt: result.wakeAt, ...noLease };
      return { kind: 'settled', run: await commit(patch, [...prefix, ...events, ...(result.events ?? [])]) };
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
        ...startEvent,
        ...(result.events ?? []),
        { type: 'node.suspended', nodeId, payload: { kind, interruptId } },
        {
          type: kind === 'approval' ? 'approval.requested' : 'clarification.requested',
          nodeId,
          payload: { interruptId, ...data },
        },
        {
          type: 'interrupt.requested',
          nodeId,
          payload: { interruptId, kind, key, ...(data.timeoutMs !== undefined ? { timeoutMs: data.timeoutMs } : {}) },
        },
      ];
      const status: RunStatus = kind === 'approval' ? 'waiting-approval' : 'waiting-input';
      // The gate's deadline, if it has one, is the run's timer while it waits (deadlines.ts).
      const cursor = spread(run.cursor, { started: true, ...kept });
      const patch = { status, cursor, wakeAt: result.expiresAt, ...noLease };
      return { kind: 'settled', run: await commit(patch, events) };
    }
  }
}

/** The node state a sleep records (absent: keep what the cursor holds). */
const sleepState = (state: Record<string, unknown> | undefined) => (state ? { nodeState: state } : {});
