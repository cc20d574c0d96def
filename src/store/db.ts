// Table shapes as Kysely sees them. JSON columns are TEXT on both dialects (parsed by the
// store's row mappers) so one code path serves SQLite and PostgreSQL alike.
export interface RunsTable {
  run_id: string;
  tenant_id: string;
  principal_id: string;
  workflow_id: string;
  status: string;
  inputs: string;
  state: string;
  cursor: string;
  error: string | null;
  tags: string;
  metadata: string;
  next_seq: number;
  version: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  wake_at: number | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  /** A child run's parent (migration 0012); null for a run started by a caller. */
  parent_run_id: string | null;
  parent_node_id: string | null;
}

/** The run event log, one row per commit of a run: its events as one JSON array (repos/events.ts). */
export interface EventBatchesTable {
  run_id: string;
  first_seq: number;
  last_seq: number;
  /** The timestamp of the batch's events (one that differs carries its own). */
  created_at: string;
  /** JSON text, or deflated (src/store/log-codec.ts: bytes on SQLite, marked base64 on PostgreSQL). */
  events: string | Uint8Array;
}

export interface InterruptsTable {
  interrupt_id: string;
  run_id: string;
  node_id: string;
  kind: string;
  status: string;
  data: string;
  votes: string;
  exchanges: string;
  resolution: string | null;
  resolved_by: string | null;
  created_at: string;
  resolved_at: string | null;
}

export interface IdempotencyTable {
  tenant_id: string;
  scope: string;
  key: string;
  body_hash: string;
  status_code: number;
  response: string;
  created_at: string;
}

/** The persisted RFC 0100 A2ATaskState, one row per run (taskId == runId). */
export interface A2ATasksTable {
  task_id: string;
  tenant_id: string;
  principal_id: string;
  context_id: string;
  /** The A2A messageId that created the task; the idempotency seed with tenant and principal. */
  message_id: string | null;
  state: string;
  interrupt_kind: string | null;
  updated_at: string;
}

/** Reply messages applied to a task, so a retried reply is answered, not applied twice. */
export interface A2AMessagesTable {
  tenant_id: string;
  principal_id: string;
  message_id: string;
  task_id: string;
}

/** A task's push notification config. Credentials live in `secrets`, by reference. */
export interface PushConfigsTable {
  task_id: string;
  config_id: string;
  tenant_id: string;
  url: string;
  /** JSON array of authentication schemes, or null. */
  auth_schemes: string | null;
  token_secret: string | null;
  credentials_secret: string | null;
  token_fingerprint: string | null;
  created_at: string;
  /** The A2A version the config was registered in ('0.3' or '1.0'): its pushes speak it. */
  protocol_version: string;
}

/** Encrypted caller secrets (AES-256-GCM under the host key). */
export interface SecretsTable {
  secret_id: string;
  ciphertext: string;
  created_at: string;
}

/** The push outbox: one row per (config, transition), written with the transition. */
export interface PushOutboxTable {
  delivery_id: string;
  task_id: string;
  config_id: string;
  tenant_id: string;
  seq: number;
  state: string;
  final: number;
  body: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  /** The version `body` (the neutral event) is encoded for at delivery. Rows from before 0008 had
   * none and a 0.3 wire body: migration 0014 made them '0.3' with a neutral body. */
  protocol_version: string | null;
}

/** HANDOFF_TENANT_RATE windows on PostgreSQL (src/store/quotas.ts). */
export interface RateLimitsTable {
  key: string;
  hits: number;
  reset_at: number;
}

/** A run's wait on another agent's task (src/engine/nodes/a2a-invoke/): where pushes find it, what to cancel. */
export interface PeerWaitsTable {
  wait_id: string;
  run_id: string;
  node_id: string;
  ordinal: number;
  /** JSON: { agent } or { url } — how to reach the peer again (never a token). */
  target: string;
  peer_task_id: string | null;
  /** sha256 (hex) of the push callback token; null when no push was asked for. */
  token_hash: string | null;
  state: string;
  attempts: number;
  next_attempt_at: number;
  created_at: string;
}

/** A large part of a run's JSON, stored once and referred to (src/store/recorded.ts). */
export interface RunValuesTable {
  run_id: string;
  /** sha256 (hex) of the part's JSON text. */
  hash: string;
  /** 0, 1, …: the part's text is stored in slices (RECORDED_SLICE_CHARS), in this order. */
  slice: number;
  /** One slice of the part's JSON text. */
  value: string;
  created_at: string;
}

/** The audit log (repos/audit.ts): one hash chain per tenant, append-only. */
export interface AuditEntriesTable {
  tenant_id: string;
  seq: number;
  time: string;
  principal: string;
  surface: string;
  act: string;
  run_id: string | null;
  node_id: string | null;
  /** JSON: the decision's values or the act's parameters. */
  values: string;
  subject_hash: string | null;
  prev_hash: string | null;
  hash: string;
}

/** Each tenant's audit chain head: its last sequence and hash (the row appends lock). */
export interface AuditHeadsTable {
  tenant_id: string;
  seq: number;
  hash: string | null;
}

/** The notification outbox (src/store/repos/notifications.ts). */
export interface NotificationsTable {
  notification_id: string;
  tenant_id: string;
  run_id: string;
  interrupt_id: string;
  node_id: string;
  /** `opened`, `reminder` or `escalated`. */
  reason: string;
  /** `email`, `webhook` or `slack`. */
  channel: string;
  /** The address or URL. */
  target: string;
  /** Who the decision link decides as (a principal id or an address). */
  recipient: string;
  /** The decision link's token, sealed by the host key until the message is sent. */
  sealed_token: string | null;
  link_expires_at: number | null;
  state: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  created_at: string;
  sent_at: string | null;
}

/** One-time decision links, by the sha256 of their token (src/store/repos/decision-links.ts). */
export interface DecisionLinksTable {
  token_hash: string;
  tenant_id: string;
  run_id: string;
  interrupt_id: string;
  node_id: string;
  recipient: string;
  expires_at: number;
  used_at: string | null;
  created_at: string;
}

/** A webhook subscription (spec/v1/webhooks.md): run events of a tenant, signed with its secret. */
export interface WebhooksTable {
  webhook_id: string;
  tenant_id: string;
  url: string;
  /** JSON array of event types. */
  events: string;
  /** JSON array of run tags (any overlap delivers), or null: every run. */
  tags: string | null;
  /** The signing secret, sealed by the host key (src/push/vault.ts). */
  secret: string;
  secret_fingerprint: string;
  created_at: string;
}

/** One signed delivery of one run event to one webhook subscription (the webhook outbox). */
export interface WebhookDeliveriesTable {
  delivery_id: string;
  webhook_id: string;
  tenant_id: string;
  run_id: string;
  sequence: number;
  event_type: string;
  /** The delivery body as sent (`{runId, workspaceId, event}`). */
  body: string;
  /** pending | delivered | dead */
  state: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
}

export interface Database {
  runs: RunsTable;
  event_batches: EventBatchesTable;
  interrupts: InterruptsTable;
  idempotency: IdempotencyTable;
  a2a_tasks: A2ATasksTable;
  a2a_messages: A2AMessagesTable;
  push_configs: PushConfigsTable;
  secrets: SecretsTable;
  push_outbox: PushOutboxTable;
  rate_limits: RateLimitsTable;
  peer_waits: PeerWaitsTable;
  run_values: RunValuesTable;
  audit_entries: AuditEntriesTable;
  audit_heads: AuditHeadsTable;
  notifications: NotificationsTable;
  decision_links: DecisionLinksTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
}
