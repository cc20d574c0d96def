// Gate deadlines, pure (no I/O): the config a gate takes, the deadline it records when it opens,
// and what the deadline's expiry does to the open interrupt. The engine commits what these decide
// (resolution.ts), fenced like every other commit, so an expiry and an answer never both win.
//
// The deadline lives in two places written in the same commit: the run's `wakeAt` (the durable
// timer the worker's claim finds) and the interrupt's `data.expiresAt` (what callers are shown).
import { type InterruptRecord, isWaiting, type NewEvent, type RunRecord } from '../store/model.js';
import { type Decision, resolveWith } from './interrupts.js';
import { ON_TIMEOUT, type OnTimeout, TIMEOUT_PRINCIPAL } from './vocabulary.js';

/** The deadline settings both gates take. */
export interface DeadlineConfig {
  /** How long the gate waits for a decision, from the moment it opens. */
  timeoutMs?: number;
  /** What the expiry does; `reject` by default. */
  onTimeout?: OnTimeout;
  /** The principals an `escalate` re-opens the gate for (they replace `approversList`). */
  escalateTo?: string[];
}

/** The JSON Schema properties of DeadlineConfig, spread into each gate's config schema. */
export const DEADLINE_PROPERTIES = {
  timeoutMs: { type: 'integer', minimum: 1 },
  onTimeout: { enum: [...ON_TIMEOUT] },
  escalateTo: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
} as const;

/** What the schema cannot say about the deadline settings, as sentences about `config`. */
export function deadlineProblems(c: DeadlineConfig): string[] {
  const problems: string[] = [];
  if (c.timeoutMs === undefined) {
    if (c.onTimeout !== undefined) problems.push('config.onTimeout needs config.timeoutMs');
    if (c.escalateTo !== undefined) problems.push('config.escalateTo needs config.timeoutMs');
    return problems;
  }
  if (c.onTimeout === 'escalate' && c.escalateTo === undefined) {
    problems.push('config.onTimeout "escalate" needs config.escalateTo (who the gate escalates to)');
  }
  if (c.escalateTo !== undefined && c.onTimeout !== 'escalate') {
    problems.push('config.escalateTo is used only with config.onTimeout "escalate"');
  }
  return problems;
}

/** The deadline as a gate's interrupt data records it (shown to callers, read back at expiry). */
export interface DeadlineData {
  timeoutMs: number;
  onTimeout: OnTimeout;
  /** ISO 8601: when the current wait ends. */
  expiresAt: string;
  escalateTo?: string[];
  /** The gate was escalated once; its next expiry rejects. */
  escalated?: boolean;
}

/** The deadline a gate opening at `now` gets, or undefined when it has none. */
export function openDeadline(c: DeadlineConfig, now: number): { expiresAt: number; data: DeadlineData } | undefined {
  if (c.timeoutMs === undefined) return undefined;
  const expiresAt = now + c.timeoutMs;
  const data: DeadlineData = {
    timeoutMs: c.timeoutMs,
    onTimeout: c.onTimeout ?? 'reject',
    expiresAt: new Date(expiresAt).toISOString(),
    ...(c.escalateTo ? { escalateTo: c.escalateTo } : {}),
  };
  return { expiresAt, data };
}

/** The deadline recorded in an interrupt's data, if it has one. */
export function deadlineOf(i: InterruptRecord): DeadlineData | undefined {
  const d = i.data;
  if (typeof d.timeoutMs !== 'number' || typeof d.expiresAt !== 'string') return undefined;
  const onTimeout = (ON_TIMEOUT as readonly unknown[]).includes(d.onTimeout) ? (d.onTimeout as OnTimeout) : 'reject';
  return {
    timeoutMs: d.timeoutMs,
    onTimeout,
    expiresAt: d.expiresAt,
    ...(Array.isArray(d.escalateTo) ? { escalateTo: d.escalateTo as string[] } : {}),
    ...(d.escalated === true ? { escalated: true } : {}),
  };
}

