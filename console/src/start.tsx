// Start a run of any loaded workflow: a form generated from the workflow's `inputSchema` (a text,
// a long text, a number, a yes/no, a choice; anything else as JSON), posted to POST /v1/runs.
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from './api.js';
import { useLoaded } from './live.js';
import { Link, navigate, runPath, startPath } from './router.js';
import type { InputSchema, WorkflowDefinition, WorkflowSummary } from './types.js';
import { ErrorNote, SelectField } from './ui.js';

type Kind = 'text' | 'long-text' | 'number' | 'integer' | 'boolean' | 'choice' | 'json';

interface Field {
  name: string;
  kind: Kind;
  schema: InputSchema;
  required: boolean;
}

const typeOf = (s: InputSchema): string | undefined =>
  Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;

/** What kind of control a property gets. */
function kindOf(name: string, s: InputSchema): Kind {
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) return 'choice';
  switch (typeOf(s)) {
    case 'string':
      return (s.maxLength ?? Number.POSITIVE_INFINITY) > 200 &&
        /prompt|text|body|brief|description|note|message/i.test(name)
        ? 'long-text'
        : 'text';
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'boolean';
    default:
      return 'json';
  }
}

/** The form's fields, in the schema's order; none when the schema names no properties. */
function fieldsOf(schema: InputSchema | undefined): Field[] {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, s]) => ({
    name,
    kind: kindOf(name, s),
    schema: s,
    required: required.has(name),
  }));
}

/** A field's starting text: its default, else empty (a yes/no: its default, else no). */
function initial(f: Field): string {
  const d = f.schema.default;
  if (d === undefined && f.kind === 'choice' && f.required) return String(f.schema.enum?.[0] ?? '');
  if (d === undefined) return f.kind === 'boolean' ? 'false' : '';
  return typeof d === 'string' ? d : JSON.stringify(d);
}

/** The inputs the texts of the form say, or the field whose text does not read. */
function inputsOf(
  fields: Field[],
  texts: Record<string, string>,
): { inputs: Record<string, unknown> } | { field: string; message: string } {
  const inputs: Record<string, unknown> = {};
  for (const f of fields) {
    const text = texts[f.name] ?? '';
    if (text.trim() === '' && f.kind !== 'boolean') {
      if (f.required) return { field: f.name, message: `${labelOf(f)} is required.` };
      continue;
    }
    if (f.kind === 'boolean') inputs[f.name] = text === 'true';
    else if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(text);
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) {
        return {
          field: f.name,
          message: `${labelOf(f)} must be ${f.kind === 'integer' ? 'a whole number' : 'a number'}.`,
        };
      }
      inputs[f.name] = n;
    } else if (f.kind === 'json') {
      try {
        inputs[f.name] = JSON.parse(text);
      } catch {
        return { field: f.name, message: `${labelOf(f)} is not valid JSON.` };
      }
    } else inputs[f.name] = text;
  }
  return { inputs };
}

const labelOf = (f: Field): string => f.schema.title ?? f.name;

export function StartRun({ workflowId }: { workflowId: string | undefined }) {
  const { value: list, error: listError } = useLoaded(() => api<{ workflows: WorkflowSummary[] }>('/v1/workflows'), []);
  useEffect(() => {
    document.title = 'Start a run · Handoff';
  }, []);
  const workflows = list?.workflows ?? [];
  const chosen = workflowId ?? workflows[0]?.id;
  return (
    <section aria-labelledby="start-title">
      <h1 id="start-title" tabIndex={-1}>
        Start a run
      </h1>
      <p class="lead">Pick a workflow and fill in its inputs; the run starts at once and its page opens.</p>
      {listError && <ErrorNote>Could not list the workflows. {listError}</ErrorNote>}
      {list && workflows.length === 0 && <p class="empty">This host has no workflows loaded.</p>}
      {workflows.length > 0 && chosen && (
        <SelectField
          id="start-workflow"
          label="Workflow"
          value={chosen}
          options={workflows.map((w) => [w.id, w.name === w.id ? w.id : `${w.name} (${w.id})`] as const)}
          onChange={(id) => navigate(startPath(id))}
        />
      )}
      {chosen && <StartForm key={chosen} workflowId={chosen} />}
    </section>
  );
}

