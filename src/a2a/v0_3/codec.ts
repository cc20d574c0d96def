// The A2A 0.3 edge adapter: neutral model (../model.ts) ↔ the 0.3 JSON-RPC wire (types.ts), the
// way a2a-go's a2acompat/a2av0 sits beside its 1.0 core. `kind` on every object, lowercase states,
// `final` on status updates, data parts holding objects only (anything else travels as `{value}`).
// Objects are written in the field order the 0.3 projection has always used, so a Task, event or
// push body is byte-identical to the one Handoff sent when 0.3 was its internal form.
import { isPlainObject } from '../values.js';
import { invalidAgentResponse, unsupportedOperation } from '../errors.js';
import { validateParams } from '../jsonrpc.js';
import type * as N from '../model.js';
import type * as W from './types.js';
import { methodName } from '../versions.js';
import { artifactUpdateFields, compact, counted, taskFields, type WireCodec } from '../codec/codec.js';
import { jsonRpcErrorV0_3 } from '../codec/error-forms.js';

// ---------------------------------------------------------------- neutral → wire

function encodePart(p: N.Part): W.Part {
  switch (p.kind) {
    case 'text':
      return compact({ kind: 'text', text: p.text, metadata: p.metadata });
    case 'data':
      // The 0.3 wire has object data only; the projection has always wrapped a bare value.
      return compact({
        kind: 'data',
        data: isPlainObject(p.data) ? p.data : { value: p.data ?? null },
        metadata: p.metadata,
      });
    case 'file': {
      const file = p.bytes !== undefined ? { bytes: p.bytes } : { uri: p.uri };
      return compact({
        kind: 'file',
        file: compact({ ...file, name: p.name, mimeType: p.mediaType }),
        metadata: p.metadata,
      });
    }
  }
}

function encodeMessage(m: N.Message): W.Message {
  return compact({
    kind: 'message',
    messageId: m.messageId,
    role: m.role,
    taskId: m.taskId,
    contextId: m.contextId,
    parts: m.parts.map(encodePart),
    referenceTaskIds: m.referenceTaskIds,
    extensions: m.extensions,
    metadata: m.metadata,
  });
}

const encodeArtifact = (a: N.Artifact): W.Artifact =>
  compact({
    artifactId: a.artifactId,
    parts: a.parts.map(encodePart),
    name: a.name,
    description: a.description,
    metadata: a.metadata,
    extensions: a.extensions,
  });

const encodeStatus = (s: N.TaskStatus): W.TaskStatus =>
  compact({
    state: s.state,
    timestamp: s.timestamp,
    message: s.message && encodeMessage(s.message),
  });

/** Empty artifacts and history are left out, as the 0.3 projection always did. */
function encodeTask(t: N.TaskView): W.Task {
  const artifacts = t.artifacts?.length ? t.artifacts.map(encodeArtifact) : undefined;
  const history = t.history?.length ? t.history.map(encodeMessage) : undefined;
  return compact({ kind: 'task', ...taskFields(t, encodeStatus(t.status), artifacts, history) });
}

function encodeStatusUpdate(u: N.StatusUpdate, final: boolean): W.TaskStatusUpdateEvent {
  return compact({
    kind: 'status-update',
    taskId: u.taskId,
    contextId: u.contextId,
    status: encodeStatus(u.status),
    final,
    metadata: u.metadata,
  });
}

function encodeArtifactUpdate(u: N.ArtifactUpdate): W.TaskArtifactUpdateEvent {
  return compact({ kind: 'artifact-update', ...artifactUpdateFields(u, encodeArtifact(u.artifact)) });
}

function encodeStreamEvent(e: N.StreamEvent, final: boolean) {
  switch (e.kind) {
    case 'task':
      return encodeTask(e.task);
    case 'message':
      return encodeMessage(e.message);
    case 'status-update':
      return encodeStatusUpdate(e.update, final);
    case 'artifact-update':
      return encodeArtifactUpdate(e.update);
  }
}

function encodePushConfig(c: N.PushConfig): W.TaskPushNotificationConfig {
  return {
    taskId: c.taskId,
    pushNotificationConfig: compact({ id: c.id, url: c.url, token: c.token, authentication: c.authentication }),
  };
}

// ---------------------------------------------------------------- wire → neutral

function decodePart(p: W.Part): N.Part {
  switch (p.kind) {
    case 'text':
      return compact({ kind: 'text', text: p.text, metadata: p.metadata });
    case 'data':
      return compact({ kind: 'data', data: p.data, metadata: p.metadata });
    case 'file': {
      const f = p.file as { bytes?: string; uri?: string; name?: string; mimeType?: string };
      const body = f.bytes !== undefined ? { bytes: f.bytes } : { uri: f.uri as string };
      return compact({ kind: 'file', ...body, name: f.name, mediaType: f.mimeType, metadata: p.metadata });
    }
  }
}

export function decodeMessage(m: W.Message): N.Message {
  return compact({
    messageId: m.messageId,
    role: m.role,
    parts: m.parts.map(decodePart),
    taskId: m.taskId,
    contextId: m.contextId,
    referenceTaskIds: m.referenceTaskIds,
    extensions: m.extensions,
    metadata: m.metadata,
  });
}

