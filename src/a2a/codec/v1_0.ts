// Neutral model ↔ A2A 1.0 wire: ProtoJSON of the lf.a2a.v1 proto (https://github.com/a2aproject/A2A,
// specification/a2a.proto). No `kind`: a oneof is told by its member name (`{text}` | `{raw}` |
// `{url}` | `{data}` parts; `{task}` | `{message}` | `{statusUpdate}` | `{artifactUpdate}`
// responses); enums by name (`TASK_STATE_*`, `ROLE_*`); no `final` flag; push configs flat.
//
// Requests are validated (params-schema.ts) before they are read: a wrong type, an unknown enum
// name or a part with none or two contents is -32602 naming the field. Fields are camelCase as
// ProtoJSON writes them; unknown fields are ignored; a proto3 empty string means "not set".
import { invalidAgentResponse, invalidParams } from '../errors.js';
import { jsonRpcErrorV1 } from './error-forms.js';
import type * as N from '../model.js';
import { decodePageToken } from '../page-token.js';
import { bool, compileParams, nonEmpty, obj, type ParamsCheck, str, strArray } from '../params-schema.js';
import { artifactUpdateFields, compact, counted, taskFields, type WireCodec } from './codec.js';

// ---------------------------------------------------------------- wire types (ProtoJSON)

export type V1TaskState =
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_REJECTED'
  | 'TASK_STATE_AUTH_REQUIRED';
export type V1Role = 'ROLE_USER' | 'ROLE_AGENT';

/** Exactly one of text, raw (base64), url, data. */
export interface V1Part {
  text?: string;
  raw?: string;
  url?: string;
  data?: unknown;
  metadata?: N.Metadata;
  filename?: string;
  mediaType?: string;
}

export interface V1Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: V1Role;
  parts: V1Part[];
  metadata?: N.Metadata;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface V1Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: V1Part[];
  metadata?: N.Metadata;
  extensions?: string[];
}

export interface V1TaskStatus {
  state: V1TaskState;
  message?: V1Message;
  timestamp?: string;
}

export interface V1Task {
  id: string;
  contextId: string;
  status: V1TaskStatus;
  artifacts?: V1Artifact[];
  history?: V1Message[];
  metadata?: N.Metadata;
}

export interface V1StatusUpdate {
  taskId: string;
  contextId: string;
  status: V1TaskStatus;
  metadata?: N.Metadata;
}

export interface V1ArtifactUpdate {
  taskId: string;
  contextId: string;
  artifact: V1Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: N.Metadata;
}

/** StreamResponse (and, minus the two events, SendMessageResponse): exactly one member. */
export type V1StreamResponse =
  | { task: V1Task }
  | { message: V1Message }
  | { statusUpdate: V1StatusUpdate }
  | { artifactUpdate: V1ArtifactUpdate };

export interface V1PushConfig {
  id: string;
  taskId: string;
  url: string;
  token?: string;
  /** 1.0 names one scheme (IANA HTTP auth scheme, e.g. "Bearer"). */
  authentication?: { scheme: string; credentials?: string };
}

export interface V1ListTasksResponse {
  tasks: V1Task[];
  /** Always present; "" on the last page. */
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

// ---------------------------------------------------------------- enums

const STATE_TO_WIRE: Readonly<Record<N.TaskState, V1TaskState>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELED',
  rejected: 'TASK_STATE_REJECTED',
};
const STATE_FROM_WIRE = new Map<string, N.TaskState>(
  Object.entries(STATE_TO_WIRE).map(([neutral, wire]) => [wire, neutral as N.TaskState]),
);

/** A wire state name → neutral; an unknown name is a peer's answer we cannot use. */
function decodeState(state: string): N.TaskState {
  const s = STATE_FROM_WIRE.get(state);
  if (!s) throw invalidAgentResponse(`unknown task state ${JSON.stringify(state)}`);
  return s;
}

// ---------------------------------------------------------------- neutral → wire

