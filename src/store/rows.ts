// Mapping between database rows and domain records, declared once per table: a column becomes the
// field of the same name in camelCase (unless renamed), JSON columns (TEXT on both dialects) are
// parsed, numeric columns are numbers (pg returns some as strings), flag columns are 0/1 ↔ boolean,
// and NULL is an absent field — so a record read back has exactly the shape it was written with.
import type { A2ATasksTable, InterruptsTable, PushConfigsTable, PushOutboxTable, RunsTable } from './db.js';
import type { DeliveryRecord, InterruptRecord, PushConfigRecord, RunHead, RunRecord, TaskRecord } from './model.js';

interface RowShape {
  /** Every column of the table, separated by spaces. */
  columns: string;
  json?: string;
  numbers?: string;
  flags?: string;
  /** column → field, where the field is not the column in camelCase. */
  renames?: Record<string, string>;
}

type Kind = 'text' | 'json' | 'number' | 'flag';

interface Mapper<Row, Rec> {
  /** The table's columns, in declaration order (for fixed SQL). */
  readonly columns: ReadonlyArray<keyof Row & string>;
  /** The JSON columns. */
  readonly json: ReadonlyArray<keyof Row & string>;
  fromRow(row: Row): Rec;
  /** `fromRow` for a joined row that names each column `${prefix}${column}` (made once per prefix). */
  fromPrefixed(prefix: string): (row: Record<string, unknown>) => Rec;
  toRow(rec: Rec): Row;
  /** The values `toRow` writes, in column order (the parameters of an INSERT of `columns`). */
  values(rec: Rec): unknown[];
  /** One column of `rec` as `toRow` writes it (a writer that needs a few columns, not the row). */
  column(rec: Rec, column: keyof Row & string): unknown;
}

const words = (list: string | undefined): string[] => (list ?? '').split(/\s+/).filter(Boolean);
const camel = (column: string): string => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function mapper<Row, Rec>(table: string, shape: RowShape): Mapper<Row, Rec> {
  const kinds = new Map<string, Kind>([
    ...words(shape.json).map((c) => [c, 'json'] as const),
    ...words(shape.numbers).map((c) => [c, 'number'] as const),
    ...words(shape.flags).map((c) => [c, 'flag'] as const),
  ]);
  const columns: Column[] = words(shape.columns).map((column) => ({
    column,
    field: shape.renames?.[column] ?? camel(column),
    kind: kinds.get(column) ?? 'text',
  }));
  const readers = new Map(columns.map((c) => [c.column, compileColumn(table, c)]));
  const prefixed = new Map<string, Mapping>();
  return {
    columns: columns.map((c) => c.column) as Array<keyof Row & string>,
    json: words(shape.json) as Array<keyof Row & string>,
    fromRow: compileFromRow(table, columns) as (row: Row) => Rec,
    fromPrefixed: (prefix) => {
      let read = prefixed.get(prefix);
      if (!read) {
        read = compileFromRow(table, columns, prefix);
        prefixed.set(prefix, read);
      }
      return read as (row: Record<string, unknown>) => Rec;
    },
    toRow: compileToRow(table, columns) as (rec: Rec) => Row,
    values: compileValues(table, columns) as (rec: Rec) => unknown[],
    column: (rec, column) => (readers.get(column) as Mapping)(rec),
  };
}

interface Column {
  column: string;
  field: string;
  kind: Kind;
}

// `fromRow`, `toRow`, `values` and `column` run for every row read and written, on the hottest paths.
// They are generated once per table as straight-line code with constant property names: a loop
// over the columns reads and writes properties by variable name, which V8 cannot cache (a
// megamorphic lookup per column). The names come from the declarations below, never from input,
// and are quoted with JSON.stringify; the conversions are the ones the header describes (`WRITE`
// below, and `read` in compileFromRow). Each is named after its table (`runs_fromRow`), for profiles.
type Mapping = (value: unknown) => unknown;

function compile(name: string, param: string, lines: string[]): Mapping {
  return new Function(`return function ${name}(${param}) {\n${lines.join('\n')}\n};`)() as Mapping;
}

