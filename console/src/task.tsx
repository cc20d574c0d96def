// One run (an A2A task): status, what it waits on, the decision forms (one per open interrupt: a
// run forked by core.parallel may wait at several nodes at once), artifacts, the live timeline of
// its events (grouped by branch), and its push notification configs.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, api, errorText, rpc } from './api.js';
import { AuditTrail } from './audit.js';
import { ApprovalPanel, ClarificationPanel, type Decide, panelId } from './decide.js';
import { coalesce, useLoaded } from './live.js';
import {
  ActivityPanel,
  AskedBy,
  agentsByNode,
  Delegations,
  decidingLine,
  eventWords,
  Inputs,
  isRejection,
  rejectedBy,
} from './people.js';
import { Link } from './router.js';
import { follow, type StreamState } from './stream.js';
import { Ago } from './time.js';
import {
  type OpenInterrupt,
  openInterrupts,
  type PushConfig,
  type ResolveAnswer,
  type RunEvent,
  type RunSnapshot,
} from './types.js';
import { Artifact, ErrorNote, Fact, Json, Notice, Status, StreamBadge, Table } from './ui.js';

const FINAL_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled']);
/** Answers that mean someone else got there first: the page was stale. */
const STALE = new Set(['interrupt_already_resolved', 'interrupt_cancelled', 'interrupt_not_found', 'run_terminal']);
/** The answer when the step's branch was withdrawn (a join went on without it). */
const WITHDRAWN = 'interrupt_withdrawn';
/** The answer when the artifact (or the questions) changed since the page showed it. */
const CHANGED = 'artifact_changed';

type Note = { tone: 'ok' | 'warn' | 'info'; text: string };

