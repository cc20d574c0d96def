// The one pure projection OpenWOP run → A2A v0.3 Task, shared by tasks/get, streams, pushes and
// the REST read seam, so every surface reports the same state for the same run. The status table
// is spec/openwop.md §1.3 / §7.4 verbatim. Also: A2A message parts → run inputs, and a resume
// message → an interrupt resolution (spec/openwop.md §1.6 §4).
//
//   const task = toTask({ run, contextId, stateTimestamp: run.updatedAt, artifacts, history });
import type { InterruptKind, RunEvent, RunRecord, RunStatus } from '../store/model.js';
import type {
  A2AInterruptKind,
  A2APushConfigRecord,
  A2ATaskState,
  Artifact,
  Message,
  Part,
  StoredTaskState,
  Task,
  TaskArtifactUpdateEvent,
  TaskState,
  TaskStatusUpdateEvent,
} from './types.js';

// ---------------------------------------------------------------- state table

export interface ProjectedState {
  state: StoredTaskState;
  /** Set iff `state` is `input-required` and the wait is an approval or a clarification. */
  interruptKind?: A2AInterruptKind;
}

const STATE_TABLE: Record<RunStatus, ProjectedState> = {
  pending: { state: 'submitted' },
  running: { state: 'working' },
  // Drift #1: A2A has no pause. A cancelling run stays working until it is terminal (RFC 0094).
  paused: { state: 'working' },
  cancelling: { state: 'working' },
  'waiting-approval': { state: 'input-required', interruptKind: 'approval' },
  'waiting-input': { state: 'input-required', interruptKind: 'clarification' },
  // RFC 0152 §D.4: input-required, but interruptKind has no value for an external event.
  'waiting-external': { state: 'input-required' },
  completed: { state: 'completed' },
  failed: { state: 'failed' },
  cancelled: { state: 'canceled' },
};

/** Run status → A2A state. The run status alone decides the kind (the engine enters
 * waiting-approval only for approvals and waiting-input only for clarifications), so the open
 * interrupt's kind is accepted for call-site symmetry but never overrides the table. Never
 * yields auth-required or rejected: those exist only for the reverse direction. */
export function projectState(status: RunStatus, _interruptKind?: InterruptKind): ProjectedState {
  const row = STATE_TABLE[status];
  return row.interruptKind ? { state: row.state, interruptKind: row.interruptKind } : { state: row.state };
}

const TERMINAL: ReadonlySet<TaskState> = new Set(['completed', 'canceled', 'failed', 'rejected']);
const INTERRUPTED: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required']);

export const isTerminalState = (state: TaskState): boolean => TERMINAL.has(state);

/** A message/stream (and a blocking send) ends at a terminal state or when the caller must act. */
export const isFinalForMessageStream = (state: TaskState): boolean => TERMINAL.has(state) || INTERRUPTED.has(state);

// ---------------------------------------------------------------- stored record

export interface TaskStateInput {
  runId: string;
  status: RunStatus;
  contextId?: string;
  openInterruptKind?: InterruptKind;
  updatedAt: string;
  pushConfig?: A2APushConfigRecord;
}

/** The RFC 0100 A2ATaskState record. The schema is closed, so only its fields are copied. */
export function toTaskState(run: TaskStateInput): A2ATaskState {
  const { state, interruptKind } = projectState(run.status, run.openInterruptKind);
  const rec: A2ATaskState = { taskId: run.runId, runId: run.runId, state, updatedAt: run.updatedAt };
  if (run.contextId !== undefined) rec.contextId = run.contextId;
  if (interruptKind) rec.interruptKind = interruptKind;
  if (run.pushConfig) rec.pushConfig = pushConfigRecord(run.pushConfig);
  return rec;
}

const pushConfigRecord = (p: A2APushConfigRecord): A2APushConfigRecord =>
  p.tokenFingerprint === undefined ? { url: p.url } : { url: p.url, tokenFingerprint: p.tokenFingerprint };

