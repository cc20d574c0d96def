// A run's activity (src/engine/activity.ts) on its A2A task: while `working`, the status message
// says it in a sentence and `metadata.openwop.activity` holds it whole; a stream sends a `working`
// status update when a retry is scheduled or a peer task is linked. Kept apart from the projection
// so that the projection calls it in a line.
import { type ActivityInterrupt, activityOf, activityOfEvent } from '../engine/activity.js';
import type { RunEvent, RunHead } from '../store/model.js';
import type { Message, StatusUpdate, TaskView } from './model.js';

const statusMessage = (messageId: string, taskId: string, contextId: string, text: string): Message => ({
  messageId,
  role: 'agent',
  taskId,
  contextId,
  parts: [{ kind: 'text', text }],
});

/**
 * `task` with the run's activity: in `metadata.openwop.activity` while the run has not ended, and
 * as the status message while the task is `working`. The message id derives from the run's version,
 * so reads of one version are identical.
 */
export function withActivity(task: TaskView, run: RunHead, opens: readonly ActivityInterrupt[]): void {
  const activity = activityOf(run, opens);
  if (!activity) return;
  const openwop = (task.metadata?.openwop ?? {}) as Record<string, unknown>;
  task.metadata = { ...task.metadata, openwop: { ...openwop, activity } };
  if (task.status.state !== 'working') return;
  const id = `${run.runId}:activity:${run.version}`;
  task.status.message = statusMessage(id, run.runId, task.contextId, activity.summary);
}

/** The `working` update a run event announces a new activity with (a retry, a linked peer task), if any. */
export function activityUpdate(taskId: string, contextId: string, e: RunEvent): StatusUpdate | undefined {
  const activity = activityOfEvent(e);
  if (!activity) return undefined;
  const message = statusMessage(`${taskId}:activity-event:${e.sequence}`, taskId, contextId, activity.summary);
  return {
    taskId,
    contextId,
    status: { state: 'working', timestamp: e.timestamp, message },
    metadata: { openwop: { runId: taskId, nodeId: e.nodeId, activity } },
  };
}
