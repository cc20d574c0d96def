// What a person reading a run needs in words: why it is not moving (its activity), what it was
// started with (its inputs), what is being decided, who asked for it, and the timeline in
// sentences instead of event type names.
import { Link, runPath } from './router.js';
import { Ago } from './time.js';
import type { Activity, OpenInterrupt, RunError, RunEvent } from './types.js';
import { Fact, Json } from './ui.js';

/** A run failed because a person rejected it (resolution.ts: `interrupt_rejected`). */
export const isRejection = (error: RunError | undefined): boolean => error?.code === 'interrupt_rejected';

/** Who rejected a run, from its error. */
export const rejectedBy = (error: RunError | undefined): string => {
  const who = error?.details?.decidedBy;
  return typeof who === 'string' && who !== '' ? who : 'a person';
};

/** The one line under an inbox or operations row: what the run is doing or waiting on. */
export function ActivityLine({ activity }: { activity: Activity | undefined }) {
  if (!activity) return null;
  return (
    <p class={`activity activity-${activity.kind}`} data-activity={activity.kind}>
      {activity.summary}
    </p>
  );
}

/** The task page's account of why the run is not moving, with the retry or the peer in detail. */
export function ActivityPanel({ activity, events }: { activity: Activity; events: RunEvent[] }) {
  const peerLink = activity.peer ? peerLinkOf(activity.nodeId, events) : undefined;
  return (
    <section class={`activity-panel activity-${activity.kind}`} aria-labelledby="activity-title">
      <h2 id="activity-title">{ACTIVITY_TITLES[activity.kind]}</h2>
      <p data-testid="activity-summary">{activity.summary}</p>
      <dl class="facts">
        <Fact term="Since">
          <Ago iso={activity.since} />
        </Fact>
        {activity.nodeId && (
          <Fact term="Step">
            <code>{activity.nodeId}</code>
          </Fact>
        )}
        {activity.attempt !== undefined && <Fact term="Attempts so far">{activity.attempt}</Fact>}
        {activity.nextAttemptAt && (
          <Fact term="Next attempt">
            <Ago iso={activity.nextAttemptAt} />
          </Fact>
        )}
        {activity.lastError && (
          <Fact term="Last error">
            {activity.lastError.message} (<code>{activity.lastError.code}</code>)
          </Fact>
        )}
        {activity.peer && <Fact term="Agent">{activity.peer.agent}</Fact>}
        {activity.peer?.taskId && (
          <Fact term="Their task">
            {peerLink ? (
              <a href={peerLink} data-testid="peer-task-link">
                <code>{activity.peer.taskId}</code>
              </a>
            ) : (
              <code>{activity.peer.taskId}</code>
            )}
            {activity.peer.state && ` (${activity.peer.state})`}
          </Fact>
        )}
        {activity.child && (
          <Fact term="Child run">
            <Link href={runPath(activity.child.runId)}>
              <code>{activity.child.runId}</code>
            </Link>
          </Fact>
        )}
      </dl>
    </section>
  );
}

const ACTIVITY_TITLES: Record<Activity['kind'], string> = {
  running: 'Running',
  sleeping: 'Sleeping',
  retrying: 'Retrying',
  'waiting-person': 'Waiting for a person',
  'waiting-peer': 'Waiting on another agent',
  'waiting-child': 'Waiting on child runs',
};