function compileFromRow(table: string, columns: Column[], prefix = ''): Mapping {
  const body = columns.map(({ column, field, kind }) => {
    const read = { json: 'JSON.parse(v)', number: 'Number(v)', flag: 'Number(v) === 1', text: 'v' }[kind];
    return `v = row[${JSON.stringify(prefix + column)}]; if (v !== null && v !== undefined) rec[${JSON.stringify(field)}] = ${read};`;
  });
  const name = prefix === '' ? `${table}_fromRow` : `${table}_from_${prefix.replace(/\W/g, '')}Row`;
  return compile(name, 'row', ['const rec = {};', 'let v;', ...body, 'return rec;']);
}

/** The expression of one column's written value from `v`, its field's value: JSON text, 0/1, or as is. */
const WRITE: Record<Kind, string> = { json: 'JSON.stringify(v)', number: 'v', flag: '(v ? 1 : 0)', text: 'v' };

function compileToRow(table: string, columns: Column[]): Mapping {
  const body = columns.map(({ column, field, kind }) => {
    return `v = rec[${JSON.stringify(field)}]; row[${JSON.stringify(column)}] = v === undefined ? null : ${WRITE[kind]};`;
  });
  return compile(`${table}_toRow`, 'rec', ['const row = {};', 'let v;', ...body, 'return row;']);
}

function compileValues(table: string, columns: Column[]): Mapping {
  const items = columns.map(
    ({ field, kind }) => `(v = rec[${JSON.stringify(field)}]) === undefined ? null : ${WRITE[kind]},`,
  );
  return compile(`${table}_values`, 'rec', ['let v;', 'return [', ...items, '];']);
}

function compileColumn(table: string, { column, field, kind }: Column): Mapping {
  const read = `const v = rec[${JSON.stringify(field)}];`;
  return compile(`${table}_${column}`, 'rec', [read, `return v === undefined ? null : ${WRITE[kind]};`]);
}

export const runRows = mapper<RunsTable, RunRecord>('runs', {
  columns:
    'run_id tenant_id principal_id workflow_id status inputs state cursor error tags metadata next_seq version' +
    ' lease_owner lease_expires_at wake_at created_at updated_at completed_at parent_run_id parent_node_id',
  json: 'inputs state cursor error tags metadata',
  numbers: 'next_seq version lease_expires_at wake_at',
});

/** The columns of a RunHead: a run's but its inputs, state and metadata. */
export const RUN_HEAD_COLUMNS = runRows.columns.filter((c) => c !== 'inputs' && c !== 'state' && c !== 'metadata');

/** A row of RUN_HEAD_COLUMNS as a RunHead (`fromRow` leaves a column the row lacks out). */
export const runHeadOf = (row: Omit<RunsTable, 'inputs' | 'state' | 'metadata'>): RunHead =>
  runRows.fromRow(row as RunsTable);

export const interruptRows = mapper<InterruptsTable, InterruptRecord>('interrupts', {
  columns: 'interrupt_id run_id node_id kind status data votes exchanges resolution resolved_by created_at resolved_at',
  json: 'data votes exchanges resolution',
});

export const taskRows = mapper<A2ATasksTable, TaskRecord>('a2a_tasks', {
  columns: 'task_id tenant_id principal_id context_id message_id state interrupt_kind updated_at',
});

export const pushConfigRows = mapper<PushConfigsTable, PushConfigRecord>('push_configs', {
  columns:
    'task_id config_id tenant_id url auth_schemes token_secret credentials_secret token_fingerprint created_at' +
    ' protocol_version',
  json: 'auth_schemes',
  renames: { token_secret: 'tokenSecretId', credentials_secret: 'credentialsSecretId' },
});

export const deliveryRows = mapper<PushOutboxTable, DeliveryRecord>('push_outbox', {
  columns:
    'delivery_id task_id config_id tenant_id seq state final body attempts next_attempt_at lease_owner' +
    ' lease_expires_at last_status last_error created_at delivered_at protocol_version',
  numbers: 'seq attempts next_attempt_at lease_expires_at last_status',
  flags: 'final',
});
