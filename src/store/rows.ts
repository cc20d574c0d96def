// Mapping between database rows and domain records. JSON is stored as TEXT on both dialects.
import type {
  A2ATasksTable,
  EventsTable,
  InterruptsTable,
  PushConfigsTable,
  PushOutboxTable,
  RunsTable,
} from './db.js';
import type {
  DeliveryRecord,
  InterruptRecord,
  PushConfigRecord,
  RunEvent,
  RunRecord,
  RunStatus,
  TaskRecord,
} from './model.js';

const num = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));

export function runFromRow(r: RunsTable): RunRecord {
  const rec: RunRecord = {
    runId: r.run_id,
    tenantId: r.tenant_id,
    principalId: r.principal_id,
    workflowId: r.workflow_id,
    status: r.status as RunStatus,
    inputs: JSON.parse(r.inputs),
    state: JSON.parse(r.state),
    cursor: JSON.parse(r.cursor),
    tags: JSON.parse(r.tags),
    metadata: JSON.parse(r.metadata),
    nextSeq: Number(r.next_seq),
    version: Number(r.version),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  if (r.error) rec.error = JSON.parse(r.error);
  if (r.lease_owner) rec.leaseOwner = r.lease_owner;
  const lease = num(r.lease_expires_at);
  if (lease !== undefined) rec.leaseExpiresAt = lease;
  const wake = num(r.wake_at);
  if (wake !== undefined) rec.wakeAt = wake;
  if (r.completed_at) rec.completedAt = r.completed_at;
  return rec;
}

export function runToRow(r: RunRecord): RunsTable {
  return {
    run_id: r.runId,
    tenant_id: r.tenantId,
    principal_id: r.principalId,
    workflow_id: r.workflowId,
    status: r.status,
    inputs: JSON.stringify(r.inputs),
    state: JSON.stringify(r.state),
    cursor: JSON.stringify(r.cursor),
    error: r.error ? JSON.stringify(r.error) : null,
    tags: JSON.stringify(r.tags),
    metadata: JSON.stringify(r.metadata),
    next_seq: r.nextSeq,
    version: r.version,
    lease_owner: r.leaseOwner ?? null,
    lease_expires_at: r.leaseExpiresAt ?? null,
    wake_at: r.wakeAt ?? null,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    completed_at: r.completedAt ?? null,
  };
}

export function eventFromRow(r: EventsTable): RunEvent {
  const e: RunEvent = {
    runId: r.run_id,
    sequence: Number(r.seq),
    type: r.type as RunEvent['type'],
    payload: JSON.parse(r.payload),
    timestamp: r.created_at,
  };
  if (r.node_id) e.nodeId = r.node_id;
  return e;
}

export function interruptFromRow(r: InterruptsTable): InterruptRecord {
  const rec: InterruptRecord = {
    interruptId: r.interrupt_id,
    runId: r.run_id,
    nodeId: r.node_id,
    kind: r.kind as InterruptRecord['kind'],
    status: r.status as InterruptRecord['status'],
    data: JSON.parse(r.data),
    votes: JSON.parse(r.votes),
    exchanges: JSON.parse(r.exchanges),
    createdAt: r.created_at,
  };
  if (r.resolution) rec.resolution = JSON.parse(r.resolution);
  if (r.resolved_by) rec.resolvedBy = r.resolved_by;
  if (r.resolved_at) rec.resolvedAt = r.resolved_at;
  return rec;
}

export function interruptToRow(r: InterruptRecord): InterruptsTable {
  return {
    interrupt_id: r.interruptId,
    run_id: r.runId,
    node_id: r.nodeId,
    kind: r.kind,
    status: r.status,
    data: JSON.stringify(r.data),
    votes: JSON.stringify(r.votes),
    exchanges: JSON.stringify(r.exchanges),
    resolution: r.resolution ? JSON.stringify(r.resolution) : null,
    resolved_by: r.resolvedBy ?? null,
    created_at: r.createdAt,
    resolved_at: r.resolvedAt ?? null,
  };
}

export function taskFromRow(r: A2ATasksTable): TaskRecord {
  const rec: TaskRecord = {
    taskId: r.task_id,
    tenantId: r.tenant_id,
    principalId: r.principal_id,
    contextId: r.context_id,
    state: r.state,
    updatedAt: r.updated_at,
  };
  if (r.message_id) rec.messageId = r.message_id;
  if (r.interrupt_kind) rec.interruptKind = r.interrupt_kind as TaskRecord['interruptKind'];
  return rec;
}

export function pushConfigFromRow(r: PushConfigsTable): PushConfigRecord {
  const rec: PushConfigRecord = {
    taskId: r.task_id,
    configId: r.config_id,
    tenantId: r.tenant_id,
    url: r.url,
    createdAt: r.created_at,
  };
  if (r.auth_schemes) rec.authSchemes = JSON.parse(r.auth_schemes) as string[];
  if (r.token_secret) rec.tokenSecretId = r.token_secret;
  if (r.credentials_secret) rec.credentialsSecretId = r.credentials_secret;
  if (r.token_fingerprint) rec.tokenFingerprint = r.token_fingerprint;
  return rec;
}

export function pushConfigToRow(r: PushConfigRecord): PushConfigsTable {
  return {
    task_id: r.taskId,
    config_id: r.configId,
    tenant_id: r.tenantId,
    url: r.url,
    auth_schemes: r.authSchemes ? JSON.stringify(r.authSchemes) : null,
    token_secret: r.tokenSecretId ?? null,
    credentials_secret: r.credentialsSecretId ?? null,
    token_fingerprint: r.tokenFingerprint ?? null,
    created_at: r.createdAt,
  };
}

export function deliveryFromRow(r: PushOutboxTable): DeliveryRecord {
  const rec: DeliveryRecord = {
    deliveryId: r.delivery_id,
    taskId: r.task_id,
    configId: r.config_id,
    tenantId: r.tenant_id,
    seq: Number(r.seq),
    state: r.state as DeliveryRecord['state'],
    final: Number(r.final) === 1,
    body: r.body,
    attempts: Number(r.attempts),
    nextAttemptAt: Number(r.next_attempt_at),
    createdAt: r.created_at,
  };
  if (r.lease_owner) rec.leaseOwner = r.lease_owner;
  const lease = num(r.lease_expires_at);
  if (lease !== undefined) rec.leaseExpiresAt = lease;
  const status = num(r.last_status);
  if (status !== undefined) rec.lastStatus = status;
  if (r.last_error) rec.lastError = r.last_error;
  if (r.delivered_at) rec.deliveredAt = r.delivered_at;
  return rec;
}
