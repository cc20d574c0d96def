// Reverse projection (docs/protocol/openwop.md, "Reverse projection"): what a peer task's state
// means for the calling node. Pure: a peer task and the node's state in, a NodeResult out.
import type { PeerArtifact, PeerPart, PeerStatusMessage, PeerTask } from '../../../peers/normalize.js';
import type { NodeResult } from '../types.js';

/** Everything from a peer crosses a trust boundary (docs/protocol/openwop.md, "Trust boundary"). */
const UNTRUSTED = { contentTrust: 'untrusted' } as const;

const untrustedParts = (parts: PeerPart[]) => parts.map((p) => ({ ...p, ...UNTRUSTED }));
const untrustedArtifact = (a: PeerArtifact) => ({ ...a, parts: untrustedParts(a.parts), ...UNTRUSTED });
const untrustedMessage = (m: PeerStatusMessage) => ({ text: m.text, parts: untrustedParts(m.parts), ...UNTRUSTED });

/** Who the node called, as recorded with each outcome. */
export interface CallInfo {
  agent: string;
  protocolVersion: string;
  binding: string;
}

/** The node's output for a peer task: {taskId, contextId, state, artifacts, message?}, all untrusted. */
export function outputOf(task: PeerTask): Record<string, unknown> {
  return {
    taskId: task.taskId,
    contextId: task.contextId,
    state: task.state,
    artifacts: task.artifacts.map(untrustedArtifact),
    ...(task.statusMessage ? { message: untrustedMessage(task.statusMessage) } : {}),
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
  task: PeerTask,
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
      peerTimestamp: task.peerTimestamp ?? null,
      recordedAt: new Date(now).toISOString(),
    },
  };
}

/** A terminal peer task as the node's outcome; undefined while the task is not terminal. */
export function terminalResult(task: PeerTask, call: CallInfo, now: number): NodeResult | undefined {
  const output = outputOf(task);
  const detail = replayRecord(task, call, now, output);
  const said = task.statusMessage?.text;
  const details = { ...detail, peerTaskId: task.taskId, agent: call.agent };
  switch (task.state) {
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
export function questionOf(task: PeerTask, agent: string): Record<string, unknown> {
  const auth = task.state === 'auth-required';
  const text =
    task.statusMessage?.text ||
    openwopQuestions(task) ||
    (auth ? 'The agent asks for credentials.' : 'The agent asks for input.');
  return {
    title: `Agent '${agent}' asks`,
    questions: [{ id: 'answer', question: text }],
    peer: { agent, taskId: task.taskId, contextId: task.contextId, state: task.state },
    ...(task.statusMessage ? { message: untrustedMessage(task.statusMessage) } : {}),
    ...(auth ? { subkind: 'auth', metadata: { subkind: 'auth' } } : {}),
    ...UNTRUSTED,
  };
}

/** An OpenWOP peer (another Handoff) names its questions in `metadata.openwop.interrupt.questions`. */
function openwopQuestions(task: PeerTask): string | undefined {
  const openwop = task.metadata?.openwop as { interrupt?: { questions?: unknown } } | undefined;
  const qs = openwop?.interrupt?.questions;
  if (!Array.isArray(qs)) return undefined;
  const texts = qs.map((q) => (q && typeof q === 'object' ? (q as { question?: unknown }).question : undefined));
  const joined = texts.filter((t): t is string => typeof t === 'string').join('\n');
  return joined || undefined;
}
