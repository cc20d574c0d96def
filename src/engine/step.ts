// One step of a run, written through a transaction the caller owns. The worker runs each step in
// its own transaction; the engine also runs the instantaneous prefix of a run inside the very
// transaction that created or resumed it, so a request that needs no waiting commits once.
import { metrics } from '../metrics.js';
import type { InterruptKind, NewEvent, RunRecord } from '../store/model.js';
import { isTerminal } from '../store/model.js';
import type { RunPatch, StoreTx } from '../store/store.js';
import { cancelNow } from './cancel.js';
import { newInterruptId } from './ids.js';
import { EXECUTORS } from './nodes/index.js';
import type { NodeResult } from './nodes/types.js';
import { completeNode, failRun, findNode, noLease, scopeOf } from './transitions.js';
import type { WorkflowDefinition } from './workflow/definition.js';

export interface StepOptions {
  /** Require that this worker still holds the run's lease (fencing). */
  fence?: { owner: string };
}

export type StepOutcome =
  /** Committed; the run wants another step now. */
  | { kind: 'continue'; run: RunRecord }
  /** Committed (or nothing to do); the run sleeps, waits for a human, or has ended. */
  | { kind: 'settled'; run: RunRecord }
  /** Nothing committed: the run is not runnable now (timer not due, suspended, terminal). */
  | { kind: 'idle'; run: RunRecord };

/** Execute the node at the cursor and commit what it did, all through `tx`. */
export async function step(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  opts: StepOptions = {},
): Promise<StepOutcome> {
  // A pending run starts in the same commit as its first step.
  let prefix: NewEvent[] = [];
  switch (run.status) {
    case 'cancelling': {
      const { run: after } = await cancelNow(tx, run, {});
      metrics.runsFinished.inc({ workflow: run.workflowId, status: 'cancelled' });
      return { kind: 'settled', run: after };
    }
    case 'pending':
      prefix = [{ type: 'run.started', payload: { workflowId: run.workflowId } }];
      break;
    case 'running':
      break;
    default:
      return { kind: 'idle', run };
  }
  if (run.wakeAt !== undefined && run.wakeAt > Date.now()) return { kind: 'idle', run };
  const result = await execute(def, run);
  return apply(tx, def, run, result, prefix, opts);
}

/** Whether the node at the cursor may run inside a request's transaction (fast, no I/O). */
export function isInlineStep(def: WorkflowDefinition, run: RunRecord): boolean {
  if (run.status !== 'pending' && run.status !== 'running') return false;
  if (run.wakeAt !== undefined || run.cursor.nodeId === undefined) return false;
  const node = def.nodes.find((n) => n.id === run.cursor.nodeId);
  return node !== undefined && EXECUTORS.get(node.typeId)?.inline === true;
}

async function execute(def: WorkflowDefinition, run: RunRecord): Promise<NodeResult> {
  const node = findNode(def, run.cursor.nodeId as string);
  const executor = EXECUTORS.get(node.typeId);
  const ordinal = run.cursor.ordinals[node.id] ?? 0;
  if (!executor)
    return { kind: 'failed', error: { code: 'unknown_node_type', message: `no executor for ${node.typeId}` } };
  try {
    const result = await executor.execute({
      runId: run.runId,
      workflowId: run.workflowId,
      node,
      ordinal,
      scope: scopeOf(run),
      now: Date.now(),
      ...(run.cursor.wakeAt !== undefined ? { wakeAt: run.cursor.wakeAt } : {}),
      idempotencyKey: `${run.runId}:${node.id}:${ordinal}`,
    });
    metrics.nodeExecutions.inc({ type: node.typeId, outcome: result.kind });
    return result;
  } catch (err) {
    metrics.nodeExecutions.inc({ type: node.typeId, outcome: 'error' });
    return { kind: 'failed', error: { code: 'node_execution_error', message: (err as Error).message } };
  }
}

async function apply(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  result: NodeResult,
  prefix: NewEvent[],
  opts: StepOptions,
): Promise<StepOutcome> {
  const nowIso = new Date().toISOString();
  const nodeId = run.cursor.nodeId as string;
  const started = run.cursor.started === true;
  const ordinal = run.cursor.ordinals[nodeId] ?? 0;
  const startEvent: NewEvent[] = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal } }];
  const commit = async (patch: RunPatch, events: NewEvent[]) => {
    const { run: after } = await tx.commitRun(run, patch, events, opts.fence ?? {});
    if (isTerminal(after.status)) metrics.runsFinished.inc({ workflow: after.workflowId, status: after.status });
    return after;
  };
  switch (result.kind) {
    case 'completed': {
      const vars = result.vars ? { vars: result.vars } : {};
      const next = await completeNode(def, run, { output: result.output, ...vars, started }, nowIso);
      const after = await commit(next.patch, [...prefix, ...next.events]);
      return after.status === 'running' ? { kind: 'continue', run: after } : { kind: 'settled', run: after };
    }
    case 'failed': {
      const f = failRun(run, result.error, nowIso, started);
      return { kind: 'settled', run: await commit(f.patch, [...prefix, ...f.events]) };
    }
    case 'sleep': {
      const cursor = { ...run.cursor, wakeAt: result.wakeAt, started: true };
      const wakeAt = new Date(result.wakeAt).toISOString();
      const events = started ? [] : [{ type: 'node.started', nodeId, payload: { ordinal, wakeAt } }];
      return {
        kind: 'settled',
        run: await commit({ status: 'running', cursor, wakeAt: result.wakeAt, ...noLease }, [...prefix, ...events]),
      };
    }
    case 'interrupt': {
      const { kind, data } = result.interrupt;
      const interruptId = newInterruptId();
      await tx.insertInterrupt({
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
      const events = [...prefix, ...startEvent, ...suspendEvents(run, kind, data, interruptId)];
      const status = kind === 'approval' ? 'waiting-approval' : 'waiting-input';
      return {
        kind: 'settled',
        run: await commit({ status, cursor: { ...run.cursor, started: true }, ...noLease }, events),
      };
    }
  }
}

function suspendEvents(
  run: RunRecord,
  kind: InterruptKind,
  data: Record<string, unknown>,
  interruptId: string,
): NewEvent[] {
  const nodeId = run.cursor.nodeId as string;
  const key = `${run.runId}:${nodeId}:${run.cursor.ordinals[nodeId] ?? 0}`;
  return [
    { type: 'node.suspended', nodeId, payload: { kind, interruptId } },
    {
      type: kind === 'approval' ? 'approval.requested' : 'clarification.requested',
      nodeId,
      payload: { interruptId, ...data },
    },
    { type: 'interrupt.requested', nodeId, payload: { interruptId, kind, key } },
  ];
}

/**
 * Drive a run's instantaneous steps inside `tx` (the request's own transaction), up to `maxSteps`.
 * Stops before any node that is not inline-safe, and at sleep, interrupt or the end.
 */
export async function driveInline(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  maxSteps = 64,
): Promise<RunRecord> {
  let current = run;
  for (let i = 0; i < maxSteps && isInlineStep(def, current); i++) {
    const out = await step(tx, def, current);
    current = out.run;
    if (out.kind !== 'continue') break;
  }
  return current;
}
