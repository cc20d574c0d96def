// Operations: every run with filters, push deliveries (retry a dead letter), the workflow files the
// host refused at start, the agent card and discovery document, and links to metrics and the
// OpenAPI document.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, errorText } from './api.js';
import { useLoaded, useRunChanges } from './live.js';
import { DeadNotifications } from './notifications.js';
import { Link, runPath } from './router.js';
import { Ago } from './time.js';
import { ActivityLine } from './people.js';
import type { AgentCard, Delivery, RefusedWorkflow, RunList, RunSummary, WorkflowSummary } from './types.js';
import { ErrorNote, Fact, Json, Notice, SelectField, Status, statusWords, StreamBadge, Table } from './ui.js';

const STATUSES = [
  'pending',
  'running',
  'waiting-approval',
  'waiting-input',
  'completed',
  'failed',
  'cancelling',
  'cancelled',
];
const STATE_OPTIONS: Array<[string, string]> = [
  ['', 'Any state'],
  ['waiting-approval,waiting-input', 'Waiting on a person'],
  ...STATUSES.map((s): [string, string] => [s, statusWords(s)]),
];

export function Operations() {
  useEffect(() => {
    document.title = 'Operations · Handoff';
  }, []);
  const taskId = new URLSearchParams(location.search).get('taskId') ?? undefined;
  return (
    <section aria-labelledby="ops-title">
      <h1 id="ops-title" tabIndex={-1}>
        Operations
      </h1>
      <nav aria-label="Sections" class="sections">
        <a href="#runs">Runs</a> · <a href="#deliveries">Push deliveries</a> ·{' '}
        <a href="#notifications">Notifications</a> · <a href="#workflows">Workflows</a> · <a href="#agent">Agent</a> ·{' '}
        <a href="#links">Links</a>
      </nav>
      <Runs />
      <Deliveries taskId={taskId} />
      <DeadNotifications />
      <Workflows />
      <Agent />
      <section id="links" aria-labelledby="links-title">
        <h2 id="links-title">Links</h2>
        <ul>
          <li>
            <a href="/metrics">Prometheus metrics</a> (<code>/metrics</code>)
          </li>
          <li>
            <a href="/v1/openapi.json">OpenAPI document</a> (<code>/v1/openapi.json</code>)
          </li>
          <li>
            <a href="/.well-known/agent-card.json">Agent card</a> and{' '}
            <a href="/.well-known/openwop">discovery document</a>
          </li>
        </ul>
      </section>
    </section>
  );
}

interface Filter {
  status: string;
  workflowId: string;
  q: string;
}

const query = (f: Filter, cursor?: string): string => {
  const params = new URLSearchParams({ limit: '50' });
  if (f.status) params.set('status', f.status);
  if (f.workflowId) params.set('workflowId', f.workflowId);
  if (f.q.trim()) params.set('q', f.q.trim());
  if (cursor) params.set('cursor', cursor);
  return `/v1/runs?${params}`;
};

