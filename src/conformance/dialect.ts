// The A2A version the suite speaks at the card's JSON-RPC endpoint: 0.3 (no header, slash method
// names, results told apart by `kind`) or 1.0 (`A2A-Version: 1.0`, the 1.0 method names, stream
// events as StreamResponse members, states as TASK_STATE_*). The legs read every result in the
// 0.3 shape; `result` gives them a 1.0 answer in it, so each check says the same thing of both.
// Like the rest of the suite it knows the wire only, no Handoff internals.
//
//   const d = DIALECTS['1.0'];
//   await ctx.http.rpc(url, d.methods.get, { id }, { auth: true, headers: d.headers });
//   pick(d.result(pick(answer.json, 'result')), 'status.state')   // 'input-required'
import { randomUUID } from 'node:crypto';
import { isObject, TERMINAL_STATES } from './context.js';

export const A2A_VERSIONS = ['0.3', '1.0'] as const;
export type A2AVersion = (typeof A2A_VERSIONS)[number];

/** A probe message part: text or a data object. */
export type ProbePart = { text: string } | { data: Record<string, unknown> };

export interface Dialect {
  version: A2AVersion;
  /** Sent with every JSON-RPC request. */
  headers: Record<string, string>;
  methods: { get: string; cancel: string; stream: string; subscribe: string };
  /** A user message with these parts (and the skill in its metadata), in this version's shape. */
  message(parts: ProbePart[], skillId?: string): Record<string, unknown>;
  /** A JSON-RPC result in the 0.3 shape: `{kind: 'task' | 'status-update' | …, …}`. */
  result(result: unknown): unknown;
}

type Rec = Record<string, unknown>;

const V03: Dialect = {
  version: '0.3',
  headers: {},
  methods: { get: 'tasks/get', cancel: 'tasks/cancel', stream: 'message/stream', subscribe: 'tasks/resubscribe' },
  message: (parts, skillId) => ({
    kind: 'message',
    messageId: `conf-${randomUUID()}`,
    role: 'user',
    parts: parts.map((p) => ('text' in p ? { kind: 'text', ...p } : { kind: 'data', ...p })),
    ...(skillId ? { metadata: { skillId } } : {}),
  }),
  result: (r) => r,
};

/** TASK_STATE_INPUT_REQUIRED → input-required (other values as they are, so evidence shows them). */
function state03(state: unknown): unknown {
  if (typeof state !== 'string' || !state.startsWith('TASK_STATE_')) return state;
  return state.slice('TASK_STATE_'.length).toLowerCase().replace(/_/g, '-');
}

function withState(value: Rec): Rec {
  if (!isObject(value.status)) return value;
  return { ...value, status: { ...value.status, state: state03(value.status.state) } };
}

/**
 * A 1.0 result → the 0.3 shape. A StreamResponse member is unwrapped and given its `kind`; 1.0
 * has no `final` (its stream ends by closing), so a status update into a terminal state is final.
 * A bare Task (GetTask, CancelTask) is a task.
 */
function result10(r: unknown): unknown {
  if (!isObject(r)) return r;
  if (isObject(r.task)) return { kind: 'task', ...withState(r.task) };
  if (isObject(r.message)) return { kind: 'message', ...r.message };
  if (isObject(r.statusUpdate)) {
    const u = withState(r.statusUpdate);
    const state = isObject(u.status) ? u.status.state : undefined;
    return { kind: 'status-update', ...u, final: TERMINAL_STATES.has(String(state)) };
  }
  if (isObject(r.artifactUpdate)) return { kind: 'artifact-update', ...r.artifactUpdate };
  if (typeof r.id === 'string' && isObject(r.status)) return { kind: 'task', ...withState(r) };
  return r;
}

const V10: Dialect = {
  version: '1.0',
  headers: { 'A2A-Version': '1.0' },
  methods: { get: 'GetTask', cancel: 'CancelTask', stream: 'SendStreamingMessage', subscribe: 'SubscribeToTask' },
  message: (parts, skillId) => ({
    messageId: `conf-${randomUUID()}`,
    role: 'ROLE_USER',
    parts,
    ...(skillId ? { metadata: { skillId } } : {}),
  }),
  result: result10,
};

export const DIALECTS: Readonly<Record<A2AVersion, Dialect>> = { '0.3': V03, '1.0': V10 };