function StartForm({ workflowId }: { workflowId: string }) {
  const { value: def, error } = useLoaded(
    () => api<WorkflowDefinition>(`/v1/workflows/${encodeURIComponent(workflowId)}`),
    [workflowId],
  );
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<{ field?: string; message: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const fields = fieldsOf(def?.inputSchema);
  useEffect(() => {
    setTexts(Object.fromEntries(fields.map((f) => [f.name, initial(f)])));
  }, [def]);

  if (error)
    return (
      <ErrorNote>
        Could not read the workflow {workflowId}. {error}
      </ErrorNote>
    );
  if (!def) return <p>Loading…</p>;

  const submit = async (e: Event) => {
    e.preventDefault();
    const read = inputsOf(fields, texts);
    if ('field' in read) {
      setProblem(read);
      document.getElementById(`input-${read.field}`)?.focus();
      return;
    }
    setBusy(true);
    setProblem(undefined);
    try {
      const created = await api<{ runId: string }>('/v1/runs', {
        method: 'POST',
        body: { workflowId, inputs: read.inputs },
      });
      navigate(runPath(created.runId));
    } catch (err) {
      setProblem({ message: `The run was not started. ${errorText(err)}` });
    } finally {
      setBusy(false);
    }
  };
  const set = (name: string, value: string) => setTexts((t) => ({ ...t, [name]: value }));

  return (
    <form class="start-form" onSubmit={submit} noValidate aria-label={`Inputs of ${def.name}`}>
      {def.description && <p>{def.description}</p>}
      {fields.length === 0 && <p>This workflow takes no inputs.</p>}
      {fields.map((f) => (
        <FieldControl
          key={f.name}
          field={f}
          value={texts[f.name] ?? ''}
          error={problem?.field === f.name ? problem.message : undefined}
          onChange={(v) => set(f.name, v)}
        />
      ))}
      {problem && problem.field === undefined && <ErrorNote>{problem.message}</ErrorNote>}
      <p>
        <button type="submit" disabled={busy}>
          {busy ? 'Starting…' : 'Start the run'}
        </button>{' '}
        <Link href="/console/operations">Cancel</Link>
      </p>
    </form>
  );
}

function FieldControl(props: {
  field: Field;
  value: string;
  error: string | undefined;
  onChange: (v: string) => void;
}) {
  const { field: f, value, error } = props;
  const id = `input-${f.name}`;
  const help = f.schema.description ?? (f.kind === 'json' ? 'JSON, e.g. {"key": "value"} or [1, 2].' : undefined);
  const described = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    name: f.name,
    'aria-invalid': error ? ('true' as const) : undefined,
    'aria-describedby': described,
    'aria-required': f.required ? ('true' as const) : undefined,
  };
  const label = `${labelOf(f)}${f.required ? ' (required)' : ''}`;
  if (f.kind === 'boolean') {
    return (
      <div class="field">
        <label>
          <input
            type="checkbox"
            {...common}
            checked={value === 'true'}
            onChange={(e) => props.onChange(String(e.currentTarget.checked))}
          />{' '}
          {label}
        </label>
        {help && (
          <p id={`${id}-help`} class="field-help">
            {help}
          </p>
        )}
      </div>
    );
  }
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {f.kind === 'choice' ? (
        <select {...common} value={value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          {!f.required && <option value="">—</option>}
          {(f.schema.enum as string[]).map((v) => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
      ) : f.kind === 'long-text' || f.kind === 'json' ? (
        <textarea {...common} value={value} onInput={(e) => props.onChange(e.currentTarget.value)} />
      ) : f.kind === 'number' || f.kind === 'integer' ? (
        <input
          {...common}
          type="number"
          step={f.kind === 'integer' ? 1 : 'any'}
          value={value}
          onInput={(e) => props.onChange(e.currentTarget.value)}
        />
      ) : (
        <input {...common} type="text" value={value} onInput={(e) => props.onChange(e.currentTarget.value)} />
      )}
      {help && (
        <p id={`${id}-help`} class="field-help">
          {help}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} class="note note-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
