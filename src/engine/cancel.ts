// Cancelling a run that no worker is executing: one commit ends it and its open interrupts, and
// has its node types release what they hold outside the host (NodeType.cancel: e.g. a peer task
// the run waits on, whose tasks/cancel is sent after the commit).
import type { NewEvent, RunRecord } from '../store/model.js';
import type { RunChange, StoreTx } from '../store/store.js';
import { linesOf, stamped } from './branches.js';
import { NODE_TYPES } from './nodes/index.js';
import { noLease } from './transitions.js';

/** Cancel immediately: no worker holds the run (or `fence` names the worker that does). */
export async function cancelNow(
  tx: StoreTx,
  run: RunRecord,
  payload: Record<string, unknown>,
  nowIso: string,
  before: NewEvent[] = [],
  fence: { owner?: string } = {},
): Promise<RunChange> {
  await tx.interrupts.cancelOpen(run.runId);
  await releaseHeld(tx, run.runId);
  // Every line of the run ends: its own, or each branch of a forked run.
  const events: NewEvent[] = [
    ...before,
    ...linesOf(run.cursor).flatMap((line) =>
      stamped([{ type: 'node.cancelled', nodeId: line.nodeId, payload: {} }], line),
    ),
    { type: 'run.cancelled', payload },
  ];
  const patch = {
    status: 'cancelled' as const,
    cursor: { ordinals: run.cursor.ordinals },
    wakeAt: undefined,
    completedAt: nowIso,
    ...noLease,
  };
  return tx.commitRun(run, patch, events, fence);
}

/**
 * Cancel `run` (not terminal) as a caller asks it: a run a worker holds a live lease on is marked
 * `cancelling` and its worker ends it at its next step; any other run is cancelled now.
 */
export async function requestCancel(
  tx: StoreTx,
  run: RunRecord,
  payload: Record<string, unknown>,
  now: number,
): Promise<RunRecord> {
  const leased = run.leaseExpiresAt !== undefined && run.leaseExpiresAt > now;
  if (leased && (run.status === 'running' || run.status === 'pending' || run.status === 'cancelling')) {
    if (run.status === 'cancelling') return run;
    return (await tx.commitRun(run, { status: 'cancelling' }, [{ type: 'run.cancelling', payload }])).run;
  }
  return (await cancelNow(tx, run, payload, new Date(now).toISOString())).run;
}

/** The node types that hold something outside the host (their `cancel` hook), once. */
const HOLDERS = [...NODE_TYPES.values()].filter((t) => t.cancel !== undefined);

/**
 * In the transaction that cancels the run (or withdraws the branch at `nodeId`): every node type
 * with a `cancel` hook marks what its executions hold for release after the commit.
 */
export async function releaseHeld(tx: StoreTx, runId: string, nodeId?: string): Promise<void> {
  for (const type of HOLDERS) await type.cancel?.(tx, runId, nodeId);
}
