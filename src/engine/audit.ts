// What the audit log records of the engine's acts, and what a decision is bound to. Pure: the
// store appends the entries in the act's own transaction (StoreTx.recordAudit).
//
// A decision is bound to what was seen: every interrupt view carries `artifactHash` (sha256 of the
// RFC 8785 form of the artifact to approve, or of the questions to answer); a decision that sends
// it back (`expectedArtifactHash`, or If-Match on REST) is refused with `artifact_changed` when
// the subject changed since — a refine re-opened the gate with a new draft, or a quorum vote
// edited it — and nothing changes.
import type { InterruptRecord, InterruptVote, RunRecord } from '../store/model.js';
import { contentHash } from '../store/jcs.js';
import type { NewAuditEntry } from '../store/repos/audit.js';
import { EngineError } from './errors.js';
import type { Expiry } from './deadlines.js';
import type { Decision } from './interrupts.js';
import { TIMEOUT_PRINCIPAL } from './vocabulary.js';

/** Where a person's act came in (the callers say; `link` is a signed decision link). */
export const SURFACES = ['rest', 'a2a', 'console', 'cli', 'link'] as const;
export type Surface = (typeof SURFACES)[number];

/** The surface of the acts the host does itself when a gate's deadline passes. */
export const DEADLINE_SURFACE = 'deadline';

/** Who acted and where: the principal of the caller, the surface it came in on. */
export interface Actor {
  tenantId: string;
  principalId: string;
  surface: Surface;
}

/** Scrubs every credential the host holds out of a value (src/secrets/redact.ts `deep`). */
export type Redact = <T>(value: T) => T;

/** What an interrupt asks to be decided on: its artifact (the latest edit of a quorum vote) or its questions. */
export function subjectOf(i: Pick<InterruptRecord, 'kind' | 'data'> & { votes?: InterruptVote[] }): unknown {
  if (i.kind === 'clarification') return i.data.questions ?? null;
  // The same choice as the approval's output (interrupts.ts approvalOutput): the latest edit wins.
  const edit = [...(i.votes ?? [])].reverse().find((v) => v.action === 'edit-accept');
  return edit ? edit.value.editedArtifactData : (i.data.artifact ?? null);
}

/**
 * The hashes made, by the interrupt data they were made of (and the votes beside it): one view of
 * a run shows its oldest interrupt twice (alone and in the list), hashed once. Records the store
 * hands out are never changed in place, so a data object hashes the same for as long as it lives.
 */
const made = new WeakMap<object, { votes: InterruptVote[] | undefined; hash: string }>();

/** `sha256:<hex>` of the RFC 8785 form of what `i` asks to be decided on. */
export function artifactHash(i: Pick<InterruptRecord, 'kind' | 'data'> & { votes?: InterruptVote[] }): string {
  const known = made.get(i.data);
  if (known && known.votes === i.votes) return known.hash;
  const hash = contentHash(subjectOf(i));
  made.set(i.data, { votes: i.votes, hash });
  return hash;
}

/** `sha256:<hex>`, `<hex>`, or an If-Match entity tag (`"…"`, `W/"…"`) → the hex digest. */
const digestOf = (hash: string): string =>
  hash
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1')
    .replace(/^sha256:/i, '')
    .toLowerCase();

/**
 * Refuse a decision sent for another artifact than the one `open` shows now (`artifact_changed`,
 * 409): nothing is changed. `expected` absent: the caller did not bind its decision.
 */
export function checkArtifact(open: InterruptRecord, expected: string | undefined): void {
  if (expected === undefined) return;
  const current = artifactHash(open);
  if (digestOf(expected) === digestOf(current)) return;
  throw new EngineError(
    'artifact_changed',
    `the ${open.kind === 'clarification' ? 'questions' : 'artifact'} at node '${open.nodeId}' changed since it was read ` +
      `(expected ${expected}, now ${current}); read the interrupt again and decide on what it shows`,
    { nodeId: open.nodeId, expectedArtifactHash: expected, artifactHash: current },
  );
}

/** A resume action → the audit log's act. */
function actOf(action: string): string {
  switch (action) {
    case 'accept':
      return 'approve';
    case 'edit-accept':
      return 'edit';
    default:
      return action;
  }
}

/**
 * The entry of a person's decision on `open` (before the decision changed it): its act, the resume
 * value as sent (scrubbed), how the gate took it (resolved, a vote, a question), the subject hash.
 */
export function decisionEntry(
  actor: Actor,
  runId: string,
  open: InterruptRecord,
  resumeValue: Record<string, unknown>,
  d: Decision,
  redact: Redact,
  expectedArtifactHash?: string,
): NewAuditEntry {
  const action = d.kind === 'resolve' ? d.action : d.kind === 'ask' ? 'ask' : String(resumeValue.action ?? 'accept');
  const outcome = d.kind === 'resolve' ? 'resolved' : d.kind === 'vote' ? 'vote-recorded' : 'ask-recorded';
  return {
    tenantId: actor.tenantId,
    principal: actor.principalId,
    surface: actor.surface,
    act: actOf(action),
    runId,
    nodeId: open.nodeId,
    values: {
      interruptId: open.interruptId,
      outcome,
      resumeValue: redact(resumeValue),
      // Who was counted and why: the declared voter when the caller named someone else, and the
      // approver group or role that admitted the caller.
      ...ballotOf(d, actor),
      // The decider bound the decision to what it saw (checked equal to subjectHash).
      ...(expectedArtifactHash !== undefined ? { expectedArtifactHash } : {}),
    },
    subjectHash: artifactHash(open),
  };
}

/**
 * Whom a decision counted for (`voter`, only when it is not the caller: a `voterIdentity:
 * "declared"` gate) and what admitted the caller (`via`: `group:<ref>` / `role:<ref>`), as the
 * decision's own approval event records them (interrupts.ts decideApproval: `decidedBy`, `via`).
 */
function ballotOf(d: Decision, actor: Actor): { voter?: string; via?: string } {
  const event = d.events.find((e) => e.type === 'approval.received' || e.type === 'approval.ask');
  const payload = (event?.payload ?? {}) as { decidedBy?: unknown; via?: unknown };
  const ballot: { voter?: string; via?: string } = {};
  if (typeof payload.decidedBy === 'string' && payload.decidedBy !== actor.principalId)
    ballot.voter = payload.decidedBy;
  if (typeof payload.via === 'string') ballot.via = payload.via;
  return ballot;
}

/** The entry of a gate's deadline acting on `open` (before): an escalation, or a timeout's resolution. */
export function expiryEntry(
  run: Pick<RunRecord, 'tenantId' | 'runId'>,
  open: InterruptRecord,
  e: Expiry,
): NewAuditEntry {
  const values =
    e.kind === 'escalate'
      ? { escalateTo: e.interrupt.data.approversList, expiresAt: e.interrupt.data.expiresAt }
      : { outcome: e.action, expiresAt: open.data.expiresAt };
  return {
    tenantId: run.tenantId,
    principal: TIMEOUT_PRINCIPAL,
    surface: DEADLINE_SURFACE,
    act: e.kind === 'escalate' ? 'escalate' : 'timeout',
    runId: run.runId,
    nodeId: open.nodeId,
    values: { interruptId: open.interruptId, ...values },
    subjectHash: artifactHash(open),
  };
}
