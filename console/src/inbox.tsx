// The inbox: what waits on a person, newest run first, kept live: one row per open interrupt (a run
// waiting at two gates at once, in parallel branches, is two rows).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, errorText } from './api.js';
import { coalesce, useLoaded, useRunChanges } from './live.js';
import { ActivityLine, decidingLine, Inputs } from './people.js';
import { Link, runPath } from './router.js';
import { Ago } from './time.js';
import {
  type OpenInterruptSummary,
  openInterrupts,
  type RunList,
  type RunSnapshot,
  type RunSummary,
  WAITING,
} from './types.js';
import { ErrorNote, Fact, StreamBadge, whoMayDecide } from './ui.js';

const INBOX = '/v1/runs?status=waiting-approval,waiting-input&limit=100';

export function Inbox() {
  const [page, setPage] = useState<RunList | undefined>();
  const [error, setError] = useState<string | undefined>();
  const shown = useRef<RunSummary[]>([]);

  const reload = useMemo(
    () =>
      coalesce(async () => {
        try {
          const next = await api<RunList>(INBOX);
          shown.current = next.runs;
          setPage(next);
          setError(undefined);
        } catch (err) {
          setError(errorText(err));
        }
      }),
    [],
  );
  useEffect(() => {
    document.title = 'Inbox · Handoff';
    void reload();
  }, []);
  const stream = useRunChanges(
    (c) => {
      // A run that starts waiting, or one listed here that moved on.
      if (WAITING.has(c.status) || shown.current.some((r) => r.runId === c.runId)) void reload();
    },
    () => void reload(),
  );

  return (
    <section aria-labelledby="inbox-title">
      <div class="page-head">
        <h1 id="inbox-title" tabIndex={-1}>
          Inbox
        </h1>
        <StreamBadge state={stream} />
      </div>
      <p class="lead">Runs waiting for your decision or your answer, newest first.</p>
      {error && <ErrorNote>Could not load the inbox. {error}</ErrorNote>}
      {page === undefined && !error && <p>Loading…</p>}
      {page && page.runs.length === 0 && (
        <p class="empty">Nothing waits on you. A run that needs a decision appears here as soon as it asks.</p>
      )}
      {page && page.runs.length > 0 && (
        <ul class="cards" aria-label="Waiting runs">
          {page.runs.flatMap((run) => rowsOf(run).map((i) => <InboxItem key={rowKey(run, i)} run={run} i={i} />))}
        </ul>
      )}
      {page?.nextCursor && (
        <p>
          Showing the newest {page.runs.length}. Older ones are under <Link href="/console/operations">Operations</Link>
          .
        </p>
      )}
    </section>
  );
}

/** A row per open interrupt; a waiting run with none listed (yet) is one row of its own. */
const rowsOf = (run: RunSummary): Array<OpenInterruptSummary | undefined> => {
  const open = openInterrupts(run);
  return open.length > 0 ? open : [undefined];
};
const rowKey = (run: RunSummary, i: OpenInterruptSummary | undefined) => `${run.runId}/${i?.nodeId ?? ''}`;

function InboxItem({ run, i }: { run: RunSummary; i: OpenInterruptSummary | undefined }) {
  const asks = i?.kind === 'clarification' || (!i && run.status === 'waiting-input') ? 'An answer' : 'A decision';
  // Several rows of one run: each says where it waits, and its link leads to its own form.
  const several = openInterrupts(run).length > 1;
  const href = several && i ? `${runPath(run.runId)}#decide-${encodeURIComponent(i.nodeId)}` : runPath(run.runId);
  return (
    <li class="card" data-run-id={run.runId} data-node-id={i?.nodeId}>
      <h2>
        <Link href={href}>{i?.title ?? run.workflowId}</Link>
      </h2>
      <p class="meta">
        <code>{run.runId}</code>
        {run.tags.length > 0 && <span> · {run.tags.join(', ')}</span>}
      </p>
      <ActivityLine activity={run.activity} />
      <WhatIsDecided run={run} nodeId={i?.nodeId} />
      <dl class="facts">
        <Fact term="Workflow">{run.workflowId}</Fact>
        {several && i && (
          <Fact term="Step">
            <code>{i.nodeId}</code>
          </Fact>
        )}
        <Fact term="Needs">{asks}</Fact>
        <Fact term="Started">
          <Ago iso={run.createdAt} />
        </Fact>
        <Fact term="Deadline">{i?.expiresAt ? <Ago iso={i.expiresAt} /> : 'None'}</Fact>
        <Fact term="Who may decide">{whoMayDecide(i ?? {})}</Fact>
      </dl>
    </li>
  );
}

/**
 * What the card's run was started with and what is being decided, from its snapshot (the list
 * carries neither: inputs can be large), read again whenever the run changes.
 */
function WhatIsDecided({ run, nodeId }: { run: RunSummary; nodeId: string | undefined }) {
  const { value: snap } = useLoaded(
    () => api<RunSnapshot>(`/v1/runs/${encodeURIComponent(run.runId)}`),
    [run.runId, run.updatedAt],
  );
  if (!snap) return null;
  const open = openInterrupts(snap).find((o) => o.nodeId === nodeId) ?? openInterrupts(snap)[0];
  return (
    <>
      {open && (
        <p class="deciding" data-testid="deciding">
          {decidingLine(open)}
        </p>
      )}
      <Inputs inputs={snap.inputs} compact />
    </>
  );
}
