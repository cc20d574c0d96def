// JSON-RPC 2.0 envelope handling for the A2A v0.3 endpoint, and per-method params validation.
//
//   const env = parseEnvelope(JSON.parse(body));
//   if (!env.ok) return errorResponse(env.id, env.error);
//   const bad = validateParams(env.method, env.params);
//   if (bad) return errorResponse(env.id, bad);
//
// The edge cases follow what the A2A TCK checks (docs/protocol/a2a.md#v03-errors). Params schemas are open
// (A2A lets peers add fields) but typed: a known field of the wrong type is -32602 (params-schema.ts).
import type { AnySchemaObject } from 'ajv/dist/2020.js';
import { inspectJson } from '../json-guard.js';
import { type A2AError, invalidParams, invalidRequest, parseError, taskNotFound } from './errors.js';
import { type JsonRpcErrorObject, jsonRpcErrorV0_3 } from './codec/error-forms.js';
import { bool, compileParams, count, nonEmpty, obj, type ParamsCheck, str, strArray } from './params-schema.js';
import { isPlainObject } from './values.js';

export type JsonRpcId = string | number | null;

export type Envelope =
  | { ok: true; id: JsonRpcId; method: string; params: Record<string, unknown> | undefined }
  | { ok: false; id: JsonRpcId; error: A2AError };

export interface JsonRpcSuccess<T = unknown> {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: T;
}
export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: JsonRpcErrorObject;
}

/**
 * A result already serialized (a cached Task). `successText` splices it into the response as is;
 * anything else that serializes it gets the same JSON through `toJSON`.
 */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/** The success response as JSON text, splicing a RawJson result in without re-serializing it. */
