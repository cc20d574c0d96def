// The inbox: runs waiting on a person (approval or input), newest first, kept live.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, errorText } from './api.js';
import { coalesce, useRunChanges } from './live.js';
import { Link, runPath } from './router.js';
import { Ago } from './time.js';
import { type RunList, type RunSummary, WAITING } from './types.js';
import { ErrorNote, Fact, StreamBadge } from './ui.js';

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
          {page.runs.map((run) => (
            <InboxItem key={run.runId} run={run} />
          ))}
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

function InboxItem({ run }: { run: RunSummary }) {
  const i = run.interrupt;
  const asks = i?.kind === 'clarification' || run.status === 'waiting-input' ? 'An answer' : 'A decision';
  return (
    <li class="card" data-run-id={run.runId}>
      <h2>
        <Link href={runPath(run.runId)}>{i?.title ?? run.workflowId}</Link>
      </h2>
      <p class="meta">
        <code>{run.runId}</code>
        {run.tags.length > 0 && <span> · {run.tags.join(', ')}</span>}
      </p>
      <dl class="facts">
        <Fact term="Workflow">{run.workflowId}</Fact>
        <Fact term="Needs">{asks}</Fact>
        <Fact term="Started">
          <Ago iso={run.createdAt} />
        </Fact>
        <Fact term="Deadline">{i?.expiresAt ? <Ago iso={i.expiresAt} /> : 'None'}</Fact>
        <Fact term="Who may decide">
          {i?.approversList?.length ? i.approversList.join(', ') : 'Anyone in your tenant'}
        </Fact>
      </dl>
    </li>
  );
}