function encodePart(p: N.Part): V1Part {
  switch (p.kind) {
    case 'text':
      return compact({ text: p.text, metadata: p.metadata, mediaType: p.mediaType });
    case 'data':
      return compact({ data: p.data, metadata: p.metadata, mediaType: p.mediaType });
    case 'file':
      return compact({ raw: p.bytes, url: p.uri, metadata: p.metadata, filename: p.name, mediaType: p.mediaType });
  }
}

export const encodeMessage = (m: N.Message): V1Message =>
  compact({
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT',
    parts: m.parts.map(encodePart),
    metadata: m.metadata,
    extensions: m.extensions,
    referenceTaskIds: m.referenceTaskIds,
  });

const encodeArtifact = (a: N.Artifact): V1Artifact =>
  compact({
    artifactId: a.artifactId,
    name: a.name,
    description: a.description,
    parts: a.parts.map(encodePart),
    metadata: a.metadata,
    extensions: a.extensions,
  });

const encodeStatus = (s: N.TaskStatus): V1TaskStatus =>
  compact({ state: STATE_TO_WIRE[s.state], message: s.message && encodeMessage(s.message), timestamp: s.timestamp });

/** `artifacts` is written whenever the view has it, `[]` included (ListTasks with includeArtifacts). */
const encodeTask = (t: N.TaskView): V1Task =>
  compact(taskFields(t, encodeStatus(t.status), t.artifacts?.map(encodeArtifact), t.history?.map(encodeMessage)));

function encodeStreamEvent(e: N.StreamEvent): V1StreamResponse {
  switch (e.kind) {
    case 'task':
      return { task: encodeTask(e.task) };
    case 'message':
      return { message: encodeMessage(e.message) };
    case 'status-update': {
      const u = e.update;
      return {
        statusUpdate: compact({
          taskId: u.taskId,
          contextId: u.contextId,
          status: encodeStatus(u.status),
          metadata: u.metadata,
        }),
      };
    }
    case 'artifact-update':
      return { artifactUpdate: compact(artifactUpdateFields(e.update, encodeArtifact(e.update.artifact))) };
  }
}

/** The neutral schemes list becomes the one 1.0 scheme (its first); no scheme, no authentication. */
const encodePushConfig = (c: N.PushConfig): V1PushConfig =>
  compact({
    id: c.id,
    taskId: c.taskId,
    url: c.url,
    token: c.token,
    authentication: c.authentication?.schemes[0]
      ? compact({ scheme: c.authentication.schemes[0], credentials: c.authentication.credentials })
      : undefined,
  });

/**
 * ListTasksResponse as JSON text, around its tasks already serialized as one JSON array (each an
 * `encodeTask`ed view carrying what the request asked for: a page is cut by their size, so they
 * are serialized once, while it is filled). The members in V1ListTasksResponse's order.
 */
export function listTasksResponseText(page: {
  tasks: string;
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}): string {
  const rest: Omit<V1ListTasksResponse, 'tasks'> = {
    nextPageToken: page.nextPageToken,
    pageSize: page.pageSize,
    totalSize: page.totalSize,
  };
  return `{"tasks":${page.tasks},${JSON.stringify(rest).slice(1)}`;
}

// ---------------------------------------------------------------- wire → neutral

/** proto3: an empty string is an unset field. */
const set = (s: string | undefined): string | undefined => (s === '' ? undefined : s);

/** ProtoJSON bytes may be URL-safe or unpadded base64; the neutral model keeps standard base64. */
const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const standardBase64 = (b64: string): string =>
  STANDARD_BASE64.test(b64) && b64.length % 4 === 0 ? b64 : Buffer.from(b64, 'base64').toString('base64');

function decodePart(p: V1Part): N.Part {
  const common = { metadata: p.metadata, mediaType: set(p.mediaType) };
  if (p.text !== undefined) return compact({ kind: 'text', text: p.text, ...common });
  if (p.raw !== undefined) {
    return compact({ kind: 'file', bytes: standardBase64(p.raw), name: set(p.filename), ...common });
  }
  if (p.url !== undefined) return compact({ kind: 'file', uri: p.url, name: set(p.filename), ...common });
  return compact({ kind: 'data', data: p.data, ...common });
}

