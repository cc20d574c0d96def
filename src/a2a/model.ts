// The protocol-neutral A2A objects the handlers work on. Each protocol version has a codec
// (codec/v0_3.ts, codec/v1_0.ts) that maps these to and from its wire; nothing here knows a wire
// spelling (`kind` discriminators, `TASK_STATE_*`, `final`, wrapper objects).
//
// Types only. Optional fields are absent, never undefined-valued, so a codec can copy what is set.

/** A task's state in the stored RFC 0100 spelling (A2ATaskState.state). */
export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'auth-required'
  | 'completed'
  | 'failed'
  | 'canceled'
  | 'rejected';

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

// The shapes every wire shares, over the wire's own Part, Message and state spelling: the 0.3 wire
// types (types.ts) are these plus their `kind` discriminators.

/** A message's fields, over the Part `P` of a wire. */
export interface MessageOf<P> {
  messageId: string;
  role: 'user' | 'agent';
  parts: P[];
  taskId?: string;
  contextId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: Metadata;
}

export interface ArtifactOf<P> {
  artifactId: string;
  name?: string;
  description?: string;
  parts: P[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface TaskStatusOf<S, M> {
  state: S;
  /** The agent's status message (e.g. the failure text of a failed run). */
  message?: M;
  /** ISO 8601; Handoff always sets it, a peer's Task may not. */
  timestamp?: string;
}

/** A task's fields, over a wire's state spelling `S`, Message `M` and Artifact `A`. */
export interface TaskOf<S, M, A> {
  id: string;
  contextId: string;
  status: TaskStatusOf<S, M>;
  artifacts?: A[];
  history?: M[];
  metadata?: Metadata;
}

export interface ArtifactUpdateOf<A> {
  taskId: string;
  contextId: string;
  artifact: A;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Metadata;
}

export type Message = MessageOf<Part>;
export type Artifact = ArtifactOf<Part>;

// ---------------------------------------------------------------- tasks and events

export type TaskStatus = TaskStatusOf<TaskState, Message>;

/** A task as a caller sees it. `artifacts` absent and `artifacts: []` differ on the 1.0 wire
 * (ListTasks without includeArtifacts must omit the field); the 0.3 wire omits both. */
export type TaskView = TaskOf<TaskState, Message, Artifact>;

/** A status change. Whether it ends a stream (0.3 `final`) is the stream's decision, not the event's. */
export interface StatusUpdate {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: Metadata;
}

export type ArtifactUpdate = ArtifactUpdateOf<Artifact>;

/** One item of a stream (and the body of a 1.0 push). */
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
