// The forms that answer an open interrupt: the five approval actions and a clarification's questions.
// Each form builds the `resumeValue` of POST /v1/runs/{id}/interrupts/{nodeId}; the page sends it to
// the panel's own node. A run forked by core.parallel may show several panels at once, so every
// element id of a panel starts with its node id.
import { useState } from 'preact/hooks';
import { Ago } from './time.js';
import type { OpenInterrupt } from './types.js';
import { Artifact, ErrorNote, Fact, isTextRecord, SelectField, whoMayDecide } from './ui.js';

export type Decide = (resumeValue: Record<string, unknown>, what: string) => Promise<void>;

interface PanelProps {
  interrupt: OpenInterrupt;
  pending: boolean;
  onDecide: Decide;
}

/** The id of a panel (the inbox links to it as `#decide-<nodeId>`). */
export const panelId = (nodeId: string): string => `decide-${nodeId}`;

/** The node, named in every panel: where the decision goes. */
function StepFact({ nodeId }: { nodeId: string }) {
  return (
    <Fact term="Step">
      <code>{nodeId}</code>
    </Fact>
  );
}

export function ApprovalPanel({ interrupt, pending, onDecide }: PanelProps) {
  const p = interrupt.payload;
  const actions = new Set(p.actions ?? []);
  const required = p.requiredApprovals ?? 1;
  const deadline = interrupt.expiresAt ?? p.expiresAt;
  const id = interrupt.nodeId;
  return (
    <section class="panel" id={panelId(id)} data-node-id={id} aria-labelledby={`${id}-decide-title`}>
      <h2 id={`${id}-decide-title`} tabIndex={-1}>
        Your decision{p.title ? `: ${p.title}` : ''}
      </h2>
      {p.description && <p>{p.description}</p>}
      <dl class="facts">
        <StepFact nodeId={id} />
        <Fact term="Who may decide">{whoMayDecide(p)}</Fact>
        {required > 1 && (
          <Fact term="Approvals">
            {interrupt.votes.length} of {required}
            {interrupt.votes.length > 0 && ` (${interrupt.votes.map((v) => v.principal).join(', ')})`}
          </Fact>
        )}
        {deadline && (
          <Fact term="Deadline">
            <Ago iso={deadline} />
          </Fact>
        )}
      </dl>
      <h3>Draft under review</h3>
      <div class="artifact" data-testid="draft">
        <Artifact value={p.artifact} />
      </div>
      <fieldset disabled={pending} class="actions">
        <legend class="visually-hidden">Decide</legend>
        {actions.has('accept') && (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void onDecide({ action: 'accept' }, 'Accepted');
            }}
          >
            <button type="submit" class="primary">
              Accept
            </button>
          </form>
        )}
        {actions.has('edit-accept') && (
          <details>
            <summary>Edit, then accept</summary>
            <EditForm id={id} artifact={p.artifact} onDecide={onDecide} />
          </details>
        )}
        {actions.has('refine') && (
          <details>
            <summary>Ask for a revision</summary>
            <RefineForm id={id} onDecide={onDecide} />
          </details>
        )}
        {actions.has('reject') && (
          <details>
            <summary>Reject</summary>
            <RejectForm id={id} onDecide={onDecide} />
          </details>
        )}
        {actions.has('ask') && (
          <details>
            <summary>Ask a question</summary>
            <AskForm id={id} onDecide={onDecide} />
          </details>
        )}
      </fieldset>
      <Thread id={id} exchanges={interrupt.exchanges} />
    </section>
  );
}

/** The draft in an editor: field by field when it is a record of texts, else its text or JSON. */
/** What every sub-form gets: its panel's node id (the prefix of its element ids) and the sender. */
interface FormProps {
  id: string;
  onDecide: Decide;
}

function EditForm({ id, artifact, onDecide }: FormProps & { artifact: unknown }) {
  const byField = isTextRecord(artifact);
  const [fields, setFields] = useState<Record<string, string>>(byField ? { ...artifact } : {});
  const [raw, setRaw] = useState(typeof artifact === 'string' ? artifact : JSON.stringify(artifact ?? null, null, 2));
  const [error, setError] = useState<string | undefined>();

  const submit = (e: Event) => {
    e.preventDefault();
    let edited: unknown = raw;
    if (byField) edited = fields;
    else if (typeof artifact !== 'string') {
      try {
        edited = JSON.parse(raw);
      } catch (err) {
        setError(`The edited draft is not valid JSON: ${(err as Error).message}`);
        return;
      }
    }
    setError(undefined);
    void onDecide({ action: 'edit-accept', editedArtifactData: edited }, 'Accepted with your edits');
  };

  return (
    <form onSubmit={submit} noValidate>
      {byField ? (
        Object.keys(artifact).map((name) => (
          <div class="field" key={name}>
            <label for={`${id}-edit-${name}`}>Edited {name}</label>
            <textarea
              id={`${id}-edit-${name}`}
              rows={5}
              value={fields[name]}
              onInput={(e) => setFields({ ...fields, [name]: e.currentTarget.value })}
            />
          </div>
        ))
      ) : (
        <div class="field">
          <label for={`${id}-edit-raw`}>{typeof artifact === 'string' ? 'Edited draft' : 'Edited draft (JSON)'}</label>
          <textarea
            id={`${id}-edit-raw`}
            rows={10}
            class="mono"
            value={raw}
            onInput={(e) => setRaw(e.currentTarget.value)}
            aria-invalid={error ? 'true' : undefined}
          />
        </div>
      )}
      {error && <ErrorNote>{error}</ErrorNote>}
      <button type="submit">Accept with these edits</button>
    </form>
  );
}