export function TaskPage({ runId }: { runId: string }) {
  const [run, setRun] = useState<RunSnapshot | undefined>();
  const [missing, setMissing] = useState<string | undefined>();
  const [loadError, setLoadError] = useState<string | undefined>();
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [stream, setStream] = useState<StreamState>('connecting');
  const [note, setNote] = useState<Note | undefined>();
  /** The node whose decision is being sent (its form is disabled meanwhile). */
  const [pendingAt, setPendingAt] = useState<string | undefined>();
  const eventsRef = useRef<RunEvent[]>([]);
  const path = `/v1/runs/${encodeURIComponent(runId)}`;

  const refresh = useMemo(
    () =>
      coalesce(async () => {
        try {
          setRun(await api<RunSnapshot>(path));
          setLoadError(undefined);
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) setMissing(notHere(runId));
          else setLoadError(errorText(err));
        }
      }),
    [runId],
  );

  useEffect(() => {
    void refresh();
    return follow(`${path}/events`, {
      onState: setStream,
      // The snapshot read and the event stream both find an unknown run: one message either way.
      onError: (err) => setMissing(err.status === 404 ? notHere(runId) : err.message),
      isDone: () => FINAL_EVENTS.has(eventsRef.current.at(-1)?.type ?? ''),
      onEvent(e) {
        const event = JSON.parse(e.data) as RunEvent;
        if (eventsRef.current.some((x) => x.sequence === event.sequence)) return;
        eventsRef.current = [...eventsRef.current, event];
        setEvents(eventsRef.current);
        void refresh();
      },
    });
  }, [runId]);

  const opens = run ? openInterrupts(run) : [];
  const title = (opens.length === 1 ? opens[0]?.payload.title : undefined) ?? run?.workflowId ?? 'Run';
  useEffect(() => {
    document.title = `${title} · ${runId} · Handoff`;
  }, [title, runId]);

  useDecidedElsewhere(run, events, pendingAt !== undefined, setNote);
  useFocusPanelInHash(run);

  /** The sender of the form at `open`: it posts to that interrupt's own node. */
  const decideAt =
    (open: OpenInterrupt): Decide =>
    async (resumeValue, what) => {
      const several = opens.length > 1;
      setPendingAt(open.nodeId);
      setNote(undefined);
      try {
        const answer = await api<ResolveAnswer>(`${path}/interrupts/${encodeURIComponent(open.nodeId)}`, {
          method: 'POST',
          // Bound to the artifact this page shows: one changed meanwhile is refused, not decided unseen.
          body: open.artifactHash ? { resumeValue, expectedArtifactHash: open.artifactHash } : { resumeValue },
        });
        setNote({ tone: 'ok', text: outcomeText(several ? `${what} at ${open.nodeId}` : what, answer) });
      } catch (err) {
        setNote({ tone: 'warn', text: refusedText(err) });
      } finally {
        // Whatever happened, this page has spoken for the interrupt it showed.
        explained.add(open.interruptId);
        await refresh();
        setPendingAt(undefined);
      }
    };

  if (missing) {
    return (
      <section>
        <h1 tabIndex={-1}>Run not found</h1>
        <ErrorNote>{missing}</ErrorNote>
        <p>
          Back to the <Link href="/console">inbox</Link>.
        </p>
      </section>
    );
  }
  return (
    <section aria-labelledby="run-title" data-run-id={runId}>
      <nav aria-label="Breadcrumb" class="crumbs">
        <Link href="/console">Inbox</Link> › <span>{runId}</span>
      </nav>
      <div class="page-head">
        <h1 id="run-title" tabIndex={-1}>
          {title}
        </h1>
        {run && <Status status={run.status} error={run.error} />}
        <StreamBadge state={stream} />
      </div>
      {note && <Notice tone={note.tone}>{note.text}</Notice>}
      {loadError && <ErrorNote>Could not load the run. {loadError}</ErrorNote>}
      {!run && !loadError && <p>Loading…</p>}
      {run && <Facts run={run} />}
      <AskedBy events={events} />
      {run && isRejection(run.error) && (
        <p class="note note-info" data-testid="rejected">
          Rejected by {rejectedBy(run.error)} ({run.error?.message}).
        </p>
      )}
      {run?.error && !isRejection(run.error) && (
        <ErrorNote>
          The run failed: {run.error.message} ({run.error.code}).
        </ErrorNote>
      )}
      {run?.activity && <ActivityPanel activity={run.activity} events={events} />}
      {opens.map((open) => (
        <p class="deciding" key={open.interruptId} data-testid="deciding">
          {open.kind === 'approval' ? 'To decide: ' : 'To answer: '}
          {decidingLine(open)}
        </p>
      ))}
      {opens.length > 1 && (
        <p class="lead">
          This run waits at {opens.length} steps at once ({opens.map((o) => o.nodeId).join(', ')}); each is decided on
          its own.
        </p>
      )}
      {opens.map((open) =>
        open.kind === 'approval' ? (
          <ApprovalPanel
            key={open.interruptId}
            interrupt={open}
            pending={pendingAt === open.nodeId}
            onDecide={decideAt(open)}
          />
        ) : (
          <ClarificationPanel
            key={open.interruptId}
            interrupt={open}
            pending={pendingAt === open.nodeId}
            onDecide={decideAt(open)}
          />
        ),
      )}
      {run && (
        <section aria-labelledby="inputs-title">
          <h2 id="inputs-title">Inputs</h2>
          <Inputs inputs={run.inputs} />
        </section>
      )}
      <Delegations events={events} />
      <Artifacts events={events} />
      <Timeline events={events} />
      <AuditTrail runId={runId} version={events.length} />
      <PushConfigs runId={runId} />
    </section>
  );
}

/** Interrupts this page decided itself, or already explained (no "decided elsewhere" for them). */
const explained = new Set<string>();

/**
 * When an interrupt the page showed closes without this page deciding it, say who decided what:
 * its form vanishes, but the person who was about to decide learns why.
 */
function useDecidedElsewhere(
  run: RunSnapshot | undefined,
  events: RunEvent[],
  pending: boolean,
  setNote: (n: Note) => void,
) {
  /** The interrupts shown, by id: their node. */
  const shown = useRef(new Map<string, string>());
  useEffect(() => {
    if (pending || !run) return;
    const now = new Map(openInterrupts(run).map((i) => [i.interruptId, i.nodeId]));
    const gone = [...shown.current].filter(([id]) => !now.has(id) && !explained.has(id));
    for (const [id] of gone) explained.add(id);
    if (gone.length > 0) {
      const several = shown.current.size > 1;
      setNote({ tone: 'info', text: gone.map(([id, node]) => decidedText(id, node, several, events, run)).join(' ') });
    }
    shown.current = now;
  }, [run, pending]);
}