function Runs() {
  const [draft, setDraft] = useState<Filter>({ status: '', workflowId: '', q: '' });
  const [filter, setFilter] = useState<Filter>(draft);
  const [runs, setRuns] = useState<RunSummary[] | undefined>();
  const [cursor, setCursor] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [fresh, setFresh] = useState(false);
  const [workflows, setWorkflows] = useState<WorkflowSummary[]>([]);

  const load = async (f: Filter, after?: string) => {
    try {
      const page = await api<RunList>(query(f, after));
      setRuns((before) => (after ? [...(before ?? []), ...page.runs] : page.runs));
      setCursor(page.nextCursor);
      setError(undefined);
      if (!after) setFresh(false);
    } catch (err) {
      setError(errorText(err));
    }
  };
  useEffect(() => {
    void load(filter);
  }, [filter]);
  useEffect(() => {
    api<{ workflows: WorkflowSummary[] }>('/v1/workflows').then(
      (w) => setWorkflows(w.workflows),
      () => setWorkflows([]),
    );
  }, []);
  // Listed runs change status in place; other activity is offered, not forced on the reader.
  const stream = useRunChanges(
    (c) => {
      let known = false;
      setRuns((list) =>
        list?.map((r) => {
          if (r.runId !== c.runId) return r;
          known = true;
          return { ...r, status: c.status };
        }),
      );
      if (!known) setFresh(true);
    },
    () => setFresh(true),
  );

  const submit = (e: Event) => {
    e.preventDefault();
    setFilter({ ...draft });
  };

  return (
    <section id="runs" aria-labelledby="runs-title">
      <div class="page-head">
        <h2 id="runs-title">Runs</h2>
        <StreamBadge state={stream} />
      </div>
      <search aria-label="Filter runs">
        <form class="filters" onSubmit={submit}>
          <SelectField
            id="filter-status"
            label="State"
            value={draft.status}
            options={STATE_OPTIONS}
            onChange={(status) => setDraft({ ...draft, status })}
          />
          <SelectField
            id="filter-workflow"
            label="Workflow"
            value={draft.workflowId}
            options={[['', 'Any workflow'], ...workflows.map((w) => [w.id, `${w.name} (${w.id})`] as const)]}
            onChange={(workflowId) => setDraft({ ...draft, workflowId })}
          />
          <div class="field">
            <label for="filter-q">Text</label>
            <input
              id="filter-q"
              type="search"
              value={draft.q}
              placeholder="Run id, workflow or tag"
              onInput={(e) => setDraft({ ...draft, q: e.currentTarget.value })}
            />
          </div>
          <button type="submit">Show runs</button>
        </form>
      </search>
      {error && <ErrorNote>Could not list the runs. {error}</ErrorNote>}
      {fresh && (
        <p role="status">
          There is new activity.{' '}
          <button type="button" class="link" onClick={() => void load(filter)}>
            Show the latest runs
          </button>
        </p>
      )}
      {runs?.length === 0 && <p class="empty">No run matches.</p>}
      {runs && runs.length > 0 && (
        <Table
          class="runs"
          caption="Runs, newest first"
          columns={['Run', 'Workflow', 'State', 'Started', 'Last change']}
        >
          {runs.map((r) => (
            <tr key={r.runId} data-run-id={r.runId}>
              <td>
                <Link href={runPath(r.runId)}>
                  <code>{r.runId}</code>
                </Link>
              </td>
              <td>{r.workflowId}</td>
              <td>
                <Status status={r.status} error={r.error} />
                <ActivityLine activity={r.activity} />
              </td>
              <td>
                <Ago iso={r.createdAt} />
              </td>
              <td>
                <Ago iso={r.updatedAt} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      {cursor && (
        <button type="button" onClick={() => void load(filter, cursor)}>
          Show older runs
        </button>
      )}
    </section>
  );
}

const DELIVERY_WORDS: Record<string, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  dead: 'Dead letter',
  cancelled: 'Cancelled',
};
/** While deliveries are pending, look again this often (deliveries have no change stream). */
const PENDING_POLL_MS = 1_000;

function Deliveries({ taskId }: { taskId: string | undefined }) {
  const [state, setState] = useState('');
  const [note, setNote] = useState<string | undefined>();
  const [failed, setFailed] = useState<string | undefined>();
  const url = useMemo(() => {
    const params = new URLSearchParams({ limit: '100' });
    if (state) params.set('state', state);
    if (taskId) params.set('taskId', taskId);
    return `/v1/a2a/deliveries?${params}`;
  }, [state, taskId]);

  const deliveries = useLoaded(async () => (await api<{ deliveries: Delivery[] }>(url)).deliveries, [url]);
  const list = deliveries.value;
  const load = deliveries.reload;
  const anyPending = list?.some((d) => d.state === 'pending') ?? false;
  useEffect(() => {
    if (!anyPending) return;
    const timer = setTimeout(() => void load(), PENDING_POLL_MS);
    return () => clearTimeout(timer);
  }, [list]);

  const retry = async (d: Delivery) => {
    try {
      const again = await api<Delivery>(`/v1/a2a/deliveries/${encodeURIComponent(d.deliveryId)}/retry`, {
        method: 'POST',
        body: {},
      });
      deliveries.update((l) => l?.map((x) => (x.deliveryId === again.deliveryId ? again : x)));
      setNote(`Delivery ${d.deliveryId} is queued again.`);
      setFailed(undefined);
    } catch (err) {
      setNote(undefined);
      setFailed(`Could not retry delivery ${d.deliveryId}. ${errorText(err)}`);
      void load();
    }
  };

  return (
    <section id="deliveries" aria-labelledby="deliveries-title">
      <h2 id="deliveries-title">Push deliveries{taskId ? ` of ${taskId}` : ''}</h2>
      <div class="filters">
        <SelectField
          id="delivery-state"
          label="State"
          value={state}
          options={[['', 'Any state'], ...Object.entries(DELIVERY_WORDS)]}
          onChange={setState}
        />
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {note && <Notice tone="ok">{note}</Notice>}
      {failed && <ErrorNote>{failed}</ErrorNote>}
      {deliveries.error && <ErrorNote>Could not list the push deliveries. {deliveries.error}</ErrorNote>}
      {list?.length === 0 && <p class="empty">No push deliveries{state ? ` in this state` : ''}.</p>}
      {list && list.length > 0 && (
        <Table
          class="deliveries"
          caption="Push deliveries, newest first"
          columns={['Delivery', 'Task', 'State', 'Attempts', 'Last result', 'When']}
          actions
        >
          {list.map((d) => (
            <tr key={d.deliveryId} data-delivery-id={d.deliveryId} data-state={d.state}>
              <td>
                <code>{d.deliveryId}</code>
                <div class="hint">config {d.configId}</div>
              </td>
              <td>
                <Link href={runPath(d.taskId)}>
                  <code>{d.taskId}</code>
                </Link>
              </td>
              <td>
                <span class={`delivery delivery-${d.state}`}>{DELIVERY_WORDS[d.state] ?? d.state}</span>
              </td>
              <td>{d.attempts}</td>
              <td>{lastResult(d)}</td>
              <td>
                {d.state === 'pending' && d.nextAttemptAt ? (
                  <>
                    next <Ago iso={d.nextAttemptAt} />
                  </>
                ) : d.deliveredAt ? (
                  <Ago iso={d.deliveredAt} />
                ) : (
                  <Ago iso={d.createdAt} />
                )}
              </td>
              <td>
                {d.state === 'dead' && (
                  <button type="button" onClick={() => void retry(d)} aria-label={`Retry delivery ${d.deliveryId}`}>
                    Retry
                  </button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

function lastResult(d: Delivery): string {
  if (d.lastStatus !== null) return `HTTP ${d.lastStatus}${d.lastError ? ` (${d.lastError})` : ''}`;
  if (d.lastError) return d.lastError;
  return d.attempts === 0 ? 'Not tried yet' : '—';
}

/** The loaded workflows, and each file the host refused at start with its problems. */
function Workflows() {
  const { value, error } = useLoaded(
    () => api<{ workflows: WorkflowSummary[]; refused?: RefusedWorkflow[] }>('/v1/workflows?include=refused'),
    [],
  );
  const refused = value?.refused ?? [];
  return (
    <section id="workflows" aria-labelledby="workflows-title">
      <h2 id="workflows-title">Workflows</h2>
      {error && <ErrorNote>Could not read the workflows. {error}</ErrorNote>}
      {value && <p>{value.workflows.length} loaded.</p>}
      {refused.length > 0 && (
        <>
          <h3>Refused workflow files</h3>
          <p>These files did not load; the host runs without them until they are fixed.</p>
          <ul class="refused">
            {refused.map((r) => (
              <li key={r.file}>
                <code>{r.file}</code>
                <ul>
                  {r.problems.map((p) => (
                    <li key={p}>{p}</li>
                  ))}
                </ul>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function Agent() {
  const { value, error } = useLoaded(
    () => Promise.all([api<AgentCard>('/.well-known/agent-card.json'), api<unknown>('/.well-known/openwop')]),
    [],
  );
  const [card, discovery] = value ?? [];
  return (
    <section id="agent" aria-labelledby="agent-title">
      <h2 id="agent-title">Agent</h2>
      {error && <ErrorNote>Could not read the agent card. {error}</ErrorNote>}
      {card && (
        <>
          <dl class="facts">
            <Fact term="Name">
              {card.name} {card.version}
            </Fact>
            <Fact term="A2A">
              {card.protocolVersion} at <code>{card.url}</code>
            </Fact>
            <Fact term="Capabilities">
              {Object.entries(card.capabilities ?? {})
                .filter(([, on]) => on)
                .map(([name]) => name)
                .join(', ') || 'none'}
            </Fact>
          </dl>
          <h3>Skills</h3>
          <ul>
            {card.skills.map((s) => (
              <li key={s.id}>
                <strong>{s.name}</strong> (<code>{s.id}</code>): {s.description}
              </li>
            ))}
          </ul>
          <details>
            <summary>Agent card (JSON)</summary>
            <Json value={card} />
          </details>
        </>
      )}
      {discovery !== undefined && (
        <details>
          <summary>Discovery document (JSON)</summary>
          <Json value={discovery} />
        </details>
      )}
    </section>
  );
}