const decodeArtifact = (a: W.Artifact): N.Artifact =>
  compact({
    artifactId: a.artifactId,
    name: a.name,
    description: a.description,
    parts: a.parts.map(decodePart),
    metadata: a.metadata,
    extensions: a.extensions,
  });

/** 0.3's `unknown` has no neutral state: a peer that answers it gave no usable answer. */
function decodeStatus(s: W.TaskStatus): N.TaskStatus {
  if (s.state === 'unknown') throw invalidAgentResponse('task state "unknown" has no meaning here');
  return compact({ state: s.state, message: s.message && decodeMessage(s.message), timestamp: s.timestamp });
}

export function decodeTask(t: W.Task): N.TaskView {
  const { artifacts, history } = t;
  return compact(taskFields(t, decodeStatus(t.status), artifacts?.map(decodeArtifact), history?.map(decodeMessage)));
}

/** A stream item (or push body) → the neutral event; a status update's `final` is returned beside it. */
export function decodeStreamEvent(e: W.Task | W.Message | W.TaskStatusUpdateEvent | W.TaskArtifactUpdateEvent): {
  event: N.StreamEvent;
  final: boolean;
} {
  switch (e.kind) {
    case 'task':
      return { event: { kind: 'task', task: decodeTask(e) }, final: false };
    case 'message':
      return { event: { kind: 'message', message: decodeMessage(e) }, final: true };
    case 'status-update': {
      const update = compact({
        taskId: e.taskId,
        contextId: e.contextId,
        status: decodeStatus(e.status),
        metadata: e.metadata,
      });
      return { event: { kind: 'status-update', update }, final: e.final };
    }
    case 'artifact-update': {
      const update = compact(artifactUpdateFields(e, decodeArtifact(e.artifact)));
      return { event: { kind: 'artifact-update', update }, final: false };
    }
  }
}

// ---------------------------------------------------------------- requests

/** Empty ids and tokens mean "none", as the 0.3 handlers have always read them. */
const pushConfigInput = (c: W.PushNotificationConfig): N.PushConfigInput =>
  compact({ id: c.id || undefined, url: c.url, token: c.token || undefined, authentication: c.authentication });

function decodeSend(p: W.MessageSendParams): N.SendRequest {
  const c = p.configuration;
  return compact({
    message: decodeMessage(p.message),
    configuration: compact({
      blocking: c?.blocking !== false,
      historyLength: c?.historyLength,
      acceptedOutputModes: c?.acceptedOutputModes,
      pushConfig: c?.pushNotificationConfig && pushConfigInput(c.pushNotificationConfig),
    }),
    metadata: p.metadata,
  });
}

/** Params of a 0.3 method (validated here, with jsonrpc.ts's schemas) → the neutral request. */
function decodeRequest<O extends N.Operation>(operation: O, params: unknown): N.RequestOf[O] {
  const method = methodName('0.3', operation);
  if (method === undefined) throw unsupportedOperation(`${operation} is not an A2A 0.3 operation`);
  const bad = validateParams(method, params);
  if (bad) throw bad;
  return decodeValid(operation, params ?? {}) as N.RequestOf[O];
}

function decodeValid(operation: N.Operation, params: unknown): N.RequestOf[N.Operation] {
  switch (operation) {
    case 'send':
    case 'stream':
      return decodeSend(params as W.MessageSendParams);
    case 'get': {
      const p = params as W.TaskQueryParams;
      return compact({ id: p.id, historyLength: p.historyLength });
    }
    case 'cancel':
    case 'subscribe': {
      const p = params as W.TaskIdParams;
      return compact({ id: p.id, metadata: p.metadata });
    }
    case 'push.create': {
      const p = params as W.TaskPushNotificationConfig;
      return { taskId: p.taskId, config: pushConfigInput(p.pushNotificationConfig) };
    }
    case 'push.get': {
      const p = params as W.GetTaskPushNotificationConfigParams;
      return compact({ taskId: p.id, id: p.pushNotificationConfigId ?? undefined });
    }
    case 'push.list':
      return { taskId: (params as W.ListTaskPushNotificationConfigParams).id };
    case 'push.delete': {
      const p = params as W.DeleteTaskPushNotificationConfigParams;
      return { taskId: p.id, id: p.pushNotificationConfigId };
    }
    case 'card.extended':
      return {};
    case 'list':
      // Unreachable: methodName('0.3', 'list') is undefined, so decodeRequest refused it.
      throw unsupportedOperation('ListTasks is not an A2A 0.3 operation');
  }
}

export const v0_3: WireCodec = counted({
  version: '0.3',
  decodeRequest,
  encodeSendResult: (result) => (result.kind === 'task' ? encodeTask(result.task) : encodeMessage(result.message)),
  encodeTask,
  encodeStreamEvent,
  encodePushConfig,
  encodePushConfigList: (configs) => configs.map(encodePushConfig),
  encodeError: jsonRpcErrorV0_3,
});