export function decodeMessage(m: V1Message): N.Message {
  return compact({
    messageId: m.messageId,
    role: m.role === 'ROLE_AGENT' ? 'agent' : 'user',
    parts: m.parts.map(decodePart),
    taskId: set(m.taskId),
    contextId: set(m.contextId),
    referenceTaskIds: m.referenceTaskIds,
    extensions: m.extensions,
    metadata: m.metadata,
  });
}

const decodeArtifact = (a: V1Artifact): N.Artifact =>
  compact({
    artifactId: a.artifactId,
    name: set(a.name),
    description: set(a.description),
    parts: a.parts.map(decodePart),
    metadata: a.metadata,
    extensions: a.extensions,
  });

const decodeStatus = (s: V1TaskStatus): N.TaskStatus =>
  compact({ state: decodeState(s.state), message: s.message && decodeMessage(s.message), timestamp: s.timestamp });

/** A peer's Task (ProtoJSON) → the neutral view. Not validated: for answers of a trusted shape. */
export const decodeTask = (t: V1Task): N.TaskView =>
  compact(taskFields(t, decodeStatus(t.status), t.artifacts?.map(decodeArtifact), t.history?.map(decodeMessage)));

/** A StreamResponse (or SendMessageResponse) → the neutral event. */
export function decodeStreamEvent(r: V1StreamResponse): N.StreamEvent {
  if ('task' in r) return { kind: 'task', task: decodeTask(r.task) };
  if ('message' in r) return { kind: 'message', message: decodeMessage(r.message) };
  if ('statusUpdate' in r) {
    const u = r.statusUpdate;
    const update = compact({
      taskId: u.taskId,
      contextId: u.contextId,
      status: decodeStatus(u.status),
      metadata: u.metadata,
    });
    return { kind: 'status-update', update };
  }
  const update = compact(artifactUpdateFields(r.artifactUpdate, decodeArtifact(r.artifactUpdate.artifact)));
  return { kind: 'artifact-update', update };
}

// ---------------------------------------------------------------- request schemas

const int32 = 2_147_483_647;
const historyLength = { type: 'integer', minimum: 0, maximum: int32, hint: 'must be an integer >= 0' } as const;
const tenant = str;

const part = {
  type: 'object',
  hint: 'must be a part with exactly one of text, raw, url or data',
  properties: {
    text: str,
    raw: { type: 'string', pattern: '^[A-Za-z0-9+/_-]*={0,2}$', hint: 'must be base64' },
    url: nonEmpty,
    data: {},
    metadata: obj,
    filename: str,
    mediaType: str,
  },
  oneOf: [{ required: ['text'] }, { required: ['raw'] }, { required: ['url'] }, { required: ['data'] }],
};

const message = {
  type: 'object',
  hint: 'must be an object',
  required: ['messageId', 'role', 'parts'],
  properties: {
    messageId: nonEmpty,
    contextId: str,
    taskId: str,
    role: { enum: ['ROLE_USER', 'ROLE_AGENT'], hint: 'must be "ROLE_USER" or "ROLE_AGENT"' },
    parts: { type: 'array', minItems: 1, items: part, hint: 'must be a non-empty array of parts' },
    metadata: obj,
    extensions: strArray,
    referenceTaskIds: strArray,
  },
};

const authentication = {
  type: 'object',
  hint: 'must be an object with a scheme string',
  required: ['scheme'],
  properties: { scheme: nonEmpty, credentials: str },
};

/** TaskPushNotificationConfig; `taskId` is required where the config is the whole request. */
const pushConfigProperties = { tenant, id: str, taskId: str, url: nonEmpty, token: str, authentication };

