// Deciding what a resume value does to an open interrupt — pure, no I/O. Host-side checks
// (approvers list, action allowed, quorum) all happen here, before the engine moves the run.
import type { InterruptRecord, InterruptVote, NewEvent } from '../store/model.js';
import { isDeepStrictEqual } from 'node:util';
import { EngineError } from './errors.js';
import { normalizeApprovalAction } from './vocabulary.js';
import { spread } from './spread.js';

export type Decision =
  | { kind: 'vote' | 'ask'; interrupt: InterruptRecord; events: NewEvent[] }
  | {
      kind: 'resolve';
      action: 'accept' | 'edit-accept' | 'reject' | 'refine' | 'answer';
      interrupt: InterruptRecord;
      events: NewEvent[];
      /** The gate node's output when the run continues. */
      output: Record<string, unknown>;
      decidedBy: string;
      /** The gate's deadline decided, not a person (deadlines.ts). */
      timedOut?: boolean;
    };

/**
 * Who decides: the authenticated caller, with the approver groups and roles its credential names
 * (a gate's `approverGroupRefs` / `approverRoleRefs` match them; RFC 0104).
 */
export interface Decider {
  principalId: string;
  groups?: readonly string[];
  roles?: readonly string[];
}

export function decide(i: InterruptRecord, who: Decider, resumeValue: unknown, now: string): Decision {
  if (!resumeValue || typeof resumeValue !== 'object' || Array.isArray(resumeValue)) {
    throw new EngineError('validation_error', 'resumeValue must be an object');
  }
  const value = resumeValue as Record<string, unknown>;
  if (i.kind === 'external-event') return decideExternalEvent(i, who.principalId, value, now);
  return i.kind === 'approval' ? decideApproval(i, who, value, now) : decideClarification(i, who, value, now);
}

/**
 * The event an external-event interrupt waits for: it resolves the wait only when every field of
 * the node's `correlation` has that value in it (else 422 `correlation_mismatch`, nothing changes).
 * The resume value is the event, or `{eventPayload: event}`.
 */
function decideExternalEvent(
  i: InterruptRecord,
  principalId: string,
  v: Record<string, unknown>,
  now: string,
): Decision {
  const wrapped = v.eventPayload;
  const event =
    wrapped && typeof wrapped === 'object' && !Array.isArray(wrapped) ? (wrapped as Record<string, unknown>) : v;
  const correlation = (i.data.correlation ?? {}) as Record<string, unknown>;
  const mismatched = Object.keys(correlation).filter((k) => !isDeepStrictEqual(event[k], correlation[k]));
  if (mismatched.length > 0) {
    throw new EngineError(
      'correlation_mismatch',
      `the event does not match the awaited correlation (${mismatched.join(', ')})`,
      {
        fields: mismatched,
      },
    );
  }
  const received: NewEvent = {
    type: 'external-event.received',
    nodeId: i.nodeId,
    payload: {
      interruptId: i.interruptId,
      eventType: i.data.eventType,
      correlationId: i.data.correlationId,
      receivedBy: principalId,
      receivedAt: now,
    },
  };
  return resolveWith(i, 'answer', principalId, now, received, {
    eventType: i.data.eventType,
    event,
    receivedBy: principalId,
  });
}

