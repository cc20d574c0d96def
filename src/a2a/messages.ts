// What a caller's A2A message means to a run: the inputs of a new task (docs/protocol/openwop.md
// #start-by-message), or — a reply into an input-required task — the interrupt resolution it asks
// for: an approval in the five-action vocabulary, or clarification answers (#resume-by-message).
// `decidedBy` is never read from a message: the caller's principal is the host's to supply.
import type { InterruptKind } from '../store/model.js';
import { APPROVAL_ACTIONS, type ApprovalAction, approvalActionOf } from '../engine/vocabulary.js';
import type { Part } from './model.js';
import { isPlainObject, stringArray } from './values.js';

export interface FileInputRef {
  name?: string;
  mimeType?: string;
  uri?: string;
  /** Decoded size of inline bytes; the bytes themselves never enter run inputs or the log. */
  size?: number;
}

/** Start-run inputs from a message: text → `prompt` (joined by "\n"), data parts shallow-merged in
 * order (later wins, and over `prompt`), file parts → `files` references. */
export function partsToInputs(parts: Part[]): { inputs: Record<string, unknown> } {
  const texts: string[] = [];
  const files: FileInputRef[] = [];
  let merged: Record<string, unknown> = {};
  for (const p of parts) {
    if (p.kind === 'text') texts.push(p.text);
    else if (p.kind === 'data') merged = { ...merged, ...dataObject(p.data) };
    else files.push(fileRef(p));
  }
  const inputs: Record<string, unknown> = texts.length > 0 ? { prompt: texts.join('\n'), ...merged } : merged;
  if (files.length > 0) inputs.files = files;
  return { inputs };
}

/** A data part's value as an object: a bare value (1.0 allows one) is `{value}`, as it always was. */
const dataObject = (data: unknown): Record<string, unknown> => (isPlainObject(data) ? data : { value: data ?? null });

function fileRef(f: { name?: string; mediaType?: string; uri?: string; bytes?: string }): FileInputRef {
  const ref: FileInputRef = {};
  if (f.name !== undefined) ref.name = f.name;
  if (f.mediaType !== undefined) ref.mimeType = f.mediaType;
  if (typeof f.uri === 'string') ref.uri = f.uri;
  if (typeof f.bytes === 'string') ref.size = Buffer.byteLength(f.bytes, 'base64');
  return ref;
}

export interface RefineFeedback {
  scope: 'whole' | 'section' | 'items';
  sectionPath?: string;
  itemIds?: string[];
  tags?: string[];
  text?: string;
}

export interface ApprovalValue {
  action: Exclude<ApprovalAction, 'ask'>;
  feedback?: string;
  refineFeedback?: RefineFeedback;
  editedArtifactData?: unknown;
}

export type ResumeParse =
  | { kind: 'approval'; value: ApprovalValue }
  | { kind: 'clarification'; value: { answers: Record<string, string> } }
  | { kind: 'ask'; question: string }
  | { kind: 'invalid'; reason: string };

const invalid = (reason: string): ResumeParse => ({ kind: 'invalid', reason });

const textOf = (parts: Part[]): string =>
  parts
    .filter((p): p is Extract<Part, { kind: 'text' }> => p.kind === 'text')
    .map((p) => p.text)
    .join('\n')
    .trim();

const dataParts = (parts: Part[]): Record<string, unknown>[] =>
  parts.filter((p): p is Extract<Part, { kind: 'data' }> => p.kind === 'data').map((p) => dataObject(p.data));

/** `metadata.openwop` of the message, when it is an object. */
const openwopMeta = (metadata: unknown): Record<string, unknown> | undefined =>
  isPlainObject(metadata) && isPlainObject(metadata.openwop) ? metadata.openwop : undefined;

/**
 * The node a reply names, when a task waits at several: a data part's `nodeId`, else
 * `metadata.openwop.nodeId`. A value that is not a non-empty string names nothing.
 */
export function namedNode(parts: Part[], metadata: unknown): string | undefined {
  const fromData = dataParts(parts).find((d) => typeof d.nodeId === 'string' && d.nodeId !== '')?.nodeId;
  if (typeof fromData === 'string') return fromData;
  const fromMeta = openwopMeta(metadata)?.nodeId;
  return typeof fromMeta === 'string' && fromMeta !== '' ? fromMeta : undefined;
}

