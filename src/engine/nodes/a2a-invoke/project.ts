// Reverse projection (docs/protocol/openwop.md, "Reverse projection"): what a peer task's state
// means for the calling node. Pure: a peer task and the node's state in, a NodeResult out.
import type { Artifact, Message, Part, TaskView } from '../../../a2a/model.js';
import { textOf } from '../../../peers/normalize.js';
import type { NodeResult } from '../types.js';

/** Everything from a peer crosses a trust boundary (docs/protocol/openwop.md, "Trust boundary"). */
const UNTRUSTED = { contentTrust: 'untrusted' } as const;

const untrustedParts = (parts: Part[]) => parts.map((p) => ({ ...p, ...UNTRUSTED }));
const untrustedArtifact = (a: Artifact) => ({ ...a, parts: untrustedParts(a.parts), ...UNTRUSTED });
/** A peer's message as the node shows it: its text parts joined, and every part. */
export const untrustedMessage = (m: Message) => ({ text: textOf(m), parts: untrustedParts(m.parts), ...UNTRUSTED });

/** Who the node called, as recorded with each outcome. */
export interface CallInfo {
  agent: string;
  protocolVersion: string;
  binding: string;
}

/** The node's output for a peer task: {taskId, contextId, state, artifacts, message?}, all untrusted. */
export function outputOf(task: TaskView): Record<string, unknown> {
  return {
    taskId: task.id,
    contextId: task.contextId,
    state: task.status.state,
    artifacts: (task.artifacts ?? []).map(untrustedArtifact),
    ...(task.status.message ? { message: untrustedMessage(task.status.message) } : {}),
    ...UNTRUSTED,
  };
}

/**
 * The replay cache (docs/protocol/openwop.md, "Replay cache"): the peer's final task, both clocks
 * and the protocol version, in node.completed / node.failed. Never a token. `output` is the task
 * as the node's output (outputOf): the record holds that very object, so the store keeps one copy
 * of the task for both (src/store/recorded.ts).
 */
export function replayRecord(
  task: TaskView,
  call: CallInfo,
  now: number,
  output: Record<string, unknown>,
): Record<string, unknown> {
  return {
    peer: {
      agent: call.agent,
      protocolVersion: call.protocolVersion,
      binding: call.binding,
      task: output,
      peerTimestamp: task.status.timestamp ?? null,
      recordedAt: new Date(now).toISOString(),
    },
  };
}

/** A terminal peer task as the node's outcome; undefined while the task is not terminal. */
export function terminalResult(task: TaskView, call: CallInfo, now: number): NodeResult | undefined {
  const output = outputOf(task);
  const detail = replayRecord(task, call, now, output);
  const said = textOf(task.status.message);
  const details = { ...detail, peerTaskId: task.id, agent: call.agent };
  switch (task.status.state) {
    case 'completed':
      return { kind: 'completed', output, detail };
    case 'failed':
      return {
        kind: 'failed',
        error: { code: 'external_task_failed', message: said || `agent '${call.agent}' failed the task`, details },
      };
    case 'rejected':
      return {
        kind: 'failed',
        error: {
          code: 'rejected_by_remote',
          message: said || `agent '${call.agent}' rejected the task`,
          details: { reason: 'rejected_by_remote', ...details },
        },
      };
    case 'canceled':
      return {
        kind: 'cancelled',
        reason: 'cross_protocol_cancel',
        events: [{ type: 'a2a.task.updated', payload: { ...detail, state: 'canceled' } }],
      };
    default:
      return undefined;
  }
}

/** The clarification a peer's question opens on the calling run (input-required, auth-required). */
export function questionOf(task: TaskView, agent: string): Record<string, unknown> {
  const auth = task.status.state === 'auth-required';
  const text =
    textOf(task.status.message) ||
    openwopQuestions(task) ||
    (auth ? 'The agent asks for credentials.' : 'The agent asks for input.');
  return {
    title: `Agent '${agent}' asks`,
    questions: [{ id: 'answer', question: text }],
    peer: { agent, taskId: task.id, contextId: task.contextId, state: task.status.state },
    ...(task.status.message ? { message: untrustedMessage(task.status.message) } : {}),
    ...(auth ? { subkind: 'auth', metadata: { subkind: 'auth' } } : {}),
    ...UNTRUSTED,
  };
}

/** An OpenWOP peer (another Handoff) names its questions in `metadata.openwop.interrupt.questions`. */
function openwopQuestions(task: TaskView): string | undefined {
  const openwop = task.metadata?.openwop as { interrupt?: { questions?: unknown } } | undefined;
  const qs = openwop?.interrupt?.questions;
  if (!Array.isArray(qs)) return undefined;
  const texts = qs.map((q) => (q && typeof q === 'object' ? (q as { question?: unknown }).question : undefined));
  const joined = texts.filter((t): t is string => typeof t === 'string').join('\n');
  return joined || undefined;
}