export function successText(id: JsonRpcId, result: unknown): string {
  if (result instanceof RawJson) return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result.text}}`;
  return JSON.stringify(successResponse(id, result));
}

export const successResponse = <T>(id: JsonRpcId, result: T): JsonRpcSuccess<T> => ({ jsonrpc: '2.0', id, result });
export const errorResponse = (id: JsonRpcId, err: A2AError): JsonRpcFailure => ({
  jsonrpc: '2.0',
  id,
  error: jsonRpcErrorV0_3(err),
});

/** Parse raw body text; a syntax error is -32700 with id null (the id is unreadable). */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: A2AError } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, error: parseError() };
  }
}

/** JSON-RPC ids are strings, integers (no fractions) or null. An absent id answers as null. */
const isValidId = (v: unknown): v is JsonRpcId =>
  v === null || typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));

/** Path of the first empty-string key anywhere below `v`, or undefined. */
function findEmptyKey(v: unknown, path: string): string | undefined {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const hit = findEmptyKey(v[i], `${path}[${i}]`);
      if (hit) return hit;
    }
    return undefined;
  }
  if (!isPlainObject(v)) return undefined;
  // Keys, not entries: no pair allocated per property of every request, no path built for a scalar.
  for (const k of Object.keys(v)) {
    if (k === '') return path;
    const child = v[k];
    if (typeof child !== 'object' || child === null) continue;
    const hit = findEmptyKey(child, `${path}.${k}`);
    if (hit) return hit;
  }
  return undefined;
}

export function parseEnvelope(body: unknown): Envelope {
  // Batches are not part of A2A; answering them as one invalid request keeps the reply a single object.
  if (Array.isArray(body)) return fail(null, invalidRequest('Batch requests are not supported'));
  if (!isPlainObject(body)) return fail(null, invalidRequest('Request must be a JSON object'));
  if ('id' in body && !isValidId(body.id)) {
    return fail(null, invalidRequest('id must be a string, an integer or null'));
  }
  const id: JsonRpcId = (body.id as JsonRpcId | undefined) ?? null;
  if (body.jsonrpc !== '2.0') return fail(id, invalidRequest('jsonrpc must be exactly "2.0"'));
  if (typeof body.method !== 'string' || body.method === '') {
    return fail(id, invalidRequest('method must be a non-empty string'));
  }
  const params = body.params;
  if (params !== undefined && !isPlainObject(params)) {
    return fail(id, invalidParams('params must be an object'));
  }
  const emptyKeyAt = params === undefined ? undefined : findEmptyKey(params, 'params');
  if (emptyKeyAt) return fail(id, invalidParams(`${emptyKeyAt}: empty-string keys are not allowed`));
  return { ok: true, id, method: body.method, params };
}

const fail = (id: JsonRpcId, error: A2AError): Envelope => ({ ok: false, id, error });

/**
 * The depth limit, checked on the parsed body before anything else walks it (parseEnvelope,
 * validation, the engine): -32602 when the excess is inside `params`, else -32600. The id is
 * echoed when it is readable.
 */
export function tooDeep(body: unknown, maxDepth: number): { id: JsonRpcId; error: A2AError } | undefined {
  const problem = inspectJson(body, { maxDepth, root: 'request', nul: false });
  if (!problem) return undefined;
  const raw = isPlainObject(body) ? body.id : undefined;
  const id = raw !== undefined && isValidId(raw) ? raw : null;
  const inParams = problem.path.startsWith('request.params');
  const where = inParams ? problem.path.slice('request.'.length) : 'request';
  return { id, error: (inParams ? invalidParams : invalidRequest)(`${where}: ${problem.message}`) };
}

/** Where each method names an existing task (default `params.id`). */
const TASK_ID_PATH: Record<string, string[]> = {
  'message/send': ['message', 'taskId'],
  'message/stream': ['message', 'taskId'],
  'tasks/pushNotificationConfig/set': ['taskId'],
};

/**
 * U+0000 anywhere in `params`: no identifier or stored text may hold it (PostgreSQL cannot). In
 * the task id it answers exactly like an unknown task (-32001); anywhere else -32602.
 */
export function paramsProblem(method: string, params: unknown, maxDepth: number): A2AError | undefined {
  const problem = inspectJson(params, { maxDepth, root: 'params' });
  if (!problem) return undefined;
  const at = TASK_ID_PATH[method] ?? ['id'];
  if (problem.path === ['params', ...at].join('.')) {
    const taskId = at.reduce<unknown>((v, k) => (isPlainObject(v) ? v[k] : undefined), params);
    return taskNotFound(String(taskId));
  }
  return invalidParams(`${problem.path}: ${problem.message}`);
}

// ---------------------------------------------------------------- params schemas (0.3)

const pushAuth = {
  type: 'object',
  hint: 'must be an object with schemes: string[]',
  required: ['schemes'],
  properties: { schemes: strArray, credentials: str },
};

const pushConfig = {
  type: 'object',
  hint: 'must be an object with a url string',
  required: ['url'],
  properties: { url: nonEmpty, id: str, token: str, authentication: pushAuth },
};

const file = {
  type: 'object',
  hint: 'must be an object with exactly one of bytes or uri',
  properties: { bytes: str, uri: str, name: str, mimeType: str },
  oneOf: [{ required: ['bytes'] }, { required: ['uri'] }],
};

// `discriminator` makes Ajv report the failure inside the part's own kind, not across all three.
const part = {
  type: 'object',
  hint: 'must be a part of kind "text", "file" or "data"',
  required: ['kind'],
  discriminator: { propertyName: 'kind' },
  oneOf: [
    {
      properties: { kind: { const: 'text' }, text: str, metadata: obj },
      required: ['kind', 'text'],
    },
    {
      properties: { kind: { const: 'file' }, file, metadata: obj },
      required: ['kind', 'file'],
    },
    {
      properties: { kind: { const: 'data' }, data: obj, metadata: obj },
      required: ['kind', 'data'],
    },
  ],
};

const message = {
  type: 'object',
  hint: 'must be an object',
  required: ['kind', 'messageId', 'role', 'parts'],
  properties: {
    kind: { const: 'message', hint: 'must be "message"' },
    messageId: nonEmpty,
    role: { enum: ['user', 'agent'], hint: 'must be "user" or "agent"' },
    parts: { type: 'array', minItems: 1, items: part, hint: 'must be a non-empty array of parts' },
    taskId: nonEmpty,
    contextId: nonEmpty,
    referenceTaskIds: strArray,
    extensions: strArray,
    metadata: obj,
  },
};

const messageSendParams = {
  type: 'object',
  required: ['message'],
  properties: {
    message,
    configuration: {
      type: 'object',
      hint: 'must be an object',
      properties: {
        blocking: bool,
        historyLength: count,
        acceptedOutputModes: strArray,
        pushNotificationConfig: pushConfig,
      },
    },
    metadata: obj,
  },
};

const taskIdParams = { type: 'object', required: ['id'], properties: { id: nonEmpty, metadata: obj } };

const schemas: Record<string, AnySchemaObject> = {
  'message/send': messageSendParams,
  'message/stream': messageSendParams,
  'tasks/get': { ...taskIdParams, properties: { ...taskIdParams.properties, historyLength: count } },
  'tasks/cancel': taskIdParams,
  'tasks/resubscribe': taskIdParams,
  'tasks/pushNotificationConfig/set': {
    type: 'object',
    required: ['taskId', 'pushNotificationConfig'],
    properties: { taskId: nonEmpty, pushNotificationConfig: pushConfig },
  },
  'tasks/pushNotificationConfig/get': {
    type: 'object',
    required: ['id'],
    properties: {
      id: nonEmpty,
      pushNotificationConfigId: { type: ['string', 'null'], hint: 'must be a string or null' },
      metadata: obj,
    },
  },
  'tasks/pushNotificationConfig/list': taskIdParams,
  'tasks/pushNotificationConfig/delete': {
    type: 'object',
    required: ['id', 'pushNotificationConfigId'],
    properties: { id: nonEmpty, pushNotificationConfigId: nonEmpty, metadata: obj },
  },
};

/** Methods that take no params (the extended card); any object is tolerated. */
const PARAMLESS = new Set(['agent/getAuthenticatedExtendedCard']);

const validators = new Map<string, ParamsCheck>(
  Object.entries(schemas).map(([method, schema]) => [method, compileParams(schema)]),
);

/** The A2A methods this module knows params for (useful to the dispatcher's -32601). */
export const KNOWN_METHODS: ReadonlySet<string> = new Set([...validators.keys(), ...PARAMLESS]);

/** -32602 naming the first offending field, or undefined when the params fit `method`.
 * Unknown methods pass: answering them is the dispatcher's -32601. */
export function validateParams(method: string, params: unknown): A2AError | undefined {
  const check = validators.get(method);
  if (!check) return undefined;
  if (params === undefined) return invalidParams('params: is required');
  return check(params, 'params');
}
