// Small pieces every page uses: status words, messages, values rendered for reading.
import type { ComponentChildren } from 'preact';
import type { StreamState } from './stream.js';

const STATUS_WORDS: Record<string, string> = {
  pending: 'Pending',
  running: 'Running',
  paused: 'Paused',
  'waiting-approval': 'Waiting for approval',
  'waiting-input': 'Waiting for input',
  'waiting-external': 'Waiting on another system',
  completed: 'Completed',
  failed: 'Failed',
  cancelling: 'Cancelling',
  cancelled: 'Cancelled',
};

export const statusWords = (status: string): string => STATUS_WORDS[status] ?? status;

/**
 * A run's status in words. A run a person rejected failed by design: it reads "Rejected", not a
 * red "Failed" (`interrupt_rejected`, the error of a gate's reject).
 */
export function Status({ status, error }: { status: string; error?: { code: string } | undefined }) {
  if (status === 'failed' && error?.code === 'interrupt_rejected') {
    return <span class="status status-rejected">Rejected</span>;
  }
  return <span class={`status status-${status}`}>{statusWords(status)}</span>;
}

/** An error in words; announced to screen readers when it appears. */
export function ErrorNote({ children }: { children: ComponentChildren }) {
  return (
    <p class="note note-error" role="alert">
      {children}
    </p>
  );
}

/** Who a gate lets decide: the people it names, and the groups and roles whose members may too. */
interface Approvers {
  approversList?: string[] | undefined;
  approverGroupRefs?: string[] | undefined;
  approverRoleRefs?: string[] | undefined;
}

/**
 * Who may decide, in words: "alice, bob", "Group finance, role controller", "alice, bob or group
 * finance"; a gate that names no one, and no group or role, is open to anyone in the tenant.
 */
export function whoMayDecide(a: Approvers): string {
  const named = (word: string, refs: string[] | undefined) =>
    refs?.length ? `${word}${refs.length > 1 ? 's' : ''} ${refs.join(', ')}` : undefined;
  const refs = [named('group', a.approverGroupRefs), named('role', a.approverRoleRefs)].filter(Boolean).join(', ');
  const people = a.approversList?.length ? a.approversList.join(', ') : '';
  if (people && refs) return `${people} or ${refs}`;
  if (refs) return refs.charAt(0).toUpperCase() + refs.slice(1);
  return people || 'Anyone in your tenant';
}

/** A neutral message that screen readers read out politely. */
export function Notice({ children, tone = 'info' }: { children: ComponentChildren; tone?: 'info' | 'ok' | 'warn' }) {
  return (
    <p class={`note note-${tone}`} role="status">
      {children}
    </p>
  );
}

const STREAM_WORDS: Record<StreamState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  ended: 'Up to date',
};

/** Where a live stream stands; never blocks what is already on the page. */
export function StreamBadge({ state }: { state: StreamState }) {
  return (
    <span class={`stream stream-${state}`} role="status" aria-live="polite">
      {STREAM_WORDS[state]}
    </span>
  );
}

/** A labelled drop-down; `options` are [value, words] pairs. */
export function SelectField(props: {
  id: string;
  label: string;
  value: string;
  options: ReadonlyArray<readonly [string, string]>;
  onChange: (value: string) => void;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        {props.options.map(([value, words]) => (
          <option key={value} value={value}>
            {words}
          </option>
        ))}
      </select>
    </div>
  );
}

/** A table that scrolls sideways on a narrow screen; `actions` adds a last column for buttons. */
export function Table(props: {
  caption: string;
  columns: string[];
  actions?: boolean;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={props.class}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            {props.actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** One term of a `<dl class="facts">`. */
export function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** True for an object whose values are all strings (shown, and edited, field by field). */
export function isTextRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.keys(value).length > 0 &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}

/** An artifact: text as text, a record of texts field by field, anything else as pretty JSON. */
export function Artifact({ value }: { value: unknown }) {
  if (typeof value === 'string') return <pre class="text">{value}</pre>;
  if (isTextRecord(value)) {
    return (
      <dl class="fields">
        {Object.entries(value).map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>
              <pre class="text">{v}</pre>
            </dd>
          </div>
        ))}
      </dl>
    );
  }
  return <Json value={value} />;
}
