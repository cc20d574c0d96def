// The run's entries in the host's audit log (GET /v1/audit?runId=…): who did what, on which
// surface, when, and the hash of the artifact or questions it was decided on — "Approved by alice
// via console, 12:04, draft sha256:3f9c0a1b2d4e…". Reloaded whenever the run moves (`version`).
import { api } from './api.js';
import { useLoaded } from './live.js';
import { ErrorNote } from './ui.js';

interface AuditEntry {
  seq: number;
  time: string;
  principal: string;
  surface: string;
  act: string;
  nodeId?: string;
  subjectHash?: string;
  values: Record<string, unknown>;
}

const ACTS: Record<string, string> = {
  approve: 'Approved',
  reject: 'Rejected',
  refine: 'Revision requested',
  edit: 'Edited and approved',
  answer: 'Answered',
  ask: 'Question asked',
  cancel: 'Cancelled',
  'push-config.set': 'Webhook set',
  'push-config.delete': 'Webhook deleted',
  'delivery.retry': 'Delivery retried',
  escalate: 'Escalated',
  timeout: 'Timed out',
};

const SURFACES: Record<string, string> = {
  rest: 'the API',
  a2a: 'A2A',
  console: 'console',
  cli: 'the CLI',
  link: 'e-mail link',
  deadline: 'its deadline',
};

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const exact = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** `sha256:` and the first 12 hex digits: enough to tell two drafts apart at a glance. */
const shortHash = (hash: string): string => `${hash.slice(0, 'sha256:'.length + 12)}…`;

function what(e: AuditEntry): string {
  const act = ACTS[e.act] ?? e.act;
  return e.values.outcome === 'vote-recorded' ? `${act} (a vote toward the quorum)` : act;
}

function AuditLine({ e }: { e: AuditEntry }) {
  const subject = e.act === 'answer' ? 'questions' : 'draft';
  return (
    <li data-testid="audit-entry" data-act={e.act}>
      {what(e)} by <strong>{e.principal}</strong> via {SURFACES[e.surface] ?? e.surface},{' '}
      <time dateTime={e.time} title={exact.format(new Date(e.time))}>
        {clock.format(new Date(e.time))}
      </time>
      {e.subjectHash && (
        <>
          , {subject} <code title={e.subjectHash}>{shortHash(e.subjectHash)}</code>
        </>
      )}
    </li>
  );
}

export function AuditTrail({ runId, version }: { runId: string; version: number }) {
  const { value, error } = useLoaded(
    () => api<{ entries: AuditEntry[] }>(`/v1/audit?runId=${encodeURIComponent(runId)}&limit=1000`),
    [runId, version],
  );
  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      {error && <ErrorNote>Could not read the audit log. {error}</ErrorNote>}
      {value?.entries.length === 0 && <p>No one has acted on this run yet.</p>}
      {value && value.entries.length > 0 && (
        <ol class="audit">
          {value.entries.map((e) => (
            <AuditLine key={`${e.seq}`} e={e} />
          ))}
        </ol>
      )}
    </section>
  );
}