// ---------------------------------------------------------------- Task

/** The open interrupt as the engine stores it (InterruptRecord's kind, nodeId and data). */
export interface InterruptView {
  kind: InterruptKind;
  nodeId: string;
  data: Record<string, unknown>;
}

export interface ToTaskInput {
  run: RunRecord;
  contextId: string;
  interruptKind?: InterruptKind;
  interrupt?: InterruptView;
  /** When the projected state last changed (the A2ATaskState updatedAt). */
  stateTimestamp: string;
  artifacts: Artifact[];
  history: Message[];
  /** undefined → all history, 0 → none, N → the last N messages. */
  historyLength?: number;
}

export function toTask(input: ToTaskInput): Task {
  const { run, contextId } = input;
  const { state } = projectState(run.status, input.interruptKind ?? input.interrupt?.kind);
  // runStatus keeps what the projection loses (drift #1: paused; also cancelling, waiting-external).
  const openwop: Record<string, unknown> = { runId: run.runId, workflowId: run.workflowId, runStatus: run.status };
  const task: Task = { kind: 'task', id: run.runId, contextId, status: { state, timestamp: input.stateTimestamp } };

  if (state === 'input-required') openwop.interrupt = interruptMetadata(run.status, input.interrupt);
  if (state === 'failed') {
    const error = runError(run);
    openwop.error = error;
    task.status.message = agentMessage(`${run.runId}:status:failed`, run.runId, contextId, error.message);
  }
  if (input.artifacts.length > 0) task.artifacts = input.artifacts;
  const history = sliceHistory(input.history, input.historyLength);
  if (history.length > 0) task.history = history;
  task.metadata = { openwop };
  return task;
}

function sliceHistory(history: Message[], n: number | undefined): Message[] {
  if (n === undefined) return history;
  return n <= 0 ? [] : history.slice(-n);
}

const runError = (run: RunRecord): { code: string; message: string } => ({
  code: run.error?.code ?? 'run_failed',
  message: run.error?.message ?? 'The run failed',
});

/** A status message is an agent Message; its id is derived so repeated reads are identical. */
const agentMessage = (messageId: string, taskId: string, contextId: string, text: string): Message => ({
  kind: 'message',
  messageId,
  role: 'agent',
  taskId,
  contextId,
  parts: [{ kind: 'text', text }],
});

/** `metadata.openwop.interrupt`: drift #2 disambiguation, plus what the caller needs to answer. */
function interruptMetadata(status: RunStatus, interrupt?: InterruptView): Record<string, unknown> {
  // Only waiting-external lacks a table kind; the metadata carrier is then the only place to say it.
  const kind = STATE_TABLE[status].interruptKind ?? 'external-event';
  const meta: Record<string, unknown> = { kind };
  if (!interrupt) return meta;
  meta.nodeId = interrupt.nodeId;
  if (kind === 'approval') {
    const actions = stringArray(interrupt.data.actions);
    // Gates may list `edit`; the resume wire name is `edit-accept` (spec/openwop.md §9.14).
    if (actions) meta.actions = actions.map((a) => (a === 'edit' ? 'edit-accept' : a));
    // What the caller is asked to approve; Task reads are authenticated (pushes stay content-free).
    if (typeof interrupt.data.title === 'string') meta.title = interrupt.data.title;
    if ('artifact' in interrupt.data) meta.artifact = interrupt.data.artifact;
  }
  if (kind === 'clarification' && Array.isArray(interrupt.data.questions)) {
    meta.questions = interrupt.data.questions;
  }
  return meta;
}

const stringArray = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;

// ---------------------------------------------------------------- events

export interface StatusUpdateOptions {
  final: boolean;
  interruptKind?: A2AInterruptKind;
  error?: { code: string; message: string };
}

/** Content-free status update (stream events and push bodies): state, kind and error only; never
 * run inputs, outputs or interrupt payloads. */
