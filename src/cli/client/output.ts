// Output of the client commands: exit codes from task states (the openwop CLI convention,
// docs/protocol/openwop.md#cli-exit-codes), colour only on a TTY without NO_COLOR (node:util styleText), and the
// human rendering of Tasks, stream events and errors. `--json` output is written by the commands.
import { styleText } from 'node:util';
import { INTERRUPTED_STATES, type TaskState, TERMINAL_STATES } from '../../a2a/model.js';
import type {
  Artifact,
  Message,
  Part,
  Task,
  TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent,
} from '../../a2a/v0_3/types.js';
import { UsageError } from './card.js';
import { HttpStatusError, NetworkError } from './http.js';
import { cliCommand } from './invocation.js';
import { InvalidResponseError, RpcError } from './rpc.js';

// ---------------------------------------------------------------- exit codes

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
/** The task is not finished: submitted, working, input-required or auth-required. */
export const EXIT_PENDING = 3;

const PENDING_STATES: ReadonlySet<string> = new Set(['submitted', 'working', ...INTERRUPTED_STATES]);

export const isTerminal = (state: string | undefined): boolean =>
  state !== undefined && TERMINAL_STATES.has(state as TaskState);

/** 0 completed; 3 submitted, working, input-required, auth-required; 1 anything else. */
export function exitCodeForState(state: string | undefined): number {
  if (state === 'completed') return EXIT_OK;
  if (state !== undefined && PENDING_STATES.has(state)) return EXIT_PENDING;
  return EXIT_ERROR;
}

// ---------------------------------------------------------------- colour

type Format = Parameters<typeof styleText>[0];

/** Colour for one stream: on iff it is a TTY, NO_COLOR is unset or empty, and TERM is not dumb. */
export class Paint {
  readonly enabled: boolean;
  constructor(stream: NodeJS.WriteStream) {
    const noColor = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '';
    this.enabled = stream.isTTY === true && !noColor && process.env.TERM !== 'dumb';
  }
  style(format: Format, text: string): string {
    // Our own check decides; styleText must not second-guess it against process.stdout.
    return this.enabled ? styleText(format, text, { validateStream: false }) : text;
  }
  dim = (t: string): string => this.style('dim', t);
  bold = (t: string): string => this.style('bold', t);
  red = (t: string): string => this.style('red', t);
  state(state: string): string {
    if (state === 'completed') return this.style(['green', 'bold'], state);
    if (isTerminal(state)) return this.style(['red', 'bold'], state);
    if (INTERRUPTED_STATES.has(state as TaskState)) return this.style(['yellow', 'bold'], state);
    return this.style('cyan', state);
  }
}

// ---------------------------------------------------------------- values

type Rec = Record<string, unknown>;
const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `metadata.openwop` of a Handoff Task or event (undefined for other agents). */
export const openwopOf = (v: { metadata?: Rec | undefined }): Rec | undefined =>
  isObject(v.metadata) && isObject(v.metadata.openwop) ? v.metadata.openwop : undefined;

const compact = (v: unknown): string => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s;
};

export function partText(p: Part): string {
  if (p.kind === 'text') return p.text;
  if (p.kind === 'data') return compact(p.data);
  const f = p.file as { name?: string; mimeType?: string; uri?: string; bytes?: string };
  const what = [f.name, f.mimeType].filter(Boolean).join(' ');
  const where =
    typeof f.uri === 'string'
      ? f.uri
      : typeof f.bytes === 'string'
        ? `${Buffer.byteLength(f.bytes, 'base64')} bytes inline`
        : '';
  return `[file${what ? ` ${what}` : ''}${where ? ` ${where}` : ''}]`;
}

export const messageText = (m: Message | undefined): string => (m?.parts ?? []).map(partText).join('\n');

const artifactTitle = (a: Artifact): string =>
  a.name && a.name !== a.artifactId ? `${a.artifactId} "${a.name}"` : a.artifactId;

/** Several lines are indented under the first. */
const indent = (text: string, pad: string): string => text.split('\n').join(`\n${pad}`);

const LABEL = 10;
function row(p: Paint, label: string, value: string): string {
  return `${p.dim(label.padEnd(LABEL))}${indent(value, ' '.repeat(LABEL))}`;
}

// ---------------------------------------------------------------- Task

/** One open interrupt as `metadata.openwop.interrupts` lists it. */
export interface OpenInterrupt {
  nodeId: string;
  kind: string;
  title?: string;
}

/** Every open interrupt of a Handoff task, oldest first (several while parallel branches wait). */
export function openInterruptsOf(v: { metadata?: Rec | undefined }): OpenInterrupt[] {
  const list = openwopOf(v)?.interrupts;
  if (!Array.isArray(list)) return [];
  return list.filter(isObject).map((i) => ({
    nodeId: String(i.nodeId),
    kind: String(i.kind),
    ...(typeof i.title === 'string' ? { title: i.title } : {}),
  }));
}

const ALL_ACTIONS = 'accept|reject|refine|edit-accept|ask';

/**
 * The "what to do next" lines for a task waiting on its caller (Handoff's interrupt metadata):
 * one command per kind of interrupt open, naming the nodes with --node when there are several.
 */
