// The shapes the console reads from the host's REST and A2A APIs (only the fields it uses).

export interface OpenInterruptSummary {
  kind: 'approval' | 'clarification';
  nodeId: string;
  title?: string;
  approversList?: string[];
  /** The approver groups whose members may decide too (RFC 0104). */
  approverGroupRefs?: string[];
  /** The approver roles whose holders may decide too (RFC 0104). */
  approverRoleRefs?: string[];
  expiresAt?: string;
}

/** Another A2A agent's task the run waits on (the `a2a.invoke` node). */
export interface WaitingOn {
  kind: string;
  nodeId?: string;
  agent?: string;
  agentCardUrl?: string;
  peerTaskId?: string;
  peerContextId?: string;
  peerState?: string;
  protocolVersion?: string;
  since?: string;
}

/** Why a run that has not ended is not moving (`activity` of the run, src/engine/activity.ts). */
export interface Activity {
  kind: 'running' | 'sleeping' | 'retrying' | 'waiting-person' | 'waiting-peer' | 'waiting-child';
  nodeId?: string;
  summary: string;
  since: string;
  attempt?: number;
  nextAttemptAt?: string;
  lastError?: { code: string; message: string };
  peer?: { agent: string; taskId?: string; state?: string; url?: string };
  child?: { runId: string };
}

export interface RunError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export interface RunSummary {
  runId: string;
  workflowId: string;
  status: string;
  tags: string[];
  createdAt: string;
  updatedAt: string;
  completedAt?: string;
  /** The oldest open interrupt. */
  interrupt?: OpenInterruptSummary;
  /** Every open interrupt, oldest first (a run forked by core.parallel may wait at several). */
  interrupts?: OpenInterruptSummary[];
  waitingOn?: WaitingOn;
  activity?: Activity;
  error?: RunError;
}

export interface RunList {
  runs: RunSummary[];
  nextCursor?: string;
}

export interface Question {
  id: string;
  question: string;
}

export interface OpenInterrupt {
  kind: 'approval' | 'clarification';
  nodeId: string;
  interruptId: string;
  expiresAt?: string;
  payload: {
    title?: string;
    description?: string;
    artifact?: unknown;
    actions?: string[];
    requiredApprovals?: number;
    approversList?: string[];
    approverGroupRefs?: string[];
    approverRoleRefs?: string[];
    questions?: Question[];
    expiresAt?: string;
  };
  votes: Array<{ principal: string; action: string; at: string }>;
  exchanges: Array<{ principalId: string; question: string; at: string }>;
  /** sha256 (RFC 8785) of the artifact or questions: sent back with a decision to bind it. */
  artifactHash?: string;
}

export interface RunSnapshot {
  runId: string;
  workflowId: string;
  status: string;
  owner: { tenant: string; principal: string };
  currentNodeId?: string;
  /** The oldest open interrupt. */
  interrupt?: OpenInterrupt;
  /** Every open interrupt, oldest first: each is decided at its own node. */
  interrupts?: OpenInterrupt[];
  waitingOn?: WaitingOn;
  activity?: Activity;
  error?: RunError;
  inputs: Record<string, unknown>;
  parentRunId?: string;
  tags: string[];
  createdAt: string;
  updatedAt: string;
  completedAt?: string;
}

export interface RunEvent {
  eventId: string;
  type: string;
  sequence: number;
  nodeId?: string;
  payload: Record<string, unknown>;
  timestamp: string;
}

export interface ResolveAnswer {
  status: string;
  interrupt: {
    interruptId: string;
    outcome: 'resolved' | 'vote-recorded' | 'ask-recorded';
    votes: number;
    requiredApprovals?: number;
  };
}

export interface Delivery {
  deliveryId: string;
  taskId: string;
  configId: string;
  state: 'pending' | 'delivered' | 'dead' | 'cancelled';
  final: boolean;
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface PushConfig {
  taskId: string;
  pushNotificationConfig: { id?: string; url: string; authentication?: { schemes: string[] } };
}

export interface AgentCard {
  name: string;
  description: string;
  version: string;
  url: string;
  protocolVersion: string;
  capabilities?: Record<string, boolean>;
  skills: Array<{ id: string; name: string; description: string }>;
}

export interface WorkflowSummary {
  id: string;
  name: string;
  version?: string;
  description?: string;
}

/** A JSON Schema, as far as the start form reads one. */
export interface InputSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, InputSchema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  format?: string;
  minLength?: number;
  maxLength?: number;
}

export interface WorkflowDefinition extends WorkflowSummary {
  inputSchema?: InputSchema;
}

/** A workflow file the host did not load (GET /v1/workflows?include=refused). */
export interface RefusedWorkflow {
  file: string;
  problems: string[];
}

/** Every open interrupt of a run, whether its host lists them all (`interrupts`) or only one. */
export function openInterrupts<T>(run: { interrupt?: T; interrupts?: T[] }): T[] {
  return run.interrupts ?? (run.interrupt ? [run.interrupt] : []);
}

export const WAITING = new Set(['waiting-approval', 'waiting-input']);
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