function decidedText(
  interruptId: string,
  nodeId: string,
  several: boolean,
  events: RunEvent[],
  run: RunSnapshot,
): string {
  const latest = [...events].reverse();
  const decision = latest.find(
    (e) =>
      e.payload.interruptId === interruptId && (e.type === 'approval.received' || e.type === 'clarification.resolved'),
  );
  if (run.status === 'cancelled' || run.status === 'cancelling') return 'The run was cancelled while you had it open.';
  const withdrawn = latest.find((e) => e.type === 'branch.withdrawn' && e.nodeId === nodeId);
  if (!decision && withdrawn) {
    return `The step ${nodeId} was withdrawn while you had the page open (${String(withdrawn.payload.reason ?? 'its branch ended')}). Nothing you entered was sent.`;
  }
  const where = several ? ` at ${nodeId}` : '';
  if (!decision) return `This step${where} was decided elsewhere while you had the page open.`;
  const who = String(decision.payload.decidedBy ?? 'someone');
  const action = decision.type === 'clarification.resolved' ? 'answered' : `chose ${String(decision.payload.action)}`;
  return `Decided elsewhere${where} while you had the page open: ${who} ${action}. Nothing you entered was sent.`;
}

/** Why a decision was not applied, and what the page does about it. */
function refusedText(err: unknown): string {
  const code = err instanceof ApiError ? err.code : undefined;
  if (code === CHANGED)
    return `Not applied: ${errorText(err)} The page now shows what is to be decided; decide on that.`;
  if (code === WITHDRAWN)
    return `Not applied: ${errorText(err)} The run went on without this step; the page now shows the run as it is.`;
  if (code !== undefined && STALE.has(code))
    return `Not applied: ${errorText(err)} Someone else decided first; the page now shows the run as it is.`;
  return `Not applied: ${errorText(err)}`;
}

/**
 * The inbox links each of a run's several interrupts as `#decide-<nodeId>`: once that form is on
 * the page, bring it into view and move focus to its heading (once per visit).
 */
function useFocusPanelInHash(run: RunSnapshot | undefined) {
  const done = useRef(false);
  useEffect(() => {
    if (done.current || !run || !location.hash.startsWith('#decide-')) return;
    const panel = document.getElementById(panelId(decodeURIComponent(location.hash.slice('#decide-'.length))));
    if (!panel) return;
    done.current = true;
    panel.scrollIntoView();
    panel.querySelector<HTMLElement>('h2')?.focus();
  }, [run]);
}

function outcomeText(what: string, answer: ResolveAnswer): string {
  const i = answer.interrupt;
  if (i.outcome === 'vote-recorded') return `Your approval was recorded: ${i.votes} of ${i.requiredApprovals ?? 1}.`;
  if (i.outcome === 'ask-recorded') return 'Your question was recorded. The run keeps waiting for a decision.';
  return `${what}. The run is now ${answer.status.replace('-', ' ')}.`;
}

function Facts({ run }: { run: RunSnapshot }) {
  return (
    <dl class="facts">
      <Fact term="Run">
        <code>{run.runId}</code>
      </Fact>
      <Fact term="Workflow">{run.workflowId}</Fact>
      <Fact term="Started by">{run.owner.principal}</Fact>
      <Fact term="Started">
        <Ago iso={run.createdAt} />
      </Fact>
      <Fact term="Last change">
        <Ago iso={run.updatedAt} />
      </Fact>
      {run.completedAt && (
        <Fact term="Finished">
          <Ago iso={run.completedAt} />
        </Fact>
      )}
      {run.tags.length > 0 && <Fact term="Tags">{run.tags.join(', ')}</Fact>}
    </dl>
  );
}

function Artifacts({ events }: { events: RunEvent[] }) {
  const artifacts = events.filter((e) => e.type === 'artifact.created');
  if (artifacts.length === 0) return null;
  return (
    <section aria-labelledby="artifacts-title">
      <h2 id="artifacts-title">Artifacts</h2>
      {artifacts.map((e) => (
        <article class="artifact" key={e.sequence} data-testid="artifact">
          <h3>
            {String(e.payload.name ?? e.payload.artifactId ?? e.nodeId)} <Ago iso={e.timestamp} />
          </h3>
          <Artifact value={e.payload.data} />
        </article>
      ))}
    </section>
  );
}