const sendMessage = {
  type: 'object',
  required: ['message'],
  properties: {
    tenant,
    message,
    configuration: {
      type: 'object',
      hint: 'must be an object',
      properties: {
        acceptedOutputModes: strArray,
        taskPushNotificationConfig: {
          type: 'object',
          hint: 'must be an object with a url string',
          required: ['url'],
          properties: pushConfigProperties,
        },
        historyLength,
        returnImmediately: bool,
      },
    },
    metadata: obj,
  },
};

/** TaskState names a filter accepts. UNSPECIFIED (and "UNRECOGNIZED", which the official 1.3 client
 * sends for an unset filter) mean no filter; the 0.3 spellings are accepted as the REST binding's
 * own example (`?status=working`) uses them. */
const NO_FILTER = new Set(['TASK_STATE_UNSPECIFIED', 'UNRECOGNIZED']);
const STATUS_FILTERS = [...STATE_FROM_WIRE.keys(), ...NO_FILTER, ...Object.keys(STATE_TO_WIRE)];

const taskId = { type: 'object', required: ['id'], properties: { tenant, id: nonEmpty } };
const configRef = {
  type: 'object',
  required: ['taskId', 'id'],
  properties: { tenant, taskId: nonEmpty, id: nonEmpty },
};

const schemas: Readonly<Record<N.Operation, object>> = {
  send: sendMessage,
  stream: sendMessage,
  get: { type: 'object', required: ['id'], properties: { tenant, id: nonEmpty, historyLength } },
  list: {
    type: 'object',
    properties: {
      tenant,
      contextId: str,
      status: { enum: STATUS_FILTERS, hint: 'must be a TaskState name such as "TASK_STATE_WORKING"' },
      pageSize: { type: 'integer', minimum: 1, maximum: 100, hint: 'must be an integer from 1 to 100' },
      pageToken: str,
      historyLength,
      statusTimestampAfter: {
        type: 'string',
        format: 'date-time',
        hint: 'must be an ISO 8601 date-time with a time zone, e.g. "2026-01-31T09:00:00Z"',
      },
      includeArtifacts: bool,
    },
  },
  cancel: { ...taskId, properties: { ...taskId.properties, metadata: obj } },
  subscribe: taskId,
  'push.create': {
    type: 'object',
    required: ['taskId', 'url'],
    properties: { ...pushConfigProperties, taskId: nonEmpty },
  },
  'push.get': configRef,
  'push.delete': configRef,
  'push.list': {
    type: 'object',
    required: ['taskId'],
    properties: {
      tenant,
      taskId: nonEmpty,
      pageSize: { type: 'integer', minimum: 0, maximum: 100, hint: 'must be an integer from 0 to 100' },
      pageToken: str,
    },
  },
  'card.extended': { type: 'object', properties: { tenant } },
};

const checks = new Map<N.Operation, ParamsCheck>(
  Object.entries(schemas).map(([op, schema]) => [op as N.Operation, compileParams(schema)]),
);

// ---------------------------------------------------------------- requests

type Wire = Record<string, unknown>;

/** The 1.0 flat config → the neutral input (one scheme becomes the schemes list). */
function pushConfigInput(c: Wire): N.PushConfigInput {
  const auth = c.authentication as { scheme: string; credentials?: string } | undefined;
  return compact({
    id: set(c.id as string | undefined),
    url: c.url as string,
    token: set(c.token as string | undefined),
    authentication: auth && compact({ schemes: [auth.scheme], credentials: set(auth.credentials) }),
  });
}

function decodeSend(p: Wire): N.SendRequest {
  const c = (p.configuration ?? {}) as Wire;
  const push = c.taskPushNotificationConfig as Wire | undefined;
  return compact({
    tenant: set(p.tenant as string | undefined),
    message: decodeMessage(p.message as V1Message),
    configuration: compact({
      blocking: c.returnImmediately !== true,
      historyLength: c.historyLength as number | undefined,
      acceptedOutputModes: c.acceptedOutputModes as string[] | undefined,
      pushConfig: push && pushConfigInput(push),
    }),
    metadata: p.metadata as N.Metadata | undefined,
  });
}

