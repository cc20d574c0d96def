// The persisted A2ATaskState (RFC 0100), one record per run, kept current by a step of the
// transition pipeline that runs inside every run transaction — so the record can never disagree
// with its run. The same step marks A2A replies as applied (a retried reply is not applied twice).
import type { RunRecord, TaskRecord } from '../store/model.js';
import type { RunChange, StoreTx, TransitionStep } from '../store/store.js';
import { projectState } from './projection.js';

/** A2A correlation data the A2A surface keeps in run metadata (`metadata.a2a`). */
interface A2ARunMetadata {
  contextId?: string;
  messageId?: string;
}

/**
 * The task's contextId: the caller's, or the one made when the A2A message started it; a run
 * started over REST has none, and gets one derived from its id, so every reader (the record, a
 * push, a stream) computes the same value from the run alone.
 */
export function contextIdOf(run: RunRecord): string {
  return (run.metadata.a2a as A2ARunMetadata | undefined)?.contextId ?? `ctx_${run.runId.replace(/^run_/, '')}`;
}

/** The task record of a run as it is now: what the step writes, what a read publishes. */
export function taskRecordOf(run: RunRecord): TaskRecord {
  const next = projectState(run.status);
  const messageId = (run.metadata.a2a as A2ARunMetadata | undefined)?.messageId;
  return {
    taskId: run.runId,
    tenantId: run.tenantId,
    principalId: run.principalId,
    contextId: contextIdOf(run),
    ...(messageId ? { messageId } : {}),
    state: next.state,
    ...(next.interruptKind ? { interruptKind: next.interruptKind } : {}),
    updatedAt: run.updatedAt,
  };
}

export const taskRecordStep: TransitionStep = {
  name: 'a2a-task-record',
  async run(tx: StoreTx, change: RunChange): Promise<void> {
    await recordReplies(tx, change);
    if (!change.before) {
      await tx.tasks.insert(taskRecordOf(change.run));
      return;
    }
    const next = projectState(change.run.status);
    const prev = projectState(change.before.status);
    // updatedAt means "when the projected state last changed", so only a real change writes.
    if (prev.state === next.state && prev.interruptKind === next.interruptKind) return;
    await tx.tasks.updateState(change.run.runId, next.state, next.interruptKind, change.run.updatedAt);
  },
};

/** An `a2a.message` event whose payload names the replying principal marks a reply applied. */
async function recordReplies(tx: StoreTx, change: RunChange): Promise<void> {
  for (const e of change.events) {
    if (e.type !== 'a2a.message' || typeof e.payload.principalId !== 'string') continue;
    const message = e.payload.message as { messageId: string };
    await tx.tasks.recordReply(change.run.tenantId, e.payload.principalId, message.messageId, change.run.runId);
  }
}
