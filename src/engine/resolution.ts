// Committing a gate's end: the exit a decision chose (engine.ts, a caller's answer) or the one its
// deadline chose (step.ts, the worker's expiry). Both go through one store transaction fenced by
// the run's version, so of an answer and an expiry racing, exactly one commits.
import { ConflictError } from '../store/errors.js';
import type { NewEvent, RunCursor, RunRecord } from '../store/model.js';
import type { RunChange, RunPatch, StoreTx } from '../store/store.js';
import { Frontier, forkedStatus, forkedWakeAt, type Line, lineAt, linesOf, placed, stamped } from './branches.js';
import { expiryEntry } from './audit.js';
import { deadlineOf, expire } from './deadlines.js';
import type { Decision } from './interrupts.js';
import { NODE_TYPES } from './nodes/index.js';
import { commitTransition, completeNode, failAt, failureRoute, findNode, noLease } from './transitions.js';
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
  // The line waiting at the gate: the run's own, or in a forked run the branch standing there.
  const line = lineAt(run.cursor, d.interrupt.nodeId) ?? (linesOf(run.cursor)[0] as Line);
  const gate = findNode(def, line.nodeId);
  const events = stamped(d.events, line);
  const resolve = NODE_TYPES.get(gate.typeId)?.resolveInterrupt;
  if (resolve) {
    // The node answers its own interrupt (NodeType.resolveInterrupt): it executes again now.
    const place = {
      started: true,
      wakeAt: undefined,
      waiting: undefined,
      nodeState: resolve(line.nodeState, d.output),
    };
    return tx.commitRun(run, replaced(run, line, placed(run.cursor, line, place), now), events, fence);
  }
  const ordinal = run.cursor.ordinals[gate.id] ?? 0;
  if (d.action === 'reject') {
    const error = d.timedOut
      ? {
          code: 'interrupt_timeout',
          message: `no decision at '${gate.id}' before its deadline`,
          details: { decidedBy: d.decidedBy, expiresAt: deadlineOf(d.interrupt)?.expiresAt },
        }
      : { code: 'interrupt_rejected', message: `rejected at '${gate.id}'`, details: { decidedBy: d.decidedBy } };
    const rejected: NewEvent = { type: 'node.completed', nodeId: gate.id, payload: { ordinal, outcome: 'rejected' } };
    // A reject with an `any_failed` edge out of the gate routes there (its node.failed says so).
    const routed = failureRoute(def, run, line, error, events);
    if (routed) return commitTransition(tx, run, routed, fence, Date.parse(now));
    const failed = failAt(run, line, error, now, [...events, ...stamped([rejected], line)]);
    // The gate completed (rejected); it did not fail: its line ends with the run.
    const kept = failed.events.filter((e) => !(e.type === 'node.failed' && e.nodeId === gate.id));
    return commitTransition(tx, run, { ...failed, events: kept }, fence, Date.parse(now));
  }
  if (d.action === 'refine') {
    const producer = String(d.interrupt.data.artifactFrom ?? gate.id);
    const refined: NewEvent = { type: 'node.completed', nodeId: gate.id, payload: { ordinal, outcome: 'refine' } };
    const f = Frontier.of(run.cursor, run.state.outputs, { ...run.cursor.ordinals, [gate.id]: ordinal + 1 });
    f.rerun(line, producer, { refineFeedback: d.output.refineFeedback, feedback: d.output.feedback ?? null });
    // The gate's deadline goes with it: the producer runs now.
    return tx.commitRun(run, replaced(run, line, f.cursor(), now), [...events, ...stamped([refined], line)], fence);
  }
  const next = await completeNode(
    def,
    run,
    { output: d.output, detail: { outcome: d.action }, started: true },
    now,
    line,
  );
  return commitTransition(tx, run, { ...next, events: [...events, ...next.events] }, fence, Date.parse(now));
}

/** The patch of a line that goes on now: an unforked run runs; a forked one's status follows its branches. */
function replaced(run: RunRecord, line: Line, cursor: RunCursor, now: string): RunPatch {
  if (line.id === undefined) return { status: 'running', cursor, wakeAt: undefined };
  const status = forkedStatus(cursor);
  return { status, cursor, wakeAt: forkedWakeAt(cursor, status, Date.parse(now)) };
}

/**
 * Expire the deadline of the gate `claimed` waits at (the worker holds its lease): escalate, or
 * resolve with the gate's `onTimeout`. The run is locked first, the order an answer takes (run,
 * then interrupt), and must be unchanged since the claim: a decision or vote committed meanwhile
 * wins, and the worker re-reads (ConflictError). In a forked run, `line` is the branch whose gate
 * expired.
 */
export async function expireGate(
  tx: StoreTx,
  def: WorkflowDefinition,
  claimed: RunRecord,
  now: number,
  fence: { owner?: string },
  line?: Line,
): Promise<RunRecord> {
  const run = await tx.getRun(claimed.runId, { forUpdate: true });
  if (!run || run.version !== claimed.version) throw new ConflictError(`run ${claimed.runId} changed concurrently`);
  const at = line ?? linesOf(run.cursor)[0];
  const open = at && (await tx.interrupts.getOpen(run.runId, at.nodeId));
  // A timer with no open gate behind it (none is written that way): drop it rather than loop on it.
  if (!open || !at) return (await tx.commitRun(run, { wakeAt: undefined, ...noLease }, [], fence)).run;
  const e = expire(open, now);
  if (!(await tx.interrupts.update(e.interrupt, 'open', open))) {
    throw new ConflictError(`the interrupt of run ${run.runId} changed concurrently`);
  }
  // Audit log: the deadline acted (an escalation, or a timeout's resolution), with this commit.
  tx.recordAudit(expiryEntry(run, open, e));
  if (e.kind === 'escalate') {
    if (at.id === undefined) return (await tx.commitRun(run, { wakeAt: e.wakeAt, ...noLease }, e.events, fence)).run;
    const cursor = placed(run.cursor, at, { wakeAt: e.wakeAt });
    const patch = { cursor, wakeAt: forkedWakeAt(cursor, run.status, now) };
    return (await tx.commitRun(run, patch, stamped(e.events, at), fence)).run;
  }
  return (await commitResolution(tx, def, run, e, new Date(now).toISOString(), fence)).run;
}
