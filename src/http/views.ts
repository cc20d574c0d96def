// Wire views of stored records for the REST surface, typed by the response schemas (schemas.ts).
import type { Static } from '@sinclair/typebox';
import { type Activity, type ActivityInterrupt, activityOf } from '../engine/activity.js';
import {
  type InterruptRecord,
  isSuspended,
  type RunEvent as RunEventRecord,
  type RunHead,
  type RunRecord,
} from '../store/model.js';
import type { ChildSummary } from '../store/repos/runs.js';
import type { NodeView } from '../engine/nodes/types.js';
import { viewOf } from '../engine/nodes/view.js';
import { artifactHash } from '../engine/audit.js';
import { shownStatus } from '../engine/children.js';
import type { RunEvent, RunSnapshot } from './schemas.js';

/**
 * The snapshot of `run`; `opens` are its open interrupts, oldest first (several in a forked run);
 * `children`: the run's unfinished child runs (listed only when there are any).
 */
export function runSnapshot(
  run: RunRecord,
  opens: InterruptRecord[] = [],
  children: ChildSummary[] = [],
): Static<typeof RunSnapshot> {
  const waiting = isSuspended(run.status);
  const open = opens[0];
  const activity = activityOf(run, opens);
  return {
    runId: run.runId,
    workflowId: run.workflowId,
    // A parent whose one line waits for a child that waits at a gate shows that wait.
    status: shownStatus(run, activity?.kind, children),
    owner: { tenant: run.tenantId, principal: run.principalId },
    inputs: run.inputs,
    variables: run.state.vars,
    nodeStates: run.state.outputs,
    ...(waiting && run.cursor.nodeId ? { currentNodeId: run.cursor.nodeId } : {}),
    ...(open ? { interrupt: interruptView(open), interrupts: opens.map(interruptView) } : {}),
    ...(run.cursor.branches
      ? {
          branches: run.cursor.branches.map((b) => ({
            id: b.id,
            nodeId: b.nodeId,
            ...(b.waiting ? { waiting: b.waiting } : {}),
            ...(b.wakeAt !== undefined ? { wakeAt: new Date(b.wakeAt).toISOString() } : {}),
          })),
        }
      : {}),
    ...(waitingOn(run) ? { waitingOn: waitingOn(run) } : {}),
    ...(run.error ? { error: run.error } : {}),
    ...(activity ? { activity } : {}),
    ...(run.parentRunId !== undefined ? { parentRunId: run.parentRunId, parentNodeId: run.parentNodeId ?? '' } : {}),
    // `childRuns`: the same list under the name OpenWOP's cascade scenario reads.
    ...(children.length > 0 ? { children, childRuns: children } : {}),
    tags: run.tags,
    metadata: run.metadata,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.completedAt ? { completedAt: run.completedAt } : {}),
  };
}

/** `activity` while the run has not ended (src/engine/activity.ts), from what is stored. */
export function activityField(run: RunHead, opens: readonly ActivityInterrupt[]): { activity?: Activity } {
  const activity = activityOf(run, opens);
  return activity ? { activity } : {};
}

function interruptView(open: InterruptRecord) {
  return {
    kind: open.kind,
    nodeId: open.nodeId,
    interruptId: open.interruptId,
    payload: open.data,
    artifactHash: artifactHash(open),
    ...(typeof open.data.expiresAt === 'string' ? { expiresAt: open.data.expiresAt } : {}),
    // An external-event interrupt's signed token (interrupt.md §Signed-token callback).
    ...(typeof open.data.interruptToken === 'string'
      ? { interruptToken: open.data.interruptToken, callbackUrl: String(open.data.callbackUrl) }
      : {}),
    votes: open.votes.map((v) => ({
      principal: v.principalId,
      action: v.action,
      at: v.at,
      ...(v.castBy !== undefined ? { castBy: v.castBy } : {}),
      ...(v.via !== undefined ? { via: v.via } : {}),
    })),
    exchanges: open.exchanges,
  };
}

/**
 * What the run's node waits on outside the host, while the run is not terminal: the view its node
 * type described (NodeType.describe), recorded with the node's state at each commit.
 */
export function waitingOn(run: RunHead): NodeView['waitingOn'] {
  return run.completedAt === undefined ? viewOf(run.cursor.nodeState).waitingOn : undefined;
}

export function eventDoc(e: RunEventRecord): Static<typeof RunEvent> {
  return {
    eventId: `evt-${e.runId}-${e.sequence}`,
    runId: e.runId,
    type: e.type,
    sequence: e.sequence,
    ...(e.nodeId ? { nodeId: e.nodeId } : {}),
    payload: e.payload,
    timestamp: e.timestamp,
  };
}
