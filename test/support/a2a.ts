// Helpers for the A2A v0.3 JSON-RPC integration tests (test/integration/a2a-rpc*.test.ts), on top
// of test/support/host.ts: JSON-RPC calls through `inject`, message builders, and the published
// JSON Schemas (A2ATaskState, the `a2a` discovery block) compiled with Ajv 2020 + formats.
//
//   const t = await startTestHost();
//   const task = await sendOk(t, textMessage('hi'));            // blocking message/send → Task
//   const err = await rpc(t, 'tasks/get', { id: 'nope' });      // Reply; body.error.code -32001
//   assertRpcError(err, -32001, 1);
//   assertSchema(validateTaskState, (await t.get(`/v1/a2a/tasks/${task.id}`)).body);
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { bearer, type Headers, type Json, REPO_ROOT, type Reply, startTestHost, type TestHost } from './host.js';

// ---------------------------------------------------------------- schemas

/** A published schema file under <repo>/schemas (REPO_ROOT walks up to package.json). */
export function loadSchema(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(REPO_ROOT, 'schemas', name), 'utf8')) as Record<string, unknown>;
}

// ajv-formats is CJS; under NodeNext its default import is the module, the plugin is `.default`.
const addFormats = addFormatsModule.default;

function compile(name: string): ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv.compile(loadSchema(name));
}

export const validateTaskState: ValidateFunction = compile('a2a-task-state.schema.json');
export const validateA2ABlock: ValidateFunction = compile('capabilities-a2a.schema.json');

export function assertSchema(validate: ValidateFunction, value: unknown, what = 'value'): void {
  const ok = validate(value);
  assert.ok(ok, `${what} does not validate: ${JSON.stringify(validate.errors)}\n${JSON.stringify(value)}`);
}

// ---------------------------------------------------------------- JSON-RPC

export const RPC_PATH = '/v1/a2a';

export interface RpcOptions {
  /** JSON-RPC id; default a fresh string. Pass `null` explicitly for a null id. */
  id?: string | number | null;
  headers?: Headers;
}

/** POST /v1/a2a with a well-formed JSON-RPC 2.0 request; `params` omitted when undefined. */
export async function rpc(t: TestHost, method: string, params?: unknown, opts: RpcOptions = {}): Promise<Reply> {
  const id = opts.id === undefined ? `req-${randomUUID()}` : opts.id;
  const body: Record<string, unknown> = { jsonrpc: '2.0', id, method };
  if (params !== undefined) body.params = params;
  return t.request('POST', RPC_PATH, body, opts.headers ?? {});
}

/** POST /v1/a2a with any body: a string is sent verbatim as application/json. */
export function rpcRaw(t: TestHost, payload: unknown, headers: Headers = {}): Promise<Reply> {
  const h: Headers = { 'content-type': 'application/json', ...headers };
  return t.request('POST', RPC_PATH, typeof payload === 'string' ? payload : JSON.stringify(payload), h);
}