/**
 * The `artifactHash` a reply says it decided on: a data part's `expectedArtifactHash`, else
 * `metadata.openwop.expectedArtifactHash` (a non-empty string; anything else binds nothing).
 */
export function expectedHashOf(parts: Part[], metadata: unknown): string | undefined {
  const isHash = (v: unknown): v is string => typeof v === 'string' && v !== '';
  const fromData = dataParts(parts).find((d) => isHash(d.expectedArtifactHash))?.expectedArtifactHash;
  if (isHash(fromData)) return fromData;
  const fromMeta = openwopMeta(metadata)?.expectedArtifactHash;
  return isHash(fromMeta) ? fromMeta : undefined;
}

/** A reply into an input-required task → the interrupt resolution it asks for. `decidedBy` is
 * never read from the message: the caller's principal is the host's to supply. */
export function parseResumeMessage(parts: Part[], metadata: unknown, interruptKind: InterruptKind): ResumeParse {
  return interruptKind === 'approval'
    ? parseApproval(parts, openwopMeta(metadata))
    : parseClarification(parts, openwopMeta(metadata));
}

/** Sources in order: a data part with an action (canonical) or a legacy form; then
 * `metadata.openwop.action`; then `metadata.openwop.interrupt`; else free text is an `ask`. */
function parseApproval(parts: Part[], meta: Record<string, unknown> | undefined): ResumeParse {
  const text = textOf(parts);
  const fromData = dataParts(parts).find(hasDecision);
  if (fromData) return approvalFrom(fromData, text);
  if (typeof meta?.action === 'string') return approvalFrom({ ...meta, action: meta.action }, text);
  if (isPlainObject(meta?.action)) return approvalFrom(meta.action, text);
  const fromInterrupt = interruptResume(meta);
  if (fromInterrupt && hasDecision(fromInterrupt)) return approvalFrom(fromInterrupt, text);
  if (text) return { kind: 'ask', question: text };
  return invalid('no approval action found: send a data part {action: accept|reject|refine|edit-accept|ask}');
}

const hasDecision = (d: Record<string, unknown>): boolean => 'action' in d || 'approve' in d || 'decision' in d;

/** `metadata.openwop.interrupt` may be the resume value itself or wrap it as `{resumeValue}`. */
function interruptResume(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const it = meta?.interrupt;
  if (!isPlainObject(it)) return undefined;
  return isPlainObject(it.resumeValue) ? it.resumeValue : it;
}

/** One decision object → resolution. `text` (the message's text parts) backs up feedback/question. */
function approvalFrom(d: Record<string, unknown>, text: string): ResumeParse {
  if (d.feedback !== undefined && typeof d.feedback !== 'string') return invalid('feedback must be a string');
  const feedback = (d.feedback as string | undefined) ?? (text || undefined);
  const action = actionOf(d);
  if (action === undefined) {
    const given = JSON.stringify(d.action ?? d.decision ?? d.approve ?? null);
    return invalid(`unknown approval action ${given}; expected one of ${APPROVAL_ACTIONS.join(', ')}`);
  }
  switch (action) {
    case 'ask':
      return askFrom(d, text);
    case 'refine':
      return refineFrom(d, feedback);
    case 'edit-accept':
      if (d.editedArtifactData === undefined) return invalid('edit-accept requires editedArtifactData');
      return approval({ action, feedback, editedArtifactData: d.editedArtifactData });
    default:
      return approval({ action, feedback });
  }
}

/** Canonical `action`, `edit` alias, legacy `approve: boolean` and legacy `decision` (docs/protocol/openwop.md#approval). */
function actionOf(d: Record<string, unknown>): ApprovalAction | undefined {
  if (typeof d.action === 'string') return approvalActionOf(d.action);
  if (d.action !== undefined) return undefined;
  if (typeof d.approve === 'boolean') return d.approve ? 'accept' : 'reject';
  if (d.decision === 'approved') return 'accept';
  // Legacy: "rejected" with feedback meant "rework it", i.e. refine.
  if (d.decision === 'rejected') return typeof d.feedback === 'string' && d.feedback ? 'refine' : 'reject';
  return undefined;
}

