// Why a run that has not ended is not moving, told from what is stored alone: its status, its
// lines (the cursor, or the branches of a fork), the node state each sleeping line recorded (a
// retry's attempt, error and next wake; the peer task an a2a.invoke waits on; the children a
// child-run node waits for) and its open interrupts. Pure: the same run gives the same answer, so
// a Task read twice (and the tasks/get cache) says the same thing.
//
//   const activity = activityOf(run, openInterrupts);   // undefined once the run has ended
import type { InterruptKind, RunEvent, RunHead } from '../store/model.js';
import { isTerminal, isWaiting } from '../store/model.js';
import { type Line, linesOf } from './branches.js';
import { childRunId } from './ids.js';

export const ACTIVITY_KINDS = [
  'running',
  'sleeping',
  'retrying',
  'waiting-person',
  'waiting-peer',
  'waiting-child',
] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

export interface Activity {
  kind: ActivityKind;
  nodeId?: string;
  /** One sentence for people: "Retrying the call to agent reviewer (attempt 4, next at 12:04:10 UTC): …". */
  summary: string;
  /** Since when the run does this (ISO 8601): the first failure of a retry, the interrupt's opening, … */
  since: string;
  /** Retrying: the attempts made so far (all failed). */
  attempt?: number;
  nextAttemptAt?: string;
  lastError?: { code: string; message: string };
  peer?: { agent: string; taskId?: string; state?: string; url?: string };
  child?: { runId: string };
}

/**
 * What a node that retries records under `retry` in the state of each sleep between attempts
 * (http.request, llm.chat, a2a.invoke), and logs as `node.retrying`. Texts are redacted.
 */
export interface RetryRecord {
  /** Attempts made so far, all failed. */
  attempt: number;
  nextAttemptAt: string;
  lastError: { code: string; message: string };
  /** When the first of these consecutive failures happened. */
  since: string;
  /** What is retried, for people: "the call to agent reviewer", "the HTTP call to api.example.com". */
  what: string;
}

/** The retry record a node keeps for its next sleep: `prior`'s start, one more attempt. */
export function nextRetry(
  prior: Record<string, unknown> | undefined,
  now: number,
  wakeAt: number,
  what: string,
  lastError: { code: string; message: string },
): RetryRecord {
  const before = retryOf(prior);
  return {
    attempt: (before?.attempt ?? 0) + 1,
    nextAttemptAt: new Date(wakeAt).toISOString(),
    lastError: { code: lastError.code, message: lastError.message },
    since: before?.since ?? new Date(now).toISOString(),
    what,
  };
}

/** The `node.retrying` event of a scheduled retry (what streams turn into a status update). */
export const retryEvent = (nodeId: string, retry: RetryRecord) => ({
  type: 'node.retrying' as const,
  nodeId,
  payload: { ...retry },
});

/** An open interrupt as far as the activity needs it. */
export interface ActivityInterrupt {
  kind: InterruptKind;
  nodeId: string;
  data: Record<string, unknown>;
  createdAt?: string;
}

/** Of several lines (a fork), the one shown: the most pressing first. */
const PRIORITY: readonly ActivityKind[] = [
  'retrying',
  'waiting-person',
  'waiting-peer',
  'waiting-child',
  'sleeping',
  'running',
];

/** The activity of `run`, or undefined once it has ended. A forked run shows its most pressing line. */
export function activityOf(run: RunHead, opens: readonly ActivityInterrupt[] = []): Activity | undefined {
  if (isTerminal(run.status)) return undefined;
  if (run.status === 'pending') return { kind: 'running', summary: 'Starting', since: run.createdAt };
  if (run.status === 'cancelling') return { kind: 'running', summary: 'Cancelling', since: run.updatedAt };
  const forked = run.cursor.branches !== undefined;
  // The most pressing line is found by its kind alone; only its activity is put in words.
  let shown: { line: Line; rank: number } | undefined;
  for (const line of linesOf(run.cursor)) {
    const rank = PRIORITY.indexOf(kindOf(run, line, forked));
    if (shown === undefined || rank < shown.rank) shown = { line, rank };
  }
  if (!shown) return { kind: 'running', summary: 'Running', since: run.updatedAt };
  return lineActivity(run, shown.line, opens, PRIORITY[shown.rank] as ActivityKind);
}

/** What a line is doing, from its place and the state its node recorded. */
function kindOf(run: RunHead, line: Line, forked: boolean): ActivityKind {
  if (forked ? line.waiting !== undefined : isWaiting(run.status)) return 'waiting-person';
  const state = line.nodeState;
  if (retryOf(state)) return 'retrying';
  if (peerOf(state)?.taskId !== undefined) return 'waiting-peer';
  if (openChildren(state).length > 0) return 'waiting-child';
  return line.wakeAt !== undefined ? 'sleeping' : 'running';
}

const openChildren = (state: Record<string, unknown> | undefined): number[] =>
  Array.isArray(state?.open) ? (state.open as unknown[]).filter((i): i is number => typeof i === 'number') : [];