const SCOPES = [
  ['whole', 'The whole draft'],
  ['section', 'A section'],
  ['items', 'Some items'],
] as const;

function RefineForm({ id, onDecide }: FormProps) {
  const [scope, setScope] = useState('whole');
  const [text, setText] = useState('');
  const [error, setError] = useState<string | undefined>();
  const submit = whenFilled(text, 'Say what should change.', setError, () =>
    onDecide({ action: 'refine', refineFeedback: { scope, text: text.trim() } }, 'Revision requested'),
  );
  return (
    <form onSubmit={submit} noValidate>
      <SelectField
        id={`${id}-refine-scope`}
        label="What to revise"
        value={scope}
        options={SCOPES}
        onChange={setScope}
      />
      <div class="field">
        <label for={`${id}-refine-text`}>What should change</label>
        <textarea id={`${id}-refine-text`} rows={3} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </div>
      {error && <ErrorNote>{error}</ErrorNote>}
      <button type="submit">Request the revision</button>
    </form>
  );
}

function RejectForm({ id, onDecide }: FormProps) {
  const [feedback, setFeedback] = useState('');
  const submit = (e: Event) => {
    e.preventDefault();
    const text = feedback.trim();
    void onDecide({ action: 'reject', ...(text ? { feedback: text } : {}) }, 'Rejected');
  };
  return (
    <form onSubmit={submit}>
      <div class="field">
        <label for={`${id}-reject-feedback`}>Why (optional)</label>
        <textarea
          id={`${id}-reject-feedback`}
          rows={3}
          value={feedback}
          onInput={(e) => setFeedback(e.currentTarget.value)}
        />
      </div>
      <p class="hint">Rejecting ends the run: it reads “Rejected”, with your name.</p>
      <button type="submit" class="danger">
        Reject the draft
      </button>
    </form>
  );
}

function AskForm({ id, onDecide }: FormProps) {
  const [question, setQuestion] = useState('');
  const [error, setError] = useState<string | undefined>();
  const submit = whenFilled(question, 'Write the question first.', setError, () =>
    onDecide({ action: 'ask', question: question.trim() }, 'Question sent').then(() => setQuestion('')),
  );
  return (
    <form onSubmit={submit} noValidate>
      <div class="field">
        <label for={`${id}-ask-question`}>Your question</label>
        <textarea
          id={`${id}-ask-question`}
          rows={3}
          value={question}
          onInput={(e) => setQuestion(e.currentTarget.value)}
        />
      </div>
      {error && <ErrorNote>{error}</ErrorNote>}
      <button type="submit">Send the question</button>
    </form>
  );
}

/** A submit handler that first checks `text` is filled in, else shows `missing`. */
function whenFilled(
  text: string,
  missing: string,
  setError: (e: string | undefined) => void,
  send: () => Promise<void>,
): (e: Event) => void {
  return (e) => {
    e.preventDefault();
    if (text.trim() === '') {
      setError(missing);
      return;
    }
    setError(undefined);
    void send();
  };
}

function Thread({ id, exchanges }: { id: string; exchanges: OpenInterrupt['exchanges'] }) {
  if (exchanges.length === 0) return null;
  return (
    <section aria-labelledby={`${id}-thread-title`}>
      <h3 id={`${id}-thread-title`}>Questions asked</h3>
      <ol class="thread">
        {exchanges.map((x) => (
          <li key={`${x.at}-${x.principalId}`}>
            <p class="who">
              <strong>{x.principalId}</strong> <Ago iso={x.at} />
            </p>
            <p>{x.question}</p>
          </li>
        ))}
      </ol>
    </section>
  );
}

export function ClarificationPanel({ interrupt, pending, onDecide }: PanelProps) {
  const questions = interrupt.payload.questions ?? [];
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | undefined>();
  const submit = (e: Event) => {
    e.preventDefault();
    const missing = questions.filter((q) => !answers[q.id]?.trim());
    if (missing.length > 0) {
      setError(`Answer every question (${missing.length} still empty).`);
      return;
    }
    setError(undefined);
    const given = Object.fromEntries(questions.map((q) => [q.id, answers[q.id]?.trim() ?? '']));
    void onDecide({ answers: given }, 'Answers sent');
  };
  const id = interrupt.nodeId;
  return (
    <section class="panel" id={panelId(id)} data-node-id={id} aria-labelledby={`${id}-answer-title`}>
      <h2 id={`${id}-answer-title`} tabIndex={-1}>
        {interrupt.payload.title ?? 'Questions for you'}
      </h2>
      <dl class="facts">
        <StepFact nodeId={id} />
      </dl>
      <form onSubmit={submit} noValidate>
        <fieldset disabled={pending}>
          <legend class="visually-hidden">Answers</legend>
          {questions.map((q) => (
            <div class="field" key={q.id}>
              <label for={`${id}-answer-${q.id}`}>{q.question}</label>
              <textarea
                id={`${id}-answer-${q.id}`}
                rows={2}
                value={answers[q.id] ?? ''}
                onInput={(e) => setAnswers({ ...answers, [q.id]: e.currentTarget.value })}
              />
            </div>
          ))}
          {error && <ErrorNote>{error}</ErrorNote>}
          <button type="submit" class="primary">
            Send answers
          </button>
        </fieldset>
      </form>
    </section>
  );
}