/** A line of the timeline: one event, or every event of one branch (where its first one fell). */
type TimelineItem = { event: RunEvent } | { branch: string; events: RunEvent[] };

/**
 * The events in log order, with the events of each branch of a fork (`payload.branch`, e.g.
 * `fork#0/legal`) gathered in one group; events before the fork and after its join stay on the
 * top level.
 */
function timelineItems(events: RunEvent[]): TimelineItem[] {
  const items: TimelineItem[] = [];
  const groups = new Map<string, RunEvent[]>();
  for (const e of events) {
    const branch = e.payload.branch;
    if (typeof branch !== 'string') {
      items.push({ event: e });
      continue;
    }
    const group = groups.get(branch);
    if (group) group.push(e);
    else {
      const fresh = [e];
      groups.set(branch, fresh);
      items.push({ branch, events: fresh });
    }
  }
  return items;
}

/** `fork#0/legal` → `legal`; `inner#0>innerJoin` (what follows a nested join) → `innerJoin`. */
const branchName = (id: string): string => id.split(/[/>]/).at(-1) ?? id;

function EventLine({ e, agents }: { e: RunEvent; agents: ReadonlyMap<string, string> }) {
  const words = eventWords(e, agents);
  return (
    <li data-event-type={e.type}>
      {Object.keys(e.payload).length > 0 ? (
        <details>
          <summary>
            <span class="what">{words}</span> <Ago iso={e.timestamp} />
          </summary>
          <Json value={e.payload} />
        </details>
      ) : (
        <>
          <span class="what">{words}</span> <Ago iso={e.timestamp} />
        </>
      )}
    </li>
  );
}

function Timeline({ events }: { events: RunEvent[] }) {
  const agents = agentsByNode(events);
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">Timeline</h2>
      {events.length === 0 ? (
        <p>No events yet.</p>
      ) : (
        <ol class="timeline">
          {timelineItems(events).map((item) =>
            'event' in item ? (
              <EventLine key={item.event.sequence} e={item.event} agents={agents} />
            ) : (
              <li key={item.branch} class="branch" data-branch={item.branch}>
                <span class="what">
                  Branch <strong>{branchName(item.branch)}</strong> <code>{item.branch}</code>
                </span>
                <ol class="timeline" aria-label={`Branch ${branchName(item.branch)}`}>
                  {item.events.map((e) => (
                    <EventLine key={e.sequence} e={e} agents={agents} />
                  ))}
                </ol>
              </li>
            ),
          )}
        </ol>
      )}
    </section>
  );
}

/** The task's webhooks (A2A tasks/pushNotificationConfig/list); tokens are never shown. */
function PushConfigs({ runId }: { runId: string }) {
  const {
    value: configs,
    error,
    reload,
  } = useLoaded(() => rpc<PushConfig[]>('tasks/pushNotificationConfig/list', { id: runId }), [runId]);
  return (
    <section aria-labelledby="push-title">
      <h2 id="push-title">Push notifications</h2>
      {error && <ErrorNote>Could not read the push configs. {error}</ErrorNote>}
      {configs?.length === 0 && <p>No webhooks are registered for this task.</p>}
      {configs && configs.length > 0 && (
        <Table caption="Webhooks of this task" columns={['Config', 'URL', 'Authentication']}>
          {configs.map((c) => (
            <tr key={c.pushNotificationConfig.id ?? c.pushNotificationConfig.url}>
              <td>
                <code>{c.pushNotificationConfig.id ?? '—'}</code>
              </td>
              <td class="url">{c.pushNotificationConfig.url}</td>
              <td>{c.pushNotificationConfig.authentication?.schemes.join(', ') ?? '—'}</td>
            </tr>
          ))}
        </Table>
      )}
      <p>
        <Link href={`/console/operations?taskId=${encodeURIComponent(runId)}`}>Push deliveries of this task</Link>
      </p>
      <button type="button" class="quiet" onClick={() => void reload()}>
        Refresh webhooks
      </button>
    </section>
  );
}

const notHere = (runId: string) => `There is no run ${runId} here. It may belong to another tenant, or it was purged.`;