function decideApproval(i: InterruptRecord, who: Decider, v: Record<string, unknown>, now: string): Decision {
  const caller = who.principalId;
  const action = typeof v.action === 'string' ? normalizeApprovalAction(v.action) : undefined;
  const allowed = (i.data.actions as string[] | undefined) ?? [];
  if (!action || !allowed.includes(action)) {
    throw new EngineError('validation_error', `resumeValue.action must be one of: ${allowed.join(', ')}`, { allowed });
  }
  // The decider is the voter: the caller, or on a `declared` gate whom it names.
  const principalId = voterOf(i, caller, v);
  const via = checkApprover(i, principalId, who);
  checkActionFields(action, v);
  const feedback = typeof v.feedback === 'string' ? v.feedback : undefined;
  const base = { interruptId: i.interruptId, decidedBy: principalId, action, decidedAt: now };
  // Assigned, not spread in (a conditional spread is V8's slow path: src/engine/spread.ts).
  const receivedPayload: Record<string, unknown> = spread(base, {});
  if (feedback) receivedPayload.feedback = feedback;
  // RFC 0183: a refine is recorded with the feedback that gives it its meaning.
  if (action === 'refine') receivedPayload.refineFeedback = v.refineFeedback;
  if (principalId !== caller) receivedPayload.castBy = caller;
  if (via !== undefined) receivedPayload.via = via;
  const received: NewEvent = { type: 'approval.received', nodeId: i.nodeId, payload: receivedPayload };

  if (action === 'ask') {
    const question = typeof v.question === 'string' ? v.question : (feedback ?? '');
    const interrupt = { ...i, exchanges: [...i.exchanges, { principalId, question, at: now }] };
    return {
      kind: 'ask',
      interrupt,
      events: [{ type: 'approval.ask', nodeId: i.nodeId, payload: { ...base, question } }],
    };
  }
  const required = Number(i.data.requiredApprovals ?? 1);
  const vote: InterruptVote = { principalId, action, at: now, value: v };
  if (principalId !== caller) vote.castBy = caller;
  if (via !== undefined) vote.via = via;
  if (action === 'accept' || action === 'edit-accept') {
    const votes = upsertVote(i.votes, vote);
    const accepts = votes.filter(isAccept).length;
    if (accepts < required) {
      const events = [{ ...received, payload: { ...received.payload, votes: accepts, requiredApprovals: required } }];
      return { kind: 'vote', interrupt: { ...i, votes }, events };
    }
    return resolveWith(
      spread(i, { votes }),
      action,
      principalId,
      now,
      received,
      approvalOutput(i, votes, action, principalId, feedback),
    );
  }
  if (action === 'reject' && i.data.rejectionPolicy === 'majority') {
    // A reject is one vote; the gate ends rejected once rejects are more than half the quorum.
    const votes = upsertVote(i.votes, vote);
    const rejects = votes.filter((x) => x.action === 'reject').length;
    if (rejects * 2 <= required) {
      const events = [{ ...received, payload: { ...received.payload, rejects, requiredApprovals: required } }];
      return { kind: 'vote', interrupt: { ...i, votes }, events };
    }
    const output = {
      action,
      decidedBy: principalId,
      rejecters: votes.filter((x) => x.action === 'reject').map((x) => x.principalId),
      ...(feedback !== undefined ? { feedback } : {}),
    };
    return resolveWith(spread(i, { votes }), 'reject', principalId, now, received, output);
  }
  // reject (single veto) and refine end the gate at once.
  const output = {
    action,
    decidedBy: principalId,
    ...(feedback !== undefined ? { feedback } : {}),
    ...(action === 'refine' ? { refineFeedback: v.refineFeedback } : {}),
  };
  return resolveWith(i, action as 'reject' | 'refine', principalId, now, received, output);
}

/**
 * A declared voter's name: a plain id (letters, digits, `.`, `_`, `@`, `+`, `-`; at most 200
 * characters). No `:`, so no name of the host's own (`system:timeout`, `token:…`, `webhook:…`).
 */
const VOTER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}$/;

/**
 * Whom a vote counts for. On a gate with `voterIdentity: "declared"` the caller names the voter
 * (`resumeValue.voter`) and is trusted to have authenticated that person itself — if the gate lists
 * `relayers`, only they may; a vote naming nobody, or the caller, is the caller's own. On every other
 * gate the caller is the voter and a `voter` field is ignored: one authenticated actor, one vote
 * (docs/decisions.md).
 */
function voterOf(i: InterruptRecord, principalId: string, v: Record<string, unknown>): string {
  if (i.data.voterIdentity !== 'declared' || v.voter === undefined || v.voter === principalId) return principalId;
  if (typeof v.voter !== 'string' || !VOTER_NAME.test(v.voter)) {
    throw new EngineError(
      'validation_error',
      'resumeValue.voter must be a plain id: letters, digits, ".", "_", "@", "+" or "-", at most 200 characters',
    );
  }
  const relayers = i.data.relayers as string[] | undefined;
  if (relayers !== undefined && !relayers.includes(principalId)) {
    throw new EngineError('forbidden', `principal '${principalId}' may not cast votes for others on this gate`);
  }
  return v.voter;
}

/**
 * Whether the voter may decide. A gate that names approvers (`approversList`, the list an escalation
 * set, `approverGroupRefs`, `approverRoleRefs`) admits the voter when the list names it, or the
 * authenticated caller when one of its groups or roles is named; a gate naming none admits anyone.
 * The list names the voter (on a `declared` gate, whom the caller names); the refs always test the
 * caller's own credential. Returns the ref that admitted a decider the list does not name
 * (`group:<ref>` or `role:<ref>`), the decision-time snapshot a vote records.
 */
function checkApprover(i: InterruptRecord, principalId: string, who: Decider): string | undefined {
  const approvers = refsOf(i.data.approversList);
  const groupRefs = refsOf(i.data.approverGroupRefs);
  const roleRefs = refsOf(i.data.approverRoleRefs);
  if (approvers.length === 0 && groupRefs.length === 0 && roleRefs.length === 0) return undefined;
  if (approvers.includes(principalId)) return undefined;
  const group = groupRefs.find((g) => who.groups?.includes(g));
  if (group !== undefined) return `group:${group}`;
  const role = roleRefs.find((r) => who.roles?.includes(r));
  if (role !== undefined) return `role:${role}`;
  throw new EngineError('forbidden', `principal '${principalId}' is not an approver of this gate`);
}

const refsOf = (raw: unknown): string[] => (Array.isArray(raw) ? (raw as string[]) : []);

function checkActionFields(action: string, v: Record<string, unknown>): void {
  if (action === 'refine') {
    const rf = v.refineFeedback as Record<string, unknown> | undefined;
    if (!rf || typeof rf !== 'object' || !['whole', 'section', 'items'].includes(String(rf.scope))) {
      throw new EngineError(
        'validation_error',
        "refine requires refineFeedback {scope: 'whole'|'section'|'items', text?, tags?}",
      );
    }
  }
  if (action === 'edit-accept' && v.editedArtifactData === undefined) {
    throw new EngineError('validation_error', 'edit-accept requires editedArtifactData');
  }
  if (v.feedback !== undefined && typeof v.feedback !== 'string') {
    throw new EngineError('validation_error', 'feedback must be a string');
  }
}

