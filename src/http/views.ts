// Wire views of stored records for the REST surface (RunSnapshot, RunEventDoc).
import { type InterruptRecord, type RunEvent, type RunRecord, isWaiting } from '../store/model.js';

export function runSnapshot(run: RunRecord, open?: InterruptRecord): Record<string, unknown> {
  const waiting = isWaiting(run.status);
  return {
    runId: run.runId,
    workflowId: run.workflowId,
    status: run.status,
    owner: { tenant: run.tenantId, principal: run.principalId },
    inputs: run.inputs,
    variables: run.state.vars,
    nodeStates: run.state.outputs,
    ...(waiting && run.cursor.nodeId ? { currentNodeId: run.cursor.nodeId } : {}),
    ...(open
      ? {
          interrupt: {
            kind: open.kind,
            nodeId: open.nodeId,
            interruptId: open.interruptId,
            payload: open.data,
            votes: open.votes.map((v) => ({ principal: v.principalId, action: v.action, at: v.at })),
            exchanges: open.exchanges,
          },
        }
      : {}),
    ...(waitingOn(run) ? { waitingOn: waitingOn(run) } : {}),
    ...(run.error ? { error: run.error } : {}),
    tags: run.tags,
    metadata: run.metadata,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    ...(run.completedAt ? { completedAt: run.completedAt } : {}),
  };
}

/**
 * The peer task a run's a2a.invoke node waits on ({agent, peerTaskId, state}), while the run is
 * not terminal: kept in the node's durable state by each execution.
 */
export function waitingOn(run: RunRecord): Record<string, unknown> | undefined {
  if (run.completedAt !== undefined) return undefined;
  const w = run.cursor.nodeState?.waitingOn;
  return w !== null && typeof w === 'object' ? (w as Record<string, unknown>) : undefined;
}

export function eventDoc(e: RunEvent): Record<string, unknown> {
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
