// Committing a gate's end: the exit a decision chose (engine.ts, a caller's answer) or the one its
// deadline chose (step.ts, the worker's expiry). Both go through one store transaction fenced by
// the run's version, so of an answer and an expiry racing, exactly one commits.
import { ConflictError } from '../store/errors.js';
import type { NewEvent, RunRecord } from '../store/model.js';
import type { RunChange, StoreTx } from '../store/store.js';
import { deadlineOf, expire } from './deadlines.js';
import type { Decision } from './interrupts.js';
import { NODE_TYPES } from './nodes/index.js';
import { completeNode, failRun, findNode, noLease } from './transitions.js';
import type { WorkflowDefinition } from './workflow/definition.js';

/** Commit the exit of a gate: continue, refine (re-run the producer), or fail on reject. */
export async function commitResolution(
  tx: StoreTx,
  def: WorkflowDefinition,
  run: RunRecord,
  d: Extract<Decision, { kind: 'resolve' }>,
  now: string,
  /** The worker's lease fence (a deadline's expiry); absent for a caller's decision. */
  fence: { owner?: string } = {},
): Promise<RunChange> {
  const gate = findNode(def, run.cursor.nodeId as string);
  if (NODE_TYPES.get(gate.typeId)?.resumesItself) {
    // The node relays the answer itself (a2a.invoke: into the peer's task): execute it again now.
    const cursor = {
      ...run.cursor,
      started: true,
      wakeAt: undefined,
      nodeState: { ...(run.cursor.nodeState ?? {}), reply: d.output },
    };
    return tx.commitRun(run, { status: 'running', cursor, wakeAt: undefined }, d.events, fence);
  }
  if (d.action === 'reject') {
    const error = d.timedOut
      ? {
          code: 'interrupt_timeout',
          message: `no decision at '${gate.id}' before its deadline`,
          details: { decidedBy: d.decidedBy, expiresAt: deadlineOf(d.interrupt)?.expiresAt },
        }
      : { code: 'interrupt_rejected', message: `rejected at '${gate.id}'`, details: { decidedBy: d.decidedBy } };
    const failed = failRun(run, error, now, true);
    const ordinal = run.cursor.ordinals[gate.id] ?? 0;
    const events: NewEvent[] = [
      ...d.events,
      { type: 'node.completed', nodeId: gate.id, payload: { ordinal, outcome: 'rejected' } },
    ];
    return tx.commitRun(run, failed.patch, [...events, ...failed.events.filter((e) => e.type === 'run.failed')], fence);
  }
  if (d.action === 'refine') {
    const producer = String(d.interrupt.data.artifactFrom ?? gate.id);
    const ordinal = run.cursor.ordinals[gate.id] ?? 0;
    const events: NewEvent[] = [
      ...d.events,
      { type: 'node.completed', nodeId: gate.id, payload: { ordinal, outcome: 'refine' } },
    ];
    const cursor = {
      nodeId: producer,
      ordinals: { ...run.cursor.ordinals, [gate.id]: ordinal + 1 },
      carry: { refineFeedback: d.output.refineFeedback, feedback: d.output.feedback ?? null },
    };
    // The gate's deadline goes with it: the producer runs now.
    return tx.commitRun(run, { status: 'running', cursor, wakeAt: undefined }, events, fence);
  }
  const next = await completeNode(def, run, { output: d.output, detail: { outcome: d.action }, started: true }, now);
  return tx.commitRun(run, next.patch, [...d.events, ...next.events], fence);
}

/**
 * Expire the deadline of the gate `claimed` waits at (the worker holds its lease): escalate, or
 * resolve with the gate's `onTimeout`. The run is locked first, the order an answer takes (run,
 * then interrupt), and must be unchanged since the claim: a decision or vote committed meanwhile
 * wins, and the worker re-reads (ConflictError).
 */
export async function expireGate(
  tx: StoreTx,
  def: WorkflowDefinition,
  claimed: RunRecord,
  now: number,
  fence: { owner?: string },
): Promise<RunRecord> {
  const run = await tx.getRun(claimed.runId, { forUpdate: true });
  if (!run || run.version !== claimed.version) throw new ConflictError(`run ${claimed.runId} changed concurrently`);
  const open = await tx.interrupts.getOpen(run.runId, run.cursor.nodeId);
  // A timer with no open gate behind it (none is written that way): drop it rather than loop on it.
  if (!open) return (await tx.commitRun(run, { wakeAt: undefined, ...noLease }, [], fence)).run;
  const e = expire(open, now);
  if (!(await tx.interrupts.update(e.interrupt, 'open', open))) {
    throw new ConflictError(`the interrupt of run ${run.runId} changed concurrently`);
  }
  if (e.kind === 'escalate') {
    return (await tx.commitRun(run, { wakeAt: e.wakeAt, ...noLease }, e.events, fence)).run;
  }
  return (await commitResolution(tx, def, run, e, new Date(now).toISOString(), fence)).run;
}
