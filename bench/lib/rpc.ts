// A2A v0.3 JSON-RPC bodies the scenarios send, and a one-shot POST for set-up calls. Every target
// gets byte-for-byte the same request shapes; only skill ids may differ (Target.skills).
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';

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

export const ECHO_TEXT = 'Hello from the Handoff benchmark: please echo this sentence back.';

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

/** One POST outside the load run (set-up, probes). Connection: close so it leaves nothing open. */
export function postJson(url: string, body: unknown, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        timeout: timeoutMs,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`POST ${url} timed out`)));
    req.end(data);
  });
}