function askFrom(d: Record<string, unknown>, text: string): ResumeParse {
  const q = [d.question, d.feedback, text].find((v): v is string => typeof v === 'string' && v.trim() !== '');
  return q ? { kind: 'ask', question: q.trim() } : invalid('ask requires a question (data.question or a text part)');
}

const REFINE_SCOPES = new Set(['whole', 'section', 'items']);

/** refine needs refineFeedback; bare feedback text is promoted to `{scope:'whole', text}`. */
function refineFrom(d: Record<string, unknown>, feedback: string | undefined): ResumeParse {
  const rf = d.refineFeedback;
  if (rf === undefined) {
    if (!feedback) return invalid('refine requires refineFeedback {scope, tags?, text?} or feedback text');
    return approval({ action: 'refine', feedback, refineFeedback: { scope: 'whole', text: feedback } });
  }
  if (!isPlainObject(rf)) return invalid('refineFeedback must be an object');
  const scope = rf.scope ?? 'whole';
  if (typeof scope !== 'string' || !REFINE_SCOPES.has(scope)) {
    return invalid('refineFeedback.scope must be one of whole, section, items');
  }
  if (rf.text !== undefined && typeof rf.text !== 'string') return invalid('refineFeedback.text must be a string');
  for (const k of ['tags', 'itemIds'] as const) {
    if (rf[k] !== undefined && !stringArray(rf[k])) return invalid(`refineFeedback.${k} must be an array of strings`);
  }
  if (rf.sectionPath !== undefined && typeof rf.sectionPath !== 'string') {
    return invalid('refineFeedback.sectionPath must be a string');
  }
  const refineFeedback = { ...rf, scope } as RefineFeedback;
  return approval({ action: 'refine', feedback, refineFeedback });
}

/** Drop undefined fields so the resume value stored in the log is tidy. */
function approval(v: ApprovalValue): ResumeParse {
  const value: ApprovalValue = { action: v.action };
  if (v.feedback !== undefined) value.feedback = v.feedback;
  if (v.refineFeedback !== undefined) value.refineFeedback = v.refineFeedback;
  if (v.editedArtifactData !== undefined) value.editedArtifactData = v.editedArtifactData;
  return { kind: 'approval', value };
}

/** Answers from a data part (or metadata.openwop.interrupt): `{qid: value}` map or `[{id, answer}]`;
 * else plain text answers the single question as `'*'`. */
function parseClarification(parts: Part[], meta: Record<string, unknown> | undefined): ResumeParse {
  const source = dataParts(parts).find((d) => 'answers' in d) ?? withAnswers(interruptResume(meta));
  if (source) return answersFrom(source.answers);
  const text = textOf(parts);
  if (text) return { kind: 'clarification', value: { answers: { '*': text } } };
  return invalid('no answers found: send a data part {answers: {<questionId>: <answer>}} or a text part');
}

const withAnswers = (d: Record<string, unknown> | undefined): Record<string, unknown> | undefined =>
  d && 'answers' in d ? d : undefined;

function answersFrom(raw: unknown): ResumeParse {
  const entries = answerEntries(raw);
  if (typeof entries === 'string') return invalid(entries);
  if (entries.length === 0) return invalid('answers must not be empty');
  const answers: Record<string, string> = {};
  for (const [id, v] of entries) {
    if (!isPrimitive(v)) return invalid(`answer for "${id}" must be a string, number or boolean`);
    answers[id] = String(v);
  }
  return { kind: 'clarification', value: { answers } };
}

/** Both wire forms as [id, answer] pairs, or a reason string when malformed. */
function answerEntries(raw: unknown): Array<[string, unknown]> | string {
  if (isPlainObject(raw)) return Object.entries(raw);
  if (!Array.isArray(raw)) return 'answers must be an object {<questionId>: answer} or an array [{id, answer}]';
  const out: Array<[string, unknown]> = [];
  for (const item of raw) {
    if (!isPlainObject(item) || typeof item.id !== 'string' || item.id === '') {
      return 'each answers[] entry must be {id: string, answer}';
    }
    out.push([item.id, item.answer]);
  }
  return out;
}

const isPrimitive = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