/** A run waiting on a person whose deadline has passed: the worker's to expire. */
export const isExpiryDue = (run: RunRecord, now: number): boolean =>
  isWaiting(run.status) && run.wakeAt !== undefined && run.wakeAt <= now;

export type Expiry =
  /** The gate stays open for `escalateTo`, with a new deadline at `wakeAt`. */
  | { kind: 'escalate'; interrupt: InterruptRecord; events: NewEvent[]; wakeAt: number }
  /** The gate is resolved by the deadline, as if `decidedBy` were TIMEOUT_PRINCIPAL. */
  | Extract<Decision, { kind: 'resolve' }>;

/**
 * What the expiry of `i`'s deadline at `now` does. An escalated gate that expires again is
 * rejected: escalation happens at most once, so every gate with a deadline ends.
 */
export function expire(i: InterruptRecord, now: number): Expiry {
  const deadline = deadlineOf(i);
  const configured = deadline?.onTimeout ?? 'reject';
  const outcome: OnTimeout =
    configured === 'escalate' && (deadline?.escalated || !deadline?.escalateTo) ? 'reject' : configured;
  const at = new Date(now).toISOString();
  const expired: NewEvent = {
    type: 'interrupt.expired',
    nodeId: i.nodeId,
    payload: {
      interruptId: i.interruptId,
      kind: i.kind,
      expiresAt: deadline?.expiresAt ?? at,
      onTimeout: configured,
      outcome,
      ...(deadline?.escalated ? { escalated: true } : {}),
    },
  };
  if (outcome === 'escalate') return escalate(i, deadline as DeadlineData, now, expired);
  const base = { decidedBy: TIMEOUT_PRINCIPAL, timedOut: true };
  if (outcome === 'reject') {
    return resolveWith(i, 'reject', TIMEOUT_PRINCIPAL, at, expired, { action: 'reject', ...base }, true);
  }
  // accept: an approval goes on with the artifact it showed; a clarification with no answers.
  return i.kind === 'approval'
    ? resolveWith(
        i,
        'accept',
        TIMEOUT_PRINCIPAL,
        at,
        expired,
        { action: 'accept', artifact: i.data.artifact, approvers: [], ...base },
        true,
      )
    : resolveWith(i, 'answer', TIMEOUT_PRINCIPAL, at, expired, { answers: {}, ...base }, true);
}

/**
 * Re-open the gate for `escalateTo` (they alone may decide, their own earlier votes kept; the
 * gate's group and role refs no longer admit anyone, and nobody may cast votes for others).
 */
function escalate(i: InterruptRecord, deadline: DeadlineData, now: number, expired: NewEvent): Expiry {
  const escalateTo = deadline.escalateTo as string[];
  const wakeAt = now + deadline.timeoutMs;
  const expiresAt = new Date(wakeAt).toISOString();
  // escalateTo replaces who may decide: the gate's group and role refs go with its approvers list,
  // and so do declared voters (voterIdentity, relayers): each of escalateTo votes as itself.
  const {
    approverGroupRefs: _groups,
    approverRoleRefs: _roles,
    voterIdentity: _voters,
    relayers: _relayers,
    ...data
  } = i.data;
  const interrupt: InterruptRecord = {
    ...i,
    data: { ...data, approversList: escalateTo, escalated: true, expiresAt },
    // A vote someone else cast for a name on escalateTo is not that principal's own.
    votes: i.votes.filter((v) => v.castBy === undefined && escalateTo.includes(v.principalId)),
  };
  const escalated: NewEvent = {
    type: 'interrupt.escalated',
    nodeId: i.nodeId,
    payload: { interruptId: i.interruptId, kind: i.kind, escalateTo, expiresAt, previousExpiresAt: deadline.expiresAt },
  };
  return { kind: 'escalate', interrupt, events: [expired, escalated], wakeAt };
}
