// A2A v0.3 JSON-RPC wire objects that Handoff emits and accepts (docs/protocol/a2a.md#v03-objects), plus the
// RFC 0100 A2ATaskState record (docs/protocol/openwop.md#a2ataskstate). Types, and the state vocabulary.
//
// Every data object carries its `kind` discriminator: v0.3 lists it as required on the wire.

import type { ArtifactOf, ArtifactUpdateOf, MessageOf, TaskOf, TaskStatusOf } from './model.js';

/** The nine v0.3 wire states (lowercase-hyphen, American "canceled"). `unknown` is UNSPECIFIED. */
export const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'auth-required',
  'unknown',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** The stored vocabulary of A2ATaskState.state: the wire states minus `unknown`. */
export type StoredTaskState = Exclude<TaskState, 'unknown'>;

/** The states a task never leaves (the one list: projection, peers, CLI). */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['completed', 'canceled', 'failed', 'rejected']);
/** The states in which a task waits for its caller (a reply, credentials): a turn is over. */
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required']);

/** The interrupt kinds RFC 0100 can name in `interruptKind`. */
export type A2AInterruptKind = 'approval' | 'clarification';

export type Metadata = Record<string, unknown>;

// ---------------------------------------------------------------- parts and messages

export interface TextPart {
  kind: 'text';
  text: string;
  metadata?: Metadata;
}

/** `bytes` (base64) and `uri` are mutually exclusive. */
export interface FileWithBytes {
  bytes: string;
  name?: string;
  mimeType?: string;
}
export interface FileWithUri {
  uri: string;
  name?: string;
  mimeType?: string;
}

export interface FilePart {
  kind: 'file';
  file: FileWithBytes | FileWithUri;
  metadata?: Metadata;
}

/** v0.3 data parts hold a JSON object, never a bare value. */
export interface DataPart {
  kind: 'data';
  data: Record<string, unknown>;
  metadata?: Metadata;
}

export type Part = TextPart | FilePart | DataPart;

export interface Message extends MessageOf<Part> {
  kind: 'message';
}

// ---------------------------------------------------------------- tasks, artifacts, events

export type TaskStatus = TaskStatusOf<TaskState, Message>;

export type Artifact = ArtifactOf<Part>;

export interface Task extends TaskOf<TaskState, Message, Artifact> {
  kind: 'task';
}

export interface TaskStatusUpdateEvent {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: TaskStatus;
  /** True on the last event of this stream / interaction. */
  final: boolean;
  metadata?: Metadata;
}

export interface TaskArtifactUpdateEvent extends ArtifactUpdateOf<Artifact> {
  kind: 'artifact-update';
}

// ---------------------------------------------------------------- push notifications

export interface PushNotificationAuthenticationInfo {
  /** e.g. "Bearer", "Basic". v0.3 spells it plural. */
  schemes: string[];
  credentials?: string;
}

export interface PushNotificationConfig {
  url: string;
  /** Client-chosen; distinguishes several configs of one task. Handoff defaults it to the task id. */
  id?: string;
  token?: string;
  authentication?: PushNotificationAuthenticationInfo;
}

export interface TaskPushNotificationConfig {
  taskId: string;
  pushNotificationConfig: PushNotificationConfig;
}

// ---------------------------------------------------------------- request params

export interface MessageSendConfiguration {
  acceptedOutputModes?: string[];
  blocking?: boolean;
  historyLength?: number;
  pushNotificationConfig?: PushNotificationConfig;
}

export interface MessageSendParams {
  message: Message;
  configuration?: MessageSendConfiguration;
  metadata?: Metadata;
}

export interface TaskIdParams {
  id: string;
  metadata?: Metadata;
}

export interface TaskQueryParams extends TaskIdParams {
  historyLength?: number;
}

export interface GetTaskPushNotificationConfigParams extends TaskIdParams {
  pushNotificationConfigId?: string | null;
}

export type ListTaskPushNotificationConfigParams = TaskIdParams;

export interface DeleteTaskPushNotificationConfigParams extends TaskIdParams {
  pushNotificationConfigId: string;
}

// ---------------------------------------------------------------- agent card

export type TransportProtocol = 'JSONRPC' | 'GRPC' | 'HTTP+JSON';

export interface AgentInterface {
  url: string;
  transport: TransportProtocol;
}

export interface AgentCapabilities {
  streaming?: boolean;
  pushNotifications?: boolean;
  stateTransitionHistory?: boolean;
  extensions?: Array<{ uri: string; description?: string; required?: boolean; params?: Metadata }>;
}

export interface AgentSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
}

/** The subset of OpenAPI-like security schemes Handoff advertises. */
export type SecurityScheme =
  | { type: 'http'; scheme: string; bearerFormat?: string; description?: string }
  | { type: 'apiKey'; in: 'query' | 'header' | 'cookie'; name: string; description?: string }
  | {
      type: 'oauth2';
      flows: { clientCredentials: { tokenUrl: string; scopes: Record<string, string> } };
      description?: string;
    }
  | { type: 'openIdConnect'; openIdConnectUrl: string; description?: string };

export interface AgentCard {
  protocolVersion: string;
  name: string;
  description: string;
  url: string;
  version: string;
  preferredTransport?: TransportProtocol;
  additionalInterfaces?: AgentInterface[];
  capabilities: AgentCapabilities;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: AgentSkill[];
  securitySchemes?: Record<string, SecurityScheme>;
  security?: Array<Record<string, string[]>>;
  supportsAuthenticatedExtendedCard?: boolean;
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  iconUrl?: string;
}

// ---------------------------------------------------------------- RFC 0100 stored record

/** `$defs.PushConfig` of a2a-task-state.schema.json: never the raw token, at most a fingerprint. */
export interface A2APushConfigRecord {
  url: string;
  tokenFingerprint?: string;
}

/** The persisted projection of a run (schemas/a2a-task-state.schema.json). Closed: serialise
 * exactly these fields; tenant, principal and secrets live in separate columns. */
export interface A2ATaskState {
  taskId: string;
  runId: string;
  contextId?: string;
  state: StoredTaskState;
  /** Present iff state is `input-required` and the wait is an approval or a clarification. */
  interruptKind?: A2AInterruptKind;
  updatedAt: string;
  pushConfig?: A2APushConfigRecord;
}
