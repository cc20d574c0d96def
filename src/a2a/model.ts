// The protocol-neutral A2A model, shaped like A2A 1.0: what the handler (handler.ts), the service,
// the projection, streams, the push outbox and storage speak. Each binding converts its wire to
// and from it once: codec/v1_0.ts (JSON-RPC and HTTP+JSON 1.0) and the 0.3 edge adapter
// (v0_3/codec.ts). Nothing here knows a wire spelling (`kind` on messages and tasks, `TASK_STATE_*`,
// `final`, wrapper objects). The part `kind` is this model's own discriminator.
//
// Types and the state vocabulary. Optional fields are absent, never undefined-valued, so a codec
// can copy what is set.

/** A task's state: the one TaskState type. Spelled as RFC 0100's A2ATaskState.state (lowercase
 * hyphen, which that record requires); each wire maps it to its own spelling. */
export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'auth-required'
  | 'completed'
  | 'failed'
  | 'canceled'
  | 'rejected';

/** The states a task never leaves (the one list: projection, peers, CLI). */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(['completed', 'canceled', 'failed', 'rejected']);
/** The states in which a task waits for its caller (a reply, credentials): a turn is over. */
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required']);

export type Metadata = Record<string, unknown>;

// ---------------------------------------------------------------- content

export interface TextPart {
  kind: 'text';
  text: string;
  /** 1.0 only (0.3 has no media type on text): dropped on the 0.3 wire. */
  mediaType?: string;
  metadata?: Metadata;
}

/** Any JSON value. The 0.3 wire holds objects only: a codec wraps anything else as `{value}`. */
export interface DataPart {
  kind: 'data';
  data: unknown;
  /** 1.0 only: dropped on the 0.3 wire. */
  mediaType?: string;
  metadata?: Metadata;
}

/** A file, inline (`bytes`, standard base64) or by reference (`uri`): exactly one of the two. */
export type FilePart = {
  kind: 'file';
  name?: string;
  mediaType?: string;
  metadata?: Metadata;
} & ({ bytes: string; uri?: never } | { uri: string; bytes?: never });

export type Part = TextPart | DataPart | FilePart;

/** A message: the caller's (role user) or the agent's. */
export interface Message {
  messageId: string;
  role: 'user' | 'agent';
  parts: Part[];
  taskId?: string;
  contextId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: Metadata;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Metadata;
  extensions?: string[];
}

// ---------------------------------------------------------------- tasks and events

export interface TaskStatus {
  state: TaskState;
  /** The agent's status message (e.g. the failure text of a failed run). */
  message?: Message;
  /** ISO 8601; Handoff always sets it, a peer's Task may not. */
  timestamp?: string;
}

/** A task as a caller sees it. `artifacts` absent and `artifacts: []` differ on the 1.0 wire
 * (ListTasks without includeArtifacts must omit the field); the 0.3 wire omits both. */
export interface TaskView {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Metadata;
}

/** A status change. Whether it ends a stream (0.3 `final`) is the stream's decision, not the event's. */
export interface StatusUpdate {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: Metadata;
}

export interface ArtifactUpdate {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
}

/** One item of a stream, and the event a push carries (encoded for its config's version). */
export type StreamEvent =
  | { kind: 'task'; task: TaskView }
  | { kind: 'message'; message: Message }
  | { kind: 'status-update'; update: StatusUpdate }
  | { kind: 'artifact-update'; update: ArtifactUpdate };

/** What a send answers: a Task (always, from Handoff) or a direct Message. */
export type SendResult = Extract<StreamEvent, { kind: 'task' } | { kind: 'message' }>;

// ---------------------------------------------------------------- push notification configs

/** 0.3 lists schemes, 1.0 names one: the 1.0 codec reads and writes the first. */
export interface PushAuthentication {
  schemes: string[];
  credentials?: string;
}

/** A config as registered: the id is optional (the server assigns one). */
export interface PushConfigInput {
  id?: string;
  url: string;
  token?: string;
  authentication?: PushAuthentication;
}

/** A stored config of a task. Reads show no token or credentials: the handler leaves them out. */
export interface PushConfig extends PushConfigInput {
  id: string;
  taskId: string;
}

// ---------------------------------------------------------------- requests
//
// What a handler needs, whatever the version or binding that carried it. `tenant` is the 1.0
// request field (or REST path segment); 0.3 has none.

interface TenantScoped {
  tenant?: string;
}

export interface SendConfiguration {
  /** 0.3 `blocking` (default true); 1.0 `!returnImmediately` (default false). */
  blocking: boolean;
  /** Absent: the server's default (all); 0: none; N: at most the last N messages. */
  historyLength?: number;
  acceptedOutputModes?: string[];
  pushConfig?: PushConfigInput;
}

/** message/send, message/stream; SendMessage, SendStreamingMessage. */
export interface SendRequest extends TenantScoped {
  message: Message;
  configuration: SendConfiguration;
  metadata?: Metadata;
}

/** tasks/get; GetTask. */
export interface GetTaskRequest extends TenantScoped {
  id: string;
  historyLength?: number;
}

/** The keyset position after which the next ListTasks page starts (page-token.ts). */
export interface TaskCursor {
  /** The status timestamp of the last task of the previous page, as stored. */
  timestamp: string;
  taskId: string;
}

/** ListTasks (1.0 only). Tasks newest status first; filters are ANDed. */
export interface ListTasksRequest extends TenantScoped {
  contextId?: string;
  state?: TaskState;
  /** Inclusive lower bound on the status timestamp, normalized to ISO 8601 UTC (`…Z`). */
  statusTimestampAfter?: string;
  /** 1–100; 50 when the caller gave none. */
  pageSize: number;
  after?: TaskCursor;
  historyLength?: number;
  includeArtifacts: boolean;
}

/** tasks/cancel, tasks/resubscribe; CancelTask, SubscribeToTask. */
export interface TaskIdRequest extends TenantScoped {
  id: string;
  metadata?: Metadata;
}

export interface PushCreateRequest extends TenantScoped {
  taskId: string;
  config: PushConfigInput;
}

/** 0.3 allows the config id to be absent (or null): the handler picks the task's config. */
export interface PushGetRequest extends TenantScoped {
  taskId: string;
  id?: string;
}

export interface PushListRequest extends TenantScoped {
  taskId: string;
  /** 1.0 only; absent: the server's default. */
  pageSize?: number;
  pageToken?: string;
}

export interface PushDeleteRequest extends TenantScoped {
  taskId: string;
  id: string;
}

export type ExtendedCardRequest = TenantScoped;

/** Every operation and the request it takes: the codecs decode to these, the handlers read them. */
export interface RequestOf {
  send: SendRequest;
  stream: SendRequest;
  get: GetTaskRequest;
  list: ListTasksRequest;
  cancel: TaskIdRequest;
  subscribe: TaskIdRequest;
  'push.create': PushCreateRequest;
  'push.get': PushGetRequest;
  'push.list': PushListRequest;
  'push.delete': PushDeleteRequest;
  'card.extended': ExtendedCardRequest;
}

export type Operation = keyof RequestOf;

// ---------------------------------------------------------------- RFC 0100 stored record

/** The interrupt kinds RFC 0100 can name in `interruptKind`. */
export type A2AInterruptKind = 'approval' | 'clarification';

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
  state: TaskState;
  /** Present iff state is `input-required` and the wait is an approval or a clarification. */
  interruptKind?: A2AInterruptKind;
  updatedAt: string;
  pushConfig?: A2APushConfigRecord;
}
