// Wire views of stored records for the REST surface, typed by the response schemas (schemas.ts).
import type { Static } from '@sinclair/typebox';
import {
  type InterruptRecord,
  isWaiting,
  type RunEvent as RunEventRecord,
  type RunHead,
  type RunRecord,
} from '../store/model.js';
import type { RunEvent, RunSnapshot } from './schemas.js';

export function runSnapshot(run: RunRecord, open?: InterruptRecord): Static<typeof RunSnapshot> {
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
            ...(typeof open.data.expiresAt === 'string' ? { expiresAt: open.data.expiresAt } : {}),
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
export function waitingOn(run: RunHead): Record<string, unknown> | undefined {
  if (run.completedAt !== undefined) return undefined;
  const w = run.cursor.nodeState?.waitingOn;
  return w !== null && typeof w === 'object' ? (w as Record<string, unknown>) : undefined;
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