/** The peer task's console page, when the call's `a2a.task.linked` says the peer is a Handoff. */
function peerLinkOf(nodeId: string | undefined, events: RunEvent[]): string | undefined {
  const linked = [...events].reverse().find((e) => e.type === 'a2a.task.linked' && e.nodeId === nodeId);
  const url = linked?.payload.peerConsoleUrl;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

/** Every peer task this run asked for, newest last: agent, task, and its page when the peer is a Handoff. */
export function Delegations({ events }: { events: RunEvent[] }) {
  const linked = events.filter((e) => e.type === 'a2a.task.linked');
  if (linked.length === 0) return null;
  return (
    <section aria-labelledby="delegations-title">
      <h2 id="delegations-title">Asked other agents</h2>
      <ul class="plain">
        {linked.map((e) => {
          const p = e.payload;
          const url = typeof p.peerConsoleUrl === 'string' ? p.peerConsoleUrl : undefined;
          const task = <code>{String(p.peerTaskId)}</code>;
          return (
            <li key={e.sequence} data-testid="delegation">
              Agent <strong>{String(p.agent)}</strong>, their task{' '}
              {url ? (
                <a href={url} data-testid="peer-console-link">
                  {task}
                </a>
              ) : (
                task
              )}
              {typeof p.cardUrl === 'string' && <span class="meta"> at {p.cardUrl}</span>}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** The calling agent and its task, from the first message of a run started by another agent. */
export function askedBy(events: RunEvent[]): { agent: string; runId?: string } | undefined {
  const first = events.find((e) => e.type === 'a2a.message');
  const message = first?.payload.message as { metadata?: { openwop?: Record<string, unknown> } } | undefined;
  const openwop = message?.metadata?.openwop;
  if (typeof openwop?.callerAgentId !== 'string') return undefined;
  return {
    agent: openwop.callerAgentId,
    ...(typeof openwop.runId === 'string' ? { runId: openwop.runId } : {}),
  };
}

export function AskedBy({ events }: { events: RunEvent[] }) {
  const asker = askedBy(events);
  if (!asker) return null;
  return (
    <p class="note note-info" data-testid="asked-by">
      Asked by agent <strong>{asker.agent}</strong>
      {asker.runId && (
        <>
          {' '}
          for its task <code>{asker.runId}</code>
        </>
      )}
      .
    </p>
  );
}

/** The run's inputs, each field on its own (a text as text), so two runs of one workflow can be told apart. */
export function Inputs({ inputs, compact = false }: { inputs: Record<string, unknown>; compact?: boolean }) {
  const entries = Object.entries(inputs);
  if (entries.length === 0) return compact ? null : <p>Started without inputs.</p>;
  return (
    <dl class={compact ? 'inputs inputs-compact' : 'inputs'} data-testid="inputs">
      {entries.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>
            {typeof v === 'string' ? <span class="text">{compact ? excerpt(v, 200) : v}</span> : <Json value={v} />}
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** One line of what a person is asked to decide: the gate's title and the start of what it shows. */
export function decidingLine(open: OpenInterrupt): string {
  const p = open.payload;
  const title = p.title?.trim() || open.nodeId;
  if (open.kind === 'clarification') {
    const first = p.questions?.[0]?.question;
    return first ? `${title}: ${first}` : title;
  }
  // The draft itself tells two runs apart; a gate's description is the same for every run.
  const about = textOf(p.artifact) ?? p.description;
  return about ? `${title}: ${excerpt(about, 140)}` : title;
}

/** The first text an artifact holds (a string, or the first string field of a record). */
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const first = Object.values(value).find((v) => typeof v === 'string');
    return typeof first === 'string' ? first : undefined;
  }
  return undefined;
}

const excerpt = (text: string, max: number): string => {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

const ACTION_WORDS: Record<string, string> = {
  accept: 'approved',
  approve: 'approved',
  'edit-accept': 'approved with edits',
  edit: 'approved with edits',
  reject: 'rejected',
  refine: 'asked for changes',
};

const PEER_STATE_WORDS: Record<string, string> = {
  submitted: 'received the request',
  working: 'is working on it',
  'input-required': 'asks a question',
  'auth-required': 'needs authorization',
  completed: 'completed the task',
  failed: 'failed the task',
  canceled: 'cancelled the task',
  rejected: 'rejected the task',
};

const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** The agent each call node asked (from its a2a.task.linked), for the events after it. */
export function agentsByNode(events: RunEvent[]): Map<string, string> {
  const agents = new Map<string, string>();
  for (const e of events) {
    if (e.type === 'a2a.task.linked' && e.nodeId && typeof e.payload.agent === 'string') {
      agents.set(e.nodeId, e.payload.agent);
    }
  }
  return agents;
}

/** An event in words: "Asked agent reviewer", "alice approved", "Rejected by alice". */
export function eventWords(e: RunEvent, agents: ReadonlyMap<string, string> = new Map()): string {
  const p = e.payload;
  const step = e.nodeId ? ` ${e.nodeId}` : '';
  const who = String(p.decidedBy ?? 'someone');
  const agent = (e.nodeId && agents.get(e.nodeId)) || 'the agent';
  switch (e.type) {
    case 'run.started':
      return 'Run started';
    case 'run.completed':
      return 'Run completed';
    case 'run.failed': {
      const error = p.error as RunError | undefined;
      if (isRejection(error)) return `Rejected by ${rejectedBy(error)}`;
      return error?.message ? `Run failed: ${error.message}` : 'Run failed';
    }
    case 'run.cancelling':
      return 'Cancel requested';
    case 'run.cancelled':
      return 'Run cancelled';
    case 'node.started':
      return `Started step${step}`;
    case 'node.completed':
      return p.outcome === 'rejected' ? `Step${step} ended with a rejection` : `Finished step${step}`;
    case 'node.retrying': {
      const error = p.lastError as { message?: string } | undefined;
      return `Attempt ${String(p.attempt)} at step${step} failed (${error?.message ?? 'an error'}); trying again`;
    }
    case 'node.failed':
      return `Step${step} failed`;
    case 'node.suspended':
      return `Step${step} waits for a person`;
    case 'node.resumed':
      return `Step${step} goes on`;
    case 'node.cancelled':
      return `Step${step} cancelled`;
    case 'artifact.created':
      return `Produced ${String(p.name ?? p.artifactId ?? 'an artifact')}`;
    case 'approval.requested':
      return `Asked for approval: ${String(p.title ?? e.nodeId)}`;
    case 'clarification.requested':
      return `Asked a question at step${step}`;
    case 'interrupt.requested':
      return p.kind === 'clarification'
        ? `Waiting for answers at step${step}`
        : `Waiting for a decision at step${step}`;
    case 'interrupt.resolved':
      return `Decision applied at step${step}`;
    case 'interrupt.expired':
      return `No decision before the deadline at step${step}`;
    case 'interrupt.escalated':
      return `Escalated at step${step}`;
    case 'approval.received':
      return `${capital(who)} ${ACTION_WORDS[String(p.action)] ?? `chose ${String(p.action)}`}`;
    case 'approval.ask':
      return `${capital(who)} asked a question`;
    case 'clarification.resolved':
      return `${capital(who)} answered`;
    case 'a2a.message':
      return messageWords(p);
    case 'a2a.task.linked':
      return `Asked agent ${String(p.agent)}`;
    case 'a2a.task.updated':
      if (p.relayed) return `Sent the answer to agent ${agent}`;
      return `${capital(agent === 'the agent' ? agent : `agent ${agent}`)} ${PEER_STATE_WORDS[String(p.state)] ?? `is ${String(p.state)}`}`;
    case 'child.started':
      return `Started child run ${String(p.runId)}`;
    case 'child.ended':
      return `Child run ${String(p.runId)} ${String(p.status)}`;
    case 'branch.withdrawn':
      return `Branch at${step} withdrawn: ${String(p.reason ?? 'its join went on without it')}`;
    default:
      return capital(e.type.replace(/[._]/g, ' ')) + step;
  }
}

function messageWords(p: Record<string, unknown>): string {
  const message = p.message as { role?: string; metadata?: { openwop?: { callerAgentId?: unknown } } } | undefined;
  const caller = message?.metadata?.openwop?.callerAgentId;
  if (typeof caller === 'string') return `Agent ${caller} sent a message`;
  if (typeof p.principalId === 'string') return `${capital(p.principalId)} replied`;
  return message?.role === 'agent' ? 'The agent answered' : 'A message arrived';
}