export function toStatusUpdate(
  taskId: string,
  contextId: string,
  state: TaskState,
  timestamp: string,
  opts: StatusUpdateOptions,
): TaskStatusUpdateEvent {
  const openwop: Record<string, unknown> = { runId: taskId };
  if (state === 'input-required' && opts.interruptKind) openwop.interrupt = { kind: opts.interruptKind };
  if (state === 'failed' && opts.error) openwop.error = { code: opts.error.code, message: opts.error.message };
  return {
    kind: 'status-update',
    taskId,
    contextId,
    status: { state, timestamp },
    final: opts.final,
    metadata: { openwop },
  };
}

export function toArtifactUpdate(
  taskId: string,
  contextId: string,
  artifact: Artifact,
  opts: { append?: boolean; lastChunk?: boolean } = {},
): TaskArtifactUpdateEvent {
  const ev: TaskArtifactUpdateEvent = { kind: 'artifact-update', taskId, contextId, artifact };
  if (opts.append !== undefined) ev.append = opts.append;
  if (opts.lastChunk !== undefined) ev.lastChunk = opts.lastChunk;
  return ev;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** An `artifact.created` run event → A2A Artifact; undefined for any other event. v0.3 data
 * parts must hold an object, so a bare value is wrapped as `{value}`. */
export function artifactFromEvent(event: RunEvent): Artifact | undefined {
  if (event.type !== 'artifact.created') return undefined;
  const { artifactId, name, data } = event.payload;
  if (typeof artifactId !== 'string' || artifactId === '') return undefined;
  const artifact: Artifact = {
    artifactId,
    parts: [{ kind: 'data', data: isPlainObject(data) ? data : { value: data ?? null } }],
  };
  if (typeof name === 'string') artifact.name = name;
  return artifact;
}

/** The task's artifacts from its event log: the latest version of each, in first-seen order. */
export function collectArtifacts(events: Iterable<RunEvent>): Artifact[] {
  const byId = new Map<string, Artifact>();
  for (const ev of events) {
    const a = artifactFromEvent(ev);
    if (a) byId.set(a.artifactId, a);
  }
  return [...byId.values()];
}

// ---------------------------------------------------------------- message → run inputs

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
    else if (p.kind === 'data') merged = { ...merged, ...p.data };
    else files.push(fileRef(p.file));
  }
  const inputs: Record<string, unknown> = texts.length > 0 ? { prompt: texts.join('\n'), ...merged } : merged;
  if (files.length > 0) inputs.files = files;
  return { inputs };
}

function fileRef(f: { name?: string; mimeType?: string; uri?: string; bytes?: string }): FileInputRef {
  const ref: FileInputRef = {};
  if (f.name !== undefined) ref.name = f.name;
  if (f.mimeType !== undefined) ref.mimeType = f.mimeType;
  if (typeof f.uri === 'string') ref.uri = f.uri;
  if (typeof f.bytes === 'string') ref.size = Buffer.byteLength(f.bytes, 'base64');
  return ref;
}

// ---------------------------------------------------------------- resume messages

export const APPROVAL_ACTIONS = ['accept', 'reject', 'refine', 'edit-accept', 'ask'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

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
  parts.filter((p): p is Extract<Part, { kind: 'data' }> => p.kind === 'data').map((p) => p.data);

/** `metadata.openwop` of the message, when it is an object. */
const openwopMeta = (metadata: unknown): Record<string, unknown> | undefined =>
  isPlainObject(metadata) && isPlainObject(metadata.openwop) ? metadata.openwop : undefined;

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
  const action = normalizeAction(d);
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

/** Canonical `action`, `edit` alias, legacy `approve: boolean` and legacy `decision` (§1.6 §4). */
function normalizeAction(d: Record<string, unknown>): ApprovalAction | undefined {
  if (typeof d.action === 'string') {
    const a = d.action === 'edit' ? 'edit-accept' : d.action;
    return (APPROVAL_ACTIONS as readonly string[]).includes(a) ? (a as ApprovalAction) : undefined;
  }
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