/** The activity of a line of the kind `kindOf` found, in words. */
function lineActivity(run: RunHead, line: Line, opens: readonly ActivityInterrupt[], kind: ActivityKind): Activity {
  const nodeId = line.nodeId;
  const state = line.nodeState;
  const since = run.updatedAt;
  switch (kind) {
    case 'waiting-person':
      return personActivity(
        run,
        nodeId,
        opens.find((i) => i.nodeId === nodeId),
      );
    case 'retrying':
      return retryActivity(nodeId, retryOf(state) as RetryRecord, peerOf(state));
    case 'waiting-peer': {
      const peer = peerOf(state) as NonNullable<Activity['peer']>;
      return { kind, nodeId, summary: peerSummary(peer), since: peerSince(state) ?? since, peer };
    }
    case 'waiting-child': {
      const open = openChildren(state);
      const runId = childRunId(`${run.runId}:${nodeId}:${run.cursor.ordinals[nodeId] ?? 0}:${open[0]}`);
      const more = open.length > 1 ? ` and ${open.length - 1} more` : '';
      return {
        kind,
        nodeId,
        summary: `Waiting for child run ${runId}${more} (node ${nodeId})`,
        since,
        child: { runId },
      };
    }
    case 'sleeping':
      return {
        kind,
        nodeId,
        summary: `Sleeping at node ${nodeId} until ${clockTime(line.wakeAt ?? Number.NaN)}`,
        since,
      };
    default:
      return { kind: 'running', nodeId, summary: `Running node ${nodeId}`, since };
  }
}

function personActivity(run: RunHead, nodeId: string, open: ActivityInterrupt | undefined): Activity {
  const since = open?.createdAt ?? run.updatedAt;
  return { kind: 'waiting-person', nodeId, summary: decisionSummary(open, nodeId), since };
}

/**
 * One line saying what a person is asked, from the interrupt's data: "Approve: Publish the launch
 * note", or the first question of a clarification.
 */
export function decisionSummary(open: Pick<ActivityInterrupt, 'kind' | 'data'> | undefined, nodeId: string): string {
  if (!open) return `Waiting for a person at node ${nodeId}`;
  const title = typeof open.data.title === 'string' && open.data.title.trim() !== '' ? open.data.title.trim() : '';
  if (open.kind === 'approval') return `Waiting for approval: ${title || nodeId}`;
  const questions = Array.isArray(open.data.questions) ? open.data.questions : [];
  const first = questions[0] as { question?: unknown } | undefined;
  const asked = typeof first?.question === 'string' ? first.question : title || nodeId;
  const more = questions.length > 1 ? ` (+${questions.length - 1} more)` : '';
  return `Waiting for an answer: ${asked}${more}`;
}

function retryActivity(nodeId: string, r: RetryRecord, peer: Activity['peer']): Activity {
  const summary = `Retrying ${r.what} (attempt ${r.attempt}, next at ${clockTime(Date.parse(r.nextAttemptAt))}): ${r.lastError.message}`;
  return {
    kind: 'retrying',
    nodeId,
    summary,
    since: r.since,
    attempt: r.attempt,
    nextAttemptAt: r.nextAttemptAt,
    lastError: r.lastError,
    ...(peer ? { peer } : {}),
  };
}

/**
 * The activity an event announces (streams): a retry scheduled (`node.retrying`), or a peer task
 * linked (`a2a.task.linked`); undefined for any other event.
 */
export function activityOfEvent(e: RunEvent): Activity | undefined {
  if (e.nodeId === undefined) return undefined;
  if (e.type === 'node.retrying') {
    const retry = retryOf({ retry: e.payload });
    return retry ? retryActivity(e.nodeId, retry, undefined) : undefined;
  }
  const { agent, peerTaskId, state } = e.payload;
  if (e.type !== 'a2a.task.linked' || typeof agent !== 'string' || typeof peerTaskId !== 'string') return undefined;
  const peer = { agent, taskId: peerTaskId, ...(typeof state === 'string' ? { state } : {}) };
  return { kind: 'waiting-peer', nodeId: e.nodeId, summary: peerSummary(peer), since: e.timestamp, peer };
}

const peerSummary = (peer: NonNullable<Activity['peer']>): string =>
  `Waiting for agent ${peer.agent} (task ${peer.taskId} is ${peer.state ?? 'unknown'})`;

function retryOf(state: Record<string, unknown> | undefined): RetryRecord | undefined {
  const r = state?.retry as Partial<RetryRecord> | undefined;
  if (r === null || typeof r !== 'object') return undefined;
  const e = r.lastError;
  if (typeof r.attempt !== 'number' || typeof r.nextAttemptAt !== 'string' || typeof e?.code !== 'string')
    return undefined;
  return {
    attempt: r.attempt,
    nextAttemptAt: r.nextAttemptAt,
    lastError: { code: e.code, message: typeof e.message === 'string' ? e.message : e.code },
    since: typeof r.since === 'string' ? r.since : r.nextAttemptAt,
    what: typeof r.what === 'string' ? r.what : 'the call',
  };
}

/**
 * The peer an a2a.invoke node calls or waits on, read from its node state (the one place that
 * knows that node's state shape: `waitingOn` {agent, peerTaskId, state} and `waitingSince` once a
 * task is linked, `target` {agent} or {url} before).
 */
function peerOf(state: Record<string, unknown> | undefined): Activity['peer'] {
  const on = state?.waitingOn as { agent?: unknown; peerTaskId?: unknown; state?: unknown } | undefined;
  const target = state?.target as { agent?: unknown; url?: unknown } | undefined;
  const url = typeof target?.url === 'string' ? target.url : undefined;
  const agent = typeof on?.agent === 'string' ? on.agent : typeof target?.agent === 'string' ? target.agent : url;
  if (agent === undefined) return undefined;
  return {
    agent,
    ...(typeof on?.peerTaskId === 'string' ? { taskId: on.peerTaskId } : {}),
    ...(typeof on?.state === 'string' ? { state: on.state } : {}),
    ...(url !== undefined ? { url } : {}),
  };
}

const peerSince = (state: Record<string, unknown> | undefined): string | undefined =>
  typeof state?.waitingSince === 'string' ? state.waitingSince : undefined;

/** "12:04:10 UTC": the time of day people read in a summary (the full instant is in the fields). */
const clockTime = (ms: number): string =>
  Number.isFinite(ms) ? `${new Date(ms).toISOString().slice(11, 19)} UTC` : 'an unknown time';