function nextSteps(task: Task, agentUrl: string | undefined): string[] {
  if (task.status.state !== 'input-required' || agentUrl === undefined) return [];
  const open = openInterruptsOf(task);
  const approve = `${cliCommand()} approve ${agentUrl} ${task.id}`;
  const answer = `${cliCommand()} answer ${agentUrl} ${task.id}`;
  if (open.length <= 1) {
    const interrupt = openwopOf(task)?.interrupt as Rec | undefined;
    const kind = open[0]?.kind ?? interrupt?.kind;
    // The gate's own actions when the task lists them (a gate may allow fewer than all five).
    const actions = Array.isArray(interrupt?.actions) ? interrupt.actions.join('|') : ALL_ACTIONS;
    return [kind === 'approval' ? `${approve} --action ${actions}` : `${answer} "<reply>"`];
  }
  const nodes = (kind: string) =>
    open
      .filter((i) => i.kind === kind)
      .map((i) => i.nodeId)
      .join('|');
  const steps: string[] = [];
  if (nodes('approval')) steps.push(`${approve} --node ${nodes('approval')} --action ${ALL_ACTIONS}`);
  if (nodes('clarification')) steps.push(`${answer} --node ${nodes('clarification')} "<reply>"`);
  return steps;
}

/** The open interrupts, a line each: node, kind, title. */
export function openRows(p: Paint, open: OpenInterrupt[]): string[] {
  const width = Math.max(...open.map((i) => i.nodeId.length));
  const lines = open.map((i) => `${i.nodeId.padEnd(width)}  ${i.kind.padEnd(13)}  ${i.title ?? ''}`.trimEnd());
  return [row(p, 'open', lines.join('\n'))];
}

/** Interrupt details (Handoff): kind and node, title, the artifact under review, actions, questions. */
function interruptRows(p: Paint, interrupt: Rec): string[] {
  const out: string[] = [];
  if (typeof interrupt.title === 'string') out.push(row(p, 'asks', interrupt.title));
  if (interrupt.artifact !== undefined) out.push(row(p, 'draft', compact(interrupt.artifact)));
  if (Array.isArray(interrupt.actions)) out.push(row(p, 'actions', interrupt.actions.join(', ')));
  if (Array.isArray(interrupt.questions)) {
    const qs = interrupt.questions.map((q) =>
      isObject(q) ? `${String(q.id ?? '?')}: ${String(q.question ?? q.text ?? compact(q))}` : String(q),
    );
    out.push(row(p, 'questions', qs.join('\n')));
  }
  return out;
}

function stateLabel(p: Paint, state: string, interrupt: Rec | undefined, open: OpenInterrupt[] = []): string {
  if (state === 'input-required' && open.length > 1) return `${p.state(state)}${p.dim(` (${open.length} open)`)}`;
  if (!interrupt || state !== 'input-required') return p.state(state);
  const where = [interrupt.kind, interrupt.nodeId ? `at ${String(interrupt.nodeId)}` : undefined]
    .filter(Boolean)
    .join(' ');
  return `${p.state(state)}${where ? p.dim(` (${where})`) : ''}`;
}

/**
 * What a waiting task asks: the one open interrupt in detail, or, when parallel branches wait at
 * several nodes, each of them (node, kind, title; the details of each are in the console or REST).
 */
function waitingRows(p: Paint, interrupt: Rec | undefined, open: OpenInterrupt[]): string[] {
  if (open.length > 1) return openRows(p, open);
  return interrupt ? interruptRows(p, interrupt) : [];
}

/**
 * What a task that has not ended is doing or waiting on (`metadata.openwop.activity`, a Handoff
 * host's): its sentence, and since when. Empty when the task does not say.
 */
function activityText(ow: Rec | undefined, p: Paint): string {
  const a = isObject(ow?.activity) ? ow.activity : undefined;
  if (typeof a?.summary !== 'string') return '';
  return typeof a.since === 'string' ? `${a.summary} ${p.dim(`(since ${a.since})`)}` : a.summary;
}

/** A Task for humans; `agentUrl` lets it suggest the next command. */
export function formatTask(task: Task, p: Paint, agentUrl?: string): string {
  const ow = openwopOf(task);
  const interrupt = isObject(ow?.interrupt) ? ow.interrupt : undefined;
  const open = openInterruptsOf(task);
  const lines = [row(p, 'task', p.bold(task.id))];
  if (task.contextId) lines.push(row(p, 'context', p.dim(task.contextId)));
  const skill = ow?.workflowId ?? task.metadata?.skillId;
  if (typeof skill === 'string') lines.push(row(p, 'skill', skill));
  lines.push(row(p, 'state', stateLabel(p, task.status.state, interrupt, open)));
  const status = messageText(task.status.message);
  const doing = activityText(ow, p);
  if (doing) lines.push(row(p, 'activity', doing));
  if (status && !doing.startsWith(status)) lines.push(row(p, 'message', status));
  lines.push(...waitingRows(p, interrupt, open));
  for (const a of task.artifacts ?? [])
    lines.push(row(p, 'artifact', `${artifactTitle(a)}\n${a.parts.map(partText).join('\n')}`));
  const next = nextSteps(task, agentUrl);
  if (next.length > 0) lines.push(row(p, 'next', p.dim(next.join('\n'))));
  return lines.join('\n');
}

