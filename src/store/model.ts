// The records the store persists. Plain data: no behaviour, no I/O.
// Every layer above reads these shapes; only the store writes them.

/** OpenWOP run statuses (docs/protocol/openwop.md#run-statuses). `paused` and `waiting-external` exist in the
 * protocol; this host never enters them but accepts them when projecting. */
export const RUN_STATUSES = [
  'pending',
  'running',
  'paused',
  'waiting-approval',
  'waiting-input',
  'waiting-external',
  'completed',
  'failed',
  'cancelling',
  'cancelled',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses of a run that waits on a person (an approval or an answer). */
export const WAITING_STATUSES = ['waiting-approval', 'waiting-input'] as const;
export const isWaiting = (s: RunStatus): boolean => (WAITING_STATUSES as readonly string[]).includes(s);

export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled']);
export const isTerminal = (s: RunStatus): boolean => TERMINAL_STATUSES.has(s);

export interface RunError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Where a run is in its workflow. Persisted with the snapshot; advanced only by the engine. */
export interface RunCursor {
  /** Node to execute next (or being waited on); undefined once the run is terminal. */
  nodeId?: string;
  /** Durable timer: the node at `nodeId` sleeps until this epoch-ms. */
  wakeAt?: number;
  /** Completion count per node, so a loop's iterations have distinct, stable identities. */
  ordinals: Record<string, number>;
  /** Data handed to the next execution of `nodeId` (e.g. refine feedback for a producer). */
  carry?: Record<string, unknown>;
  /** `node.started` is already committed for the current execution of `nodeId`. */
  started?: boolean;
  /** What the current execution of `nodeId` recorded for its next wake-up (a node's own state). */
  nodeState?: Record<string, unknown>;
  /**
   * While the run is forked (a `core.parallel` ran and its join has not fired): every live branch.
   * The fields above that place one line (`nodeId`, `wakeAt`, `carry`, `started`, `nodeState`)
   * are then absent: each branch has its own (src/engine/branches.ts).
   */
  branches?: BranchCursor[];
  /** The forks of a forked run whose join has not fired, by fork key (`<parallel node>#<ordinal>`). */
  forks?: Record<string, ForkState>;
}

/** One line of a forked run: where it is, and what its current execution recorded. */
export interface BranchCursor {
  /** Unique in the run and stable: `<fork key>/<first node of the branch>`, or `<fork key>>join`. */
  id: string;
  /** The fork this branch belongs to; absent: the run's own line (the continuation after a join). */
  fork?: string;
  nodeId: string;
  wakeAt?: number;
  carry?: Record<string, unknown>;
  started?: boolean;
  nodeState?: Record<string, unknown>;
  /** The kind of the interrupt open at `nodeId`, while this branch waits on a person. */
  waiting?: InterruptKind;
}

/** A `core.parallel` execution whose branches have not all settled. */
export interface ForkState {
  /** The `core.parallel` node that forked. */
  nodeId: string;
  /** The fork of the line that ran the parallel node; absent: the run's own line. */
  parent?: string;
  /** The `core.join` its branches lead into; absent: they run to ends. */
  join?: string;
  /** The node id of each branch's last node, in arrival order at the join. */
  arrived: string[];
  /** Those nodes' outputs, by node id. */
  outputs: Record<string, unknown>;
}

/** The durable run snapshot. `version` increments on every committed change (optimistic
 * concurrency); `nextSeq` is the sequence the next event of this run will get. */
export interface RunRecord {
  runId: string;
  tenantId: string;
  principalId: string;
  workflowId: string;
  status: RunStatus;
  inputs: Record<string, unknown>;
  /** Node outputs by node id, and workflow variables under `vars`. */
  state: RunState;
  cursor: RunCursor;
  error?: RunError;
  tags: string[];
  metadata: Record<string, unknown>;
  nextSeq: number;
  version: number;
  leaseOwner?: string;
  leaseExpiresAt?: number;
  /** Epoch ms when the run next wants a worker (durable timer), or undefined for "now". */
  wakeAt?: number;
  createdAt: string;
  updatedAt: string;
  completedAt?: string;
  /** A child run (core.forEach, core.subWorkflow): the run and node that started it. Never changes. */
  parentRunId?: string;
  parentNodeId?: string;
}

/**
 * A run without its inputs, state and metadata, each of which may be megabytes: what the lists
 * (GET /v1/runs, ListTasks) are built from, read without those columns.
 */
export type RunHead = Omit<RunRecord, 'inputs' | 'state' | 'metadata'>;

export interface RunState {
  outputs: Record<string, unknown>;
  vars: Record<string, unknown>;
}

/** Every event type a run's log may hold. */
export const RUN_EVENT_TYPES = [
  ...(['run.started', 'run.completed', 'run.failed', 'run.cancelling', 'run.cancelled'] as const),
  ...(['node.started', 'node.completed', 'node.failed', 'node.suspended', 'node.resumed', 'node.cancelled'] as const),
  // A node's attempt failed and it sleeps until the next one (payload: the retry record, src/engine/activity.ts).
  'node.retrying',
  ...(['approval.requested', 'approval.received', 'approval.ask'] as const),
  ...(['clarification.requested', 'clarification.resolved', 'interrupt.requested', 'interrupt.resolved'] as const),
  ...(['interrupt.expired', 'interrupt.escalated'] as const),
  // An external-event interrupt opened (core.externalEvent), and the event that resolved it.
  ...(['external-event.requested', 'external-event.received'] as const),
  ...(['artifact.created', 'a2a.message'] as const),
  // A run's call to another agent (a2a.invoke): the peer task it waits on, and its changes.
  ...(['a2a.task.linked', 'a2a.task.updated'] as const),
  // A branch of a forked run ended before finishing, because its join was satisfied without it.
  'branch.withdrawn',
  // A run's child runs (core.forEach, core.subWorkflow): started, and seen ended by the parent.
  ...(['child.started', 'child.ended'] as const),
  // A person decided through a one-time decision link (src/notify/): who, by which link.
  'decision-link.used',
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** The last event a run ever appends: a follower ends after it. */
export const FINAL_EVENT_TYPES: ReadonlySet<RunEventType> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * The largest event sequence the log can hold: `first_seq` and `last_seq` are `integer` on
 * PostgreSQL (2³¹−1). Every event cursor a caller sends is checked against it, so both databases
 * answer a larger one alike (refused), and nothing can follow this one.
 */
export const MAX_EVENT_SEQUENCE = 2_147_483_647;

/** One entry of a run's event log. `sequence` is gap-free per run, starting at 0. */
export interface RunEvent {
  runId: string;
  sequence: number;
  type: RunEventType;
  nodeId?: string;
  payload: Record<string, unknown>;
  timestamp: string;
}

/** An event about to be appended; the store assigns sequence and timestamp. */
export interface NewEvent {
  type: RunEventType;
  nodeId?: string;
  payload?: Record<string, unknown>;
}

export type InterruptKind = 'approval' | 'clarification' | 'external-event';

/** The status a run enters while an interrupt of `kind` is open. */
export function statusOfInterrupt(kind: InterruptKind): RunStatus {
  return kind === 'approval' ? 'waiting-approval' : kind === 'clarification' ? 'waiting-input' : 'waiting-external';
}

/**
 * Suspended at an interrupt: a person's (isWaiting) or an outside event's (`waiting-external`).
 * Kept apart from WAITING_STATUSES, which the run index predicates and the claim are built from:
 * an external wait has no deadline for the worker to expire.
 */
export const isSuspended = (s: RunStatus): boolean => isWaiting(s) || s === 'waiting-external';
export type InterruptStatus = 'open' | 'resolved' | 'cancelled';

export interface InterruptVote {
  /** Whom the vote counts for: the caller, or the voter it named on a `voterIdentity: "declared"` gate. */
  principalId: string;
  action: string;
  at: string;
  value: Record<string, unknown>;
  /** The authenticated caller that cast the vote, when it named someone else as the voter. */
  castBy?: string;
  /**
   * What made the caller eligible when no approvers list named the voter: `group:<ref>` or
   * `role:<ref>`, the gate's ref its credential matched at decision time (RFC 0104).
   */
  via?: string;
}

export interface InterruptRecord {
  interruptId: string;
  runId: string;
  nodeId: string;
  kind: InterruptKind;
  status: InterruptStatus;
  /** What the gate asks: the approval artifact and config, or the clarification questions. */
  data: Record<string, unknown>;
  votes: InterruptVote[];
  /** `ask` exchanges recorded while the interrupt stays open. */
  exchanges: Array<{ principalId: string; question: string; at: string }>;
  resolution?: Record<string, unknown>;
  resolvedBy?: string;
  createdAt: string;
  resolvedAt?: string;
}

/** A stored idempotent response (docs/protocol/openwop.md#idempotency). */
export interface IdempotencyRecord {
  tenantId: string;
  scope: string;
  key: string;
  bodyHash: string;
  statusCode: number;
  response: unknown;
  createdAt: string;
}

/** The persisted RFC 0100 A2ATaskState of a run (taskId == runId), with the columns that scope it. */
export interface TaskRecord {
  taskId: string;
  tenantId: string;
  principalId: string;
  contextId: string;
  /** The A2A messageId that created the task (absent for runs started over REST). */
  messageId?: string;
  /** The projected A2A state, in the stored lowercase-hyphen spelling. */
  state: string;
  interruptKind?: 'approval' | 'clarification';
  updatedAt: string;
}

/** A push notification config of a task. Token and credentials live in `secrets`, by reference. */
export interface PushConfigRecord {
  taskId: string;
  configId: string;
  tenantId: string;
  url: string;
  /** Authentication schemes as registered (e.g. ["Bearer"]). */
  authSchemes?: string[];
  tokenSecretId?: string;
  credentialsSecretId?: string;
  tokenFingerprint?: string;
  createdAt: string;
  /** The A2A version of the registration ('0.3' or '1.0'): the wire of its pushes. */
  protocolVersion: string;
}

/** The states of a push delivery (the outbox row), and of the deliveries API. */
export const DELIVERY_STATES = ['pending', 'delivered', 'dead', 'cancelled'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** One push delivery: a (config, transition) pair, written with the transition (the outbox). */
export interface DeliveryRecord {
  deliveryId: string;
  taskId: string;
  configId: string;
  tenantId: string;
  /** The event sequence of the transition: the delivery order per (task, config). */
  seq: number;
  state: DeliveryState;
  final: boolean;
  /** The serialized body to send. */
  body: string;
  attempts: number;
  nextAttemptAt: number;
  leaseOwner?: string;
  leaseExpiresAt?: number;
  lastStatus?: number;
  lastError?: string;
  createdAt: string;
  deliveredAt?: string;
  /** Absent: `body` is a 0.3 wire body. Set: `body` is the neutral event to encode for it. */
  protocolVersion?: string;
}

/** A webhook subscription (spec/v1/webhooks.md). */
export interface WebhookRecord {
  webhookId: string;
  tenantId: string;
  url: string;
  events: string[];
  /** Only runs with one of these tags deliver; absent: every run of the tenant. */
  tags?: string[];
  /** Sealed by the host key; opened only to sign a delivery. */
  sealedSecret: string;
  secretFingerprint: string;
  createdAt: string;
}