function isAccept(vote: InterruptVote): boolean {
  return vote.action === 'accept' || vote.action === 'edit-accept';
}

/** One vote per principal: a later vote replaces that principal's earlier one. */
function upsertVote(votes: InterruptVote[], vote: InterruptVote): InterruptVote[] {
  return [...votes.filter((x) => x.principalId !== vote.principalId), vote];
}

function approvalOutput(
  i: InterruptRecord,
  votes: InterruptVote[],
  action: string,
  principalId: string,
  feedback: string | undefined,
): Record<string, unknown> {
  // The latest edit wins; with no edit the approved artifact is the one that was shown.
  const edit = [...votes].reverse().find((x) => x.action === 'edit-accept');
  const artifact = edit ? edit.value.editedArtifactData : i.data.artifact;
  const output: Record<string, unknown> = {
    action,
    artifact,
    decidedBy: principalId,
    approvers: votes.filter(isAccept).map((x) => x.principalId),
  };
  if (feedback !== undefined) output.feedback = feedback;
  return output;
}

function decideClarification(i: InterruptRecord, who: Decider, v: Record<string, unknown>, now: string): Decision {
  const principalId = who.principalId;
  checkApprover(i, principalId, who);
  const questions = (i.data.questions as Array<{ id: string }>) ?? [];
  const answers = normalizeAnswers(v.answers, questions);
  const missing = questions.filter((q) => answers[q.id] === undefined).map((q) => q.id);
  if (missing.length > 0) {
    throw new EngineError('validation_error', `missing answers for: ${missing.join(', ')}`, { missing });
  }
  const received: NewEvent = {
    type: 'clarification.resolved',
    nodeId: i.nodeId,
    payload: { interruptId: i.interruptId, decidedBy: principalId, decidedAt: now },
  };
  return resolveWith(i, 'answer', principalId, now, received, { answers, decidedBy: principalId });
}

/** Accept `{qid: answer}`, `[{id, answer}]`, and `{'*': text}` for a single question. */
function normalizeAnswers(raw: unknown, questions: Array<{ id: string }>): Record<string, unknown> {
  if (Array.isArray(raw)) {
    const out: Record<string, unknown> = {};
    for (const a of raw)
      if (a && typeof a === 'object' && 'id' in a) out[String(a.id)] = (a as { answer?: unknown }).answer;
    return out;
  }
  if (!raw || typeof raw !== 'object') {
    throw new EngineError('validation_error', 'resumeValue.answers must be an object {questionId: answer} or an array');
  }
  const map = { ...(raw as Record<string, unknown>) };
  if ('*' in map && questions.length === 1 && questions[0]) {
    map[questions[0].id] = map['*'];
    delete map['*'];
  }
  return map;
}

/**
 * `i` resolved. Written out, not as `{ ...i, status, resolution, … }`: V8 clones a record by
 * spread quickly only when no key is added, and these three are new to an open interrupt (that
 * spread alone cost microseconds per reply). The keys keep the order the spread gave them.
 */
function resolved(
  i: InterruptRecord,
  resolution: Record<string, unknown>,
  resolvedBy: string,
  resolvedAt: string,
): InterruptRecord {
  return {
    interruptId: i.interruptId,
    runId: i.runId,
    nodeId: i.nodeId,
    kind: i.kind,
    status: 'resolved',
    data: i.data,
    votes: i.votes,
    exchanges: i.exchanges,
    createdAt: i.createdAt,
    resolution,
    resolvedBy,
    resolvedAt,
  };
}

/** The decision that ends the gate: `received` (what decided it) is logged first. */
export function resolveWith(
  i: InterruptRecord,
  action: Extract<Decision, { kind: 'resolve' }>['action'],
  principalId: string,
  now: string,
  received: NewEvent,
  output: Record<string, unknown>,
  timedOut = false,
): Extract<Decision, { kind: 'resolve' }> {
  const resolution = { action, ...output };
  const interrupt = resolved(i, resolution, principalId, now);
  const events: NewEvent[] = [
    received,
    {
      type: 'interrupt.resolved',
      nodeId: i.nodeId,
      payload: {
        interruptId: i.interruptId,
        kind: i.kind,
        outcome: action,
        resolvedBy: principalId,
        resolvedAt: now,
        // OpenWOP's word for a resolution the deadline made (docs/protocol/openwop.md#deadlines).
        ...(timedOut ? { reason: 'timeout' } : {}),
      },
    },
  ];
  if (action !== 'reject') events.push({ type: 'node.resumed', nodeId: i.nodeId, payload: { action } });
  return {
    kind: 'resolve',
    action,
    interrupt,
    events,
    output,
    decidedBy: principalId,
    ...(timedOut ? { timedOut } : {}),
  };
}