/** HTTP 200, a JSON-RPC 2.0 error with `code`, the request id echoed, no result. */
export function assertRpcError(res: Reply, code: number, id: unknown): Json {
  assert.equal(res.status, 200, `HTTP status: ${res.text}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.body?.jsonrpc, '2.0', res.text);
  assert.ok(res.body.error, `expected error ${code}, got ${res.text}`);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(typeof res.body.error.message, 'string');
  assert.ok(res.body.error.message.length > 0);
  assert.ok(!('result' in res.body), `error and result both present: ${res.text}`);
  assert.deepEqual(res.body.id, id, `id not echoed: ${res.text}`);
  return res.body.error;
}

/**
 * The answer of a streaming method refused before its stream opened: HTTP 200, text/event-stream,
 * one `error` event; returns the event's data parsed.
 */
export function oneErrorEvent(res: Reply): Json {
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/, res.text);
  const frames = res.text.split('\n\n').filter((f) => f.trim() !== '');
  assert.equal(frames.length, 1, res.text);
  const lines = (frames[0] as string).split('\n');
  assert.equal(lines[0], 'event: error', res.text);
  return JSON.parse((lines.find((l) => l.startsWith('data: ')) ?? '').slice('data: '.length));
}

/** assertRpcError for a streaming method: the JSON-RPC error is the one SSE `error` event. */
export const assertSseRpcError = (res: Reply, code: number, id: unknown): Json =>
  assertRpcError(
    { ...res, headers: { ...res.headers, 'content-type': 'application/json' }, body: oneErrorEvent(res) },
    code,
    id,
  );

/** HTTP 200 and a JSON-RPC result (no error); returns the result. */
export function assertRpcResult(res: Reply, id?: unknown): Json {
  assert.equal(res.status, 200, `HTTP status: ${res.text}`);
  assert.equal(res.body?.jsonrpc, '2.0', res.text);
  assert.ok(!('error' in res.body), `unexpected error: ${res.text}`);
  if (id !== undefined) assert.deepEqual(res.body.id, id);
  return res.body.result;
}

// ---------------------------------------------------------------- messages

export interface MessageExtra {
  messageId?: string;
  taskId?: string;
  contextId?: string;
  metadata?: Record<string, unknown>;
}

/** A user Message with the given parts and a fresh messageId. */
export function message(parts: Json[], extra: MessageExtra = {}): Json {
  return {
    kind: 'message',
    role: 'user',
    messageId: extra.messageId ?? `msg-${randomUUID()}`,
    parts,
    ...withoutMessageId(extra),
  };
}

const withoutMessageId = (extra: MessageExtra): Omit<MessageExtra, 'messageId'> => {
  const { messageId: _ignored, ...rest } = extra;
  return rest;
};

export const textPart = (text: string): Json => ({ kind: 'text', text });
export const dataPart = (data: Record<string, unknown>): Json => ({ kind: 'data', data });

export const textMessage = (text: string, extra: MessageExtra = {}): Json => message([textPart(text)], extra);
export const dataMessage = (data: Record<string, unknown>, extra: MessageExtra = {}): Json =>
  message([dataPart(data)], extra);

/** A message that starts `skillId` (message.metadata.skillId). */
export const skillMessage = (skillId: string, text: string, extra: MessageExtra = {}): Json =>
  textMessage(text, { ...extra, metadata: { ...(extra.metadata ?? {}), skillId } });

export interface SendOptions {
  configuration?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  headers?: Headers;
}

/** message/send → the raw reply. */
export function send(t: TestHost, msg: Json, opts: SendOptions = {}): Promise<Reply> {
  const params: Record<string, unknown> = { message: msg };
  if (opts.configuration) params.configuration = opts.configuration;
  if (opts.metadata) params.metadata = opts.metadata;
  return rpc(t, 'message/send', params, opts.headers ? { headers: opts.headers } : {});
}

/** message/send that must succeed; returns the Task. */
export async function sendOk(t: TestHost, msg: Json, opts: SendOptions = {}): Promise<Json> {
  const task = assertRpcResult(await send(t, msg, opts));
  assert.equal(task.kind, 'task', JSON.stringify(task));
  return task;
}

/** tasks/get that must succeed; returns the Task. */
export async function getTask(t: TestHost, id: string, headers?: Headers, historyLength?: number): Promise<Json> {
  const params: Record<string, unknown> = { id };
  if (historyLength !== undefined) params.historyLength = historyLength;
  return assertRpcResult(await rpc(t, 'tasks/get', params, headers ? { headers } : {}));
}

/** GET /v1/a2a/tasks/{id}: the persisted A2ATaskState (asserts 200). */
export async function getRecord(t: TestHost, taskId: string, headers?: Headers): Promise<Json> {
  const res = await t.get(`/v1/a2a/tasks/${taskId}`, headers);
  assert.equal(res.status, 200, `GET /v1/a2a/tasks/${taskId}: ${res.text}`);
  return res.body;
}

// ---------------------------------------------------------------- a client bound to one identity

/** The calls above with one caller's headers (e.g. `bearer(KEY)`) filled in. */
export interface A2AClient {
  readonly headers: Headers;
  rpc(method: string, params?: unknown, id?: string | number | null): Promise<Reply>;
  send(msg: Json, opts?: Omit<SendOptions, 'headers'>): Promise<Reply>;
  sendOk(msg: Json, opts?: Omit<SendOptions, 'headers'>): Promise<Json>;
  getTask(id: string, historyLength?: number): Promise<Json>;
  /** GET /v1/a2a/tasks/{id} → the raw reply (status not asserted). */
  recordReply(taskId: string): Promise<Reply>;
  /** GET /v1/a2a/tasks/{id} that must be 200 → the A2ATaskState. */
  record(taskId: string): Promise<Json>;
  /** GET /v1/runs/{id} that must be 200 → the RunSnapshot. */
  run(runId: string): Promise<Json>;
}

export function a2aClient(t: TestHost, headers: Headers = {}): A2AClient {
  return {
    headers,
    rpc: (method, params, id) => rpc(t, method, params, { headers, ...(id !== undefined ? { id } : {}) }),
    send: (msg, opts = {}) => send(t, msg, { ...opts, headers }),
    sendOk: (msg, opts = {}) => sendOk(t, msg, { ...opts, headers }),
    getTask: (id, historyLength) => getTask(t, id, headers, historyLength),
    recordReply: (taskId) => t.get(`/v1/a2a/tasks/${taskId}`, headers),
    record: (taskId) => getRecord(t, taskId, headers),
    async run(runId) {
      const res = await t.get(`/v1/runs/${runId}`, headers);
      assert.equal(res.status, 200, `GET /v1/runs/${runId}: ${res.text}`);
      return res.body;
    },
  };
}

/** The first data part of the task's first artifact. */
export function artifactData(task: Json): Json {
  assert.ok(Array.isArray(task.artifacts) && task.artifacts.length > 0, `no artifacts: ${JSON.stringify(task)}`);
  const part = task.artifacts[0].parts[0];
  assert.equal(part.kind, 'data');
  return part.data;
}

/** The identities of the A2A suites: alice and bob share tenant t1; eve is tenant t2. */
export const KEY_ALICE = 'key-alice-0001';
export const KEY_BOB = 'key-bob-000001';
export const KEY_EVE = 'key-eve-000001';
export const API_KEYS = `${KEY_ALICE}=t1:alice,${KEY_BOB}=t1:bob,${KEY_EVE}=t2:eve`;

export interface A2ATeam {
  t: TestHost;
  alice: A2AClient;
  bob: A2AClient;
  eve: A2AClient;
}

/** A host with API keys for alice, bob and eve, and a client for each. */
export async function startA2ATeam(dialect: string, env: Record<string, string> = {}): Promise<A2ATeam> {
  const t = await startTestHost({ pg: dialect === 'postgres', apiKeys: API_KEYS, env });
  return {
    t,
    alice: a2aClient(t, bearer(KEY_ALICE)),
    bob: a2aClient(t, bearer(KEY_BOB)),
    eve: a2aClient(t, bearer(KEY_EVE)),
  };
}