export function formatMessage(msg: Message, p: Paint): string {
  const lines = [row(p, 'message', p.bold(msg.messageId)), row(p, 'from', msg.role)];
  if (msg.taskId) lines.push(row(p, 'task', msg.taskId));
  lines.push(row(p, 'text', messageText(msg) || p.dim('(empty)')));
  return lines.join('\n');
}

// ---------------------------------------------------------------- stream events (watch)

const clock = (iso: string | undefined): string => {
  const d = iso ? new Date(iso) : new Date();
  const t = Number.isNaN(d.getTime()) ? new Date() : d;
  return t.toTimeString().slice(0, 8);
};

/** A line under an event's first line (and its own continuation lines under it). */
const under = (line: string): string => indent(`          ${line}`, '          ');

/**
 * What a task waiting on its caller asks and how to answer, as lines under a stream event (a
 * status-update names only the kind: `watch` reads the Task to show every open interrupt).
 */
export function waitingLines(task: Task, p: Paint, agentUrl?: string): string[] {
  if (task.status.state !== 'input-required') return [];
  const ow = openwopOf(task);
  const interrupt = isObject(ow?.interrupt) ? ow.interrupt : undefined;
  return [
    ...waitingRows(p, interrupt, openInterruptsOf(task)).map(under),
    ...nextSteps(task, agentUrl).map((next) => under(p.dim(`next: ${next}`))),
  ];
}

/** One line (or a few) per stream event. */
export function formatEventLine(result: unknown, p: Paint, agentUrl?: string): string {
  if (!isObject(result)) return compact(result);
  switch (result.kind) {
    case 'task': {
      const task = result as unknown as Task;
      const ow = openwopOf(task);
      const interrupt = isObject(ow?.interrupt) ? ow.interrupt : undefined;
      const open = openInterruptsOf(task);
      const lines = [`${p.dim(clock(task.status.timestamp))}  ${stateLabel(p, task.status.state, interrupt, open)}`];
      const status = messageText(task.status.message);
      if (status) lines.push(`          ${status}`);
      const doing = activityText(ow, p);
      if (doing && !doing.startsWith(status || '\u0000')) lines.push(`          ${p.dim('activity')} ${doing}`);
      lines.push(...waitingRows(p, interrupt, open).map(under));
      const on = isObject(ow?.waitingOn) ? ow.waitingOn : undefined;
      if (on) lines.push(`          ${p.dim('waiting on')} agent ${on.agent}, task ${on.peerTaskId} (${on.state})`);
      for (const a of task.artifacts ?? [])
        lines.push(`          ${p.dim('artifact')} ${artifactTitle(a)}  ${a.parts.map(partText).join(' ')}`);
      lines.push(...nextSteps(task, agentUrl).map((next) => under(p.dim(`next: ${next}`))));
      return lines.join('\n');
    }
    case 'status-update': {
      const ev = result as unknown as TaskStatusUpdateEvent;
      const ow = openwopOf(ev);
      const interrupt = isObject(ow?.interrupt) ? ow.interrupt : undefined;
      const error = isObject(ow?.error) ? ow.error : undefined;
      let line = `${p.dim(clock(ev.status.timestamp))}  ${stateLabel(p, ev.status.state, interrupt)}`;
      const text = messageText(ev.status.message) || (typeof error?.message === 'string' ? error.message : '');
      if (text) line += `  ${text}`;
      return line;
    }
    case 'artifact-update': {
      const ev = result as unknown as TaskArtifactUpdateEvent;
      return `${p.dim(clock(undefined))}  ${p.dim('artifact')} ${artifactTitle(ev.artifact)}  ${ev.artifact.parts.map(partText).join(' ')}`;
    }
    case 'message':
      return `${p.dim(clock(undefined))}  ${p.dim('message')} ${messageText(result as unknown as Message)}`;
    default:
      return compact(result);
  }
}

// ---------------------------------------------------------------- errors

/** Print an error to stderr as `handoff: …`; returns the exit code (always 1). */
export function reportError(err: unknown, p: Paint = new Paint(process.stderr)): number {
  const prefix = p.red('handoff:');
  if (err instanceof RpcError) {
    const data = err.data === undefined ? '' : `\n  data: ${compact(err.data)}`;
    process.stderr.write(`${prefix} JSON-RPC error ${err.code}: ${err.message}${data}\n`);
  } else if (err instanceof HttpStatusError) {
    const hint = err.status === 401 ? ' (pass --api-key or set HANDOFF_API_KEY)' : '';
    process.stderr.write(`${prefix} ${err.message}${hint}\n`);
  } else if (err instanceof NetworkError || err instanceof UsageError || err instanceof InvalidResponseError) {
    process.stderr.write(`${prefix} ${err.message}\n`);
  } else {
    process.stderr.write(`${prefix} ${err instanceof Error ? err.message : String(err)}\n`);
  }
  return EXIT_ERROR;
}