function decodeList(p: Wire, root: string): N.ListTasksRequest {
  const status = p.status as string | undefined;
  const token = set(p.pageToken as string | undefined);
  const after = p.statusTimestampAfter as string | undefined;
  return compact({
    tenant: set(p.tenant as string | undefined),
    contextId: set(p.contextId as string | undefined),
    state:
      status === undefined || NO_FILTER.has(status)
        ? undefined
        : (STATE_FROM_WIRE.get(status) ?? (status as N.TaskState)),
    // Stored timestamps are toISOString() text: the bound is compared in the same form.
    statusTimestampAfter: after === undefined ? undefined : new Date(after).toISOString(),
    pageSize: (p.pageSize as number | undefined) ?? 50,
    after: token === undefined ? undefined : decodePageToken(token, root ? `${root}.pageToken` : 'pageToken'),
    historyLength: p.historyLength as number | undefined,
    includeArtifacts: p.includeArtifacts === true,
  });
}

function decodeValid(operation: N.Operation, p: Wire, root: string): N.RequestOf[N.Operation] {
  // `tenant` is written out in each object, not spread in: V8 builds `{...x, id}` (a spread
  // followed by properties) on a slow path, a few µs per request (bench `get-v1`).
  const tenant = set(p.tenant as string | undefined);
  switch (operation) {
    case 'send':
    case 'stream':
      return decodeSend(p);
    case 'get':
      return compact({ tenant, id: p.id as string, historyLength: p.historyLength as number | undefined });
    case 'list':
      return decodeList(p, root);
    case 'cancel':
      return compact({ tenant, id: p.id as string, metadata: p.metadata as N.Metadata | undefined });
    case 'subscribe':
      return compact({ tenant, id: p.id as string });
    case 'push.create':
      return compact({ tenant, taskId: p.taskId as string, config: pushConfigInput(p) });
    case 'push.get':
    case 'push.delete':
      return compact({ tenant, taskId: p.taskId as string, id: p.id as string });
    case 'push.list':
      return compact({
        tenant,
        taskId: p.taskId as string,
        // proto3: 0 is "not set", i.e. the server's default.
        pageSize: (p.pageSize as number | undefined) || undefined,
        pageToken: set(p.pageToken as string | undefined),
      });
    case 'card.extended':
      return compact({ tenant });
  }
}

/**
 * A 1.0 request message (JSON-RPC params, or what a REST route assembled from path, query and
 * body) → the neutral request. `root` prefixes field names in messages: `params` for JSON-RPC,
 * '' for REST. Throws -32602 naming the first offending field.
 */
export function decodeV1Request<O extends N.Operation>(operation: O, value: unknown, root: string): N.RequestOf[O] {
  // GetExtendedAgentCard takes no params; every other method needs its request message.
  const p = value === undefined && operation === 'card.extended' ? {} : value;
  if (p === undefined) throw invalidParams(`${root || 'request'}: is required`);
  if (typeof p !== 'object' || p === null || Array.isArray(p)) {
    throw invalidParams(`${root || 'request'}: must be an object`);
  }
  const bad = (checks.get(operation) as ParamsCheck)(p, root);
  if (bad) throw bad;
  return decodeValid(operation, p as Wire, root) as N.RequestOf[O];
}

export const v1_0: WireCodec = counted({
  version: '1.0',
  decodeRequest: (operation, params) => decodeV1Request(operation, params, 'params'),
  encodeSendResult: (result) =>
    result.kind === 'task' ? { task: encodeTask(result.task) } : { message: encodeMessage(result.message) },
  encodeTask,
  encodeStreamEvent: (event) => encodeStreamEvent(event),
  encodePushConfig,
  encodePushConfigList: (configs, nextPageToken) => ({ configs: configs.map(encodePushConfig), nextPageToken }),
  encodeError: jsonRpcErrorV1,
});
