// A2A v0.3 JSON-RPC bodies the scenarios send. Every target gets byte-for-byte the same request
// shapes; only skill ids may differ (Target.skills).
import { randomUUID } from 'node:crypto';

export interface RpcRequest {
  jsonrpc: '2.0';
  id: number;
  method: string;
  params: Record<string, unknown>;
}

let nextId = 1;
const rpc = (method: string, params: Record<string, unknown>): RpcRequest => ({
  jsonrpc: '2.0',
  id: nextId++,
  method,
  params,
});

const ECHO_TEXT = 'Hello from the Handoff benchmark: please echo this sentence back.';

/** message/send starting a new task of `skillId` (fresh messageId, so idempotency never short-cuts). */
export function sendNew(skillId: string, text = ECHO_TEXT): RpcRequest {
  return rpc('message/send', {
    message: {
      kind: 'message',
      role: 'user',
      messageId: randomUUID(),
      parts: [{ kind: 'text', text }],
      metadata: { skillId },
    },
  });
}

/** message/send resolving an approval gate: a data part {action} into an input-required task. */
export function sendDecision(taskId: string, action = 'accept'): RpcRequest {
  return rpc('message/send', {
    message: {
      kind: 'message',
      role: 'user',
      messageId: randomUUID(),
      taskId,
      parts: [{ kind: 'data', data: { action } }],
    },
  });
}

export function getTask(id: string, historyLength = 10): RpcRequest {
  return rpc('tasks/get', { id, historyLength });
}

/** The task id of a JSON-RPC response whose result is a Task; undefined on error or a Message. */
export function taskIdOf(body: string): string | undefined {
  try {
    const res = JSON.parse(body) as { result?: { kind?: string; id?: unknown } };
    return res.result?.kind === 'task' && typeof res.result.id === 'string' ? res.result.id : undefined;
  } catch {
    return undefined;
  }
}
