// The three A2A bindings the protocol scenarios compare, as the requests of one send, one reply
// into an input-required task and one get: 0.3 JSON-RPC (rpc.ts's bodies), 1.0 JSON-RPC (PascalCase
// methods, ProtoJSON params, `A2A-Version: 1.0`) and the 1.0 HTTP+JSON (REST) binding
// (`POST …/message:send`, `GET …/tasks/{id}`). Every target gets the same shapes for a binding.
//
//   const p = PROTOCOLS['rest-1.0'];
//   const req = p.sendNew(running, 'echo');           // {method, path, headers, body}
//   p.taskIdOf(answer); p.stateText('completed');     // '"state":"TASK_STATE_COMPLETED"'
import { randomUUID } from 'node:crypto';
import type { LoadRequest } from './load.js';
import type { Running } from './registry.js';
import { getTask, sendDecision, sendNew, taskIdOf } from './rpc.js';

export type ProtocolId = 'jsonrpc-0.3' | 'jsonrpc-1.0' | 'rest-1.0';

export const ALL_PROTOCOLS: readonly ProtocolId[] = ['jsonrpc-0.3', 'jsonrpc-1.0', 'rest-1.0'];

/** The states a flow waits for. */
type State = 'completed' | 'input-required';

export interface Protocol {
  id: ProtocolId;
  /** For tables: "0.3 JSON-RPC", "1.0 JSON-RPC", "1.0 REST". */
  label: string;
  /** A message starting a new task of `skillId` (fresh messageId, so idempotency never short-cuts). */
  sendNew(server: Running, skillId: string, text?: string): LoadRequest;
  /** A reply resolving an approval gate: a data part {action} into an input-required task. */
  sendDecision(server: Running, taskId: string, action?: string): LoadRequest;
  getTask(server: Running, id: string, historyLength: number): LoadRequest;
  /** The task id of a send's answer; undefined on an error or a Message. */
  taskIdOf(body: string): string | undefined;
  /** The substring an answer in `state` contains (JSON as the servers write it: no spaces). */
  stateText(state: State): string;
}

const ECHO_TEXT = 'Hello from the Handoff benchmark: please echo this sentence back.';
const V1_HEADERS = { 'A2A-Version': '1.0' };

/** The path (and query) of a server's JSON-RPC endpoint, or of its REST binding plus `suffix`. */
const rpcPath = (server: Running): string => new URL(server.url).pathname;
function restPath(server: Running, suffix: string): string {
  if (!server.restUrl) throw new Error(`${server.url}: this server has no REST binding`);
  return new URL(server.restUrl).pathname + suffix;
}

/** A 1.0 Message (ProtoJSON: role enum names, flat parts). */
const v1Message = (parts: unknown[], extra: Record<string, unknown>) => ({
  messageId: randomUUID(),
  role: 'ROLE_USER',
  parts,
  ...extra,
});
const v1New = (skillId: string, text: string) => v1Message([{ text }], { metadata: { skillId } });
const v1Decision = (taskId: string, action: string) => v1Message([{ data: { action } }], { taskId });

let nextId = 1;
const v1Rpc = (method: string, params: Record<string, unknown>) => ({ jsonrpc: '2.0', id: nextId++, method, params });

/** The id of the `{task}` a 1.0 send answered (JSON-RPC: inside `result`). */
function v1TaskId(body: string, inResult: boolean): string | undefined {
  try {
    const json = JSON.parse(body) as { result?: { task?: { id?: unknown } }; task?: { id?: unknown } };
    const id = (inResult ? json.result?.task : json.task)?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

const V1_STATE: Readonly<Record<State, string>> = {
  completed: 'TASK_STATE_COMPLETED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
};

export const PROTOCOLS: Readonly<Record<ProtocolId, Protocol>> = {
  'jsonrpc-0.3': {
    id: 'jsonrpc-0.3',
    label: '0.3 JSON-RPC',
    sendNew: (s, skillId, text) => ({ method: 'POST', path: rpcPath(s), body: sendNew(skillId, text) }),
    sendDecision: (s, taskId, action) => ({ method: 'POST', path: rpcPath(s), body: sendDecision(taskId, action) }),
    getTask: (s, id, historyLength) => ({ method: 'POST', path: rpcPath(s), body: getTask(id, historyLength) }),
    taskIdOf,
    stateText: (state) => `"state":"${state}"`,
  },
  'jsonrpc-1.0': {
    id: 'jsonrpc-1.0',
    label: '1.0 JSON-RPC',
    sendNew: (s, skillId, text = ECHO_TEXT) => ({
      method: 'POST',
      path: rpcPath(s),
      headers: V1_HEADERS,
      body: v1Rpc('SendMessage', { message: v1New(skillId, text) }),
    }),
    sendDecision: (s, taskId, action = 'accept') => ({
      method: 'POST',
      path: rpcPath(s),
      headers: V1_HEADERS,
      body: v1Rpc('SendMessage', { message: v1Decision(taskId, action) }),
    }),
    getTask: (s, id, historyLength) => ({
      method: 'POST',
      path: rpcPath(s),
      headers: V1_HEADERS,
      body: v1Rpc('GetTask', { id, historyLength }),
    }),
    taskIdOf: (body) => v1TaskId(body, true),
    stateText: (state) => `"state":"${V1_STATE[state]}"`,
  },
  'rest-1.0': {
    id: 'rest-1.0',
    label: '1.0 REST',
    sendNew: (s, skillId, text = ECHO_TEXT) => ({
      method: 'POST',
      path: restPath(s, '/message:send'),
      headers: V1_HEADERS,
      body: { message: v1New(skillId, text) },
    }),
    sendDecision: (s, taskId, action = 'accept') => ({
      method: 'POST',
      path: restPath(s, '/message:send'),
      headers: V1_HEADERS,
      body: { message: v1Decision(taskId, action) },
    }),
    getTask: (s, id, historyLength) => ({
      method: 'GET',
      path: restPath(s, `/tasks/${encodeURIComponent(id)}?historyLength=${historyLength}`),
      headers: V1_HEADERS,
    }),
    taskIdOf: (body) => v1TaskId(body, false),
    stateText: (state) => `"state":"${V1_STATE[state]}"`,
  },
};

/** The bindings a target serves (default: 0.3 JSON-RPC only). */
export const protocolsOf = (target: { protocols?: readonly ProtocolId[] }): readonly ProtocolId[] =>
  target.protocols ?? ['jsonrpc-0.3'];
