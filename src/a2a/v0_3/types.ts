// A2A v0.3 JSON-RPC wire objects that Handoff emits and accepts (docs/protocol/a2a.md#v03-objects):
// the edge adapter's side (codec.ts converts them to and from the neutral model, ../model.ts), the
// 0.3 agent card (card.ts) and the CLI's 0.3 printing. Nothing inside the A2A core uses them.
//
// Every data object carries its `kind` discriminator: v0.3 lists it as required on the wire.

import type { TaskState } from '../model.js';

/** The v0.3 wire states: the neutral ones plus `unknown` (UNSPECIFIED), which has no neutral meaning. */
export type WireTaskState = TaskState | 'unknown';

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

export interface Message {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: Part[];
  taskId?: string;
  contextId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: Metadata;
}

// ---------------------------------------------------------------- tasks, artifacts, events

export interface TaskStatus {
  state: WireTaskState;
  message?: Message;
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface Task {
  kind: 'task';
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Metadata;
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

export interface TaskArtifactUpdateEvent {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
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
