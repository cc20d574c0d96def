// The persisted A2ATaskState of each run (a2a_tasks) and the A2A reply messages already applied
// to a task (a2a_messages). A task of another tenant is simply absent from every read.
import type { A2ATasksTable, Database, InterruptsTable, RunsTable } from '../db.js';
import { type Kysely, sql } from 'kysely';
import type { InterruptRecord, RunHead, RunRecord, TaskRecord } from '../model.js';
import { interruptRows, RUN_HEAD_COLUMNS, runRows, taskRows } from '../rows.js';
import { decodeKeysetCursor, encodeCursor, keysetPage } from '../cursor.js';
import { ConflictError } from '../errors.js';
import { statement } from '../statements.js';
import { readOpenLocked } from './interrupts.js';
import { sawNoConfigs } from './push-configs.js';
import { Repo } from './repo.js';
import { holdsRecorded, RunValues } from './run-values.js';

// Every A2A request runs these; fixed SQL skips the query builder (statements.ts).
const INSERT_TASK = statement(
  'insert into "a2a_tasks" ("task_id", "tenant_id", "principal_id", "context_id", "message_id", "state",' +
    ' "interrupt_kind", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?)',
);
const UPDATE_STATE = statement(
  'update "a2a_tasks" set "state" = ?, "interrupt_kind" = ?, "updated_at" = ? where "task_id" = ?',
);
const GET_TASK = statement('select * from "a2a_tasks" where "task_id" = ? and "tenant_id" = ?');
export const TASK_BY_MESSAGE = statement(
  'select * from "a2a_tasks" where "tenant_id" = ? and "principal_id" = ? and "message_id" = ?',
);
const TASK_AND_RUN_TEXT =
  'select "r".*, "t"."principal_id" as "t_principal_id", "t"."context_id" as "t_context_id",' +
  ' "t"."message_id" as "t_message_id", "t"."state" as "t_state", "t"."interrupt_kind" as "t_interrupt_kind",' +
  ' "t"."updated_at" as "t_updated_at"' +
  ' from "a2a_tasks" as "t" join "runs" as "r" on "r"."run_id" = "t"."task_id"' +
  ' where "t"."task_id" = ? and "t"."tenant_id" = ?';
const TASK_AND_RUN = statement(TASK_AND_RUN_TEXT);

/** The columns of an open interrupt joined to its run, prefixed `i_`. */
const INTERRUPT_COLUMNS = interruptRows.columns;
const OPEN_INTERRUPT_COLUMNS = INTERRUPT_COLUMNS.map((c) => `"i"."${c}" as "i_${c}"`).join(', ');
/** How many push configs the task has (the push step then lists them only when there are some). */
const CONFIG_COUNT = '(select count(*) from "push_configs" as "p" where "p"."task_id" = "t"."task_id") as "p_configs"';
/**
 * PostgreSQL: the run's version in the statement's snapshot. A row locked after waiting for
 * another transaction is read as that transaction left it, but the rows joined to it (the open
 * interrupt, the configs count) as the snapshot had them: a version that moved meanwhile means
 * they may be stale, and the read is retried (ConflictError).
 */
const SNAPSHOT_VERSION =
  '(select "s"."version" from "runs" as "s" where "s"."run_id" = "t"."task_id") as "r_snapshot_version"';
/**
 * What a reply needs, in one statement: the task record, its run, the run's open interrupt (if
 * any) and whether the task has push configs. On PostgreSQL the run row is locked, as
 * `getRun(id, { forUpdate })` locks it.
 */
const replyTarget = (extra: string, lock: string) =>
  statement(
    TASK_AND_RUN_TEXT.replace(
      ' where ',
      ` left join "interrupts" as "i" on "i"."run_id" = "r"."run_id" and "i"."status" = 'open' where `,
    ).replace(' from "a2a_tasks"', `, ${OPEN_INTERRUPT_COLUMNS}, ${CONFIG_COUNT}${extra} from "a2a_tasks"`) +
      ` limit 1${lock}`,
  );
const REPLY_TARGET = {
  sqlite: replyTarget('', ''),
  postgres: replyTarget(`, ${SNAPSHOT_VERSION}`, ' for update of "r"'),
};

const INSERT_REPLY = statement(
  'insert into "a2a_messages" ("tenant_id", "principal_id", "message_id", "task_id") values (?, ?, ?, ?)',
);
const FIND_REPLY = statement(
  'select "task_id" from "a2a_messages" where "tenant_id" = ? and "principal_id" = ? and "message_id" = ?',
);

interface TaskColumns {
  t_principal_id: string;
  t_context_id: string;
  t_message_id: string | null;
  t_state: string;
  t_interrupt_kind: string | null;
  t_updated_at: string;
}

/** The cursor of the task list's page that follows `rec` (GET /v1/a2a/tasks `nextCursor`). */
export const taskListCursor = (rec: { updatedAt: string; taskId: string }): string =>
  encodeCursor([rec.updatedAt, rec.taskId]);

export interface TaskPage {
  tasks: TaskRecord[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

export class TaskRecords extends Repo {
  #values?: RunValues;

  async insert(rec: TaskRecord): Promise<void> {
    const params = [
      rec.taskId,
      rec.tenantId,
      rec.principalId,
      rec.contextId,
      rec.messageId ?? null,
      rec.state,
      rec.interruptKind ?? null,
      rec.updatedAt,
    ];
    await this.sendAhead(INSERT_TASK, params);
  }

  async updateState(taskId: string, state: string, interruptKind: string | undefined, updatedAt: string) {
    await this.sendAhead(UPDATE_STATE, [state, interruptKind ?? null, updatedAt, taskId]);
  }

  /** A task record as `tenantId` may see it. */
  async get(taskId: string, tenantId: string): Promise<TaskRecord | undefined> {
    const { rows } = await this.exec<A2ATasksTable>(GET_TASK, [taskId, tenantId]);
    return rows[0] && taskRows.fromRow(rows[0]);
  }

  /** A task record with its run, read together (one statement, one consistent snapshot). */
  async getWithRun(taskId: string, tenantId: string): Promise<{ rec: TaskRecord; run: RunRecord } | undefined> {
    const row = (await this.exec<RunsTable & TaskColumns>(TASK_AND_RUN, [taskId, tenantId])).rows[0];
    if (!row) return undefined;
    const read = taskAndRunOf(row);
    if (holdsRecorded(read.run)) await this.values.read(read.run);
    return read;
  }

  /** Reads a run's parts stored by reference (src/store/recorded.ts), made on first use. */
  private get values(): RunValues {
    this.#values ??= new RunValues(this.db, this.dialect, this.now, this.direct);
    return this.#values;
  }

  /**
   * A task record, its run and the run's open interrupt, in one statement: what resolving a
   * reply reads in its transaction (the run row locked on PostgreSQL).
   */
  async getForReply(taskId: string, tenantId: string): Promise<ReplyTarget | undefined> {
    return (await this.readReplyTarget(taskId, tenantId))?.target;
  }

  /** The reply's read, and how many push configs the task has. */
  protected async readReplyTarget(
    taskId: string,
    tenantId: string,
  ): Promise<{ target: ReplyTarget; configs: number } | undefined> {
    const query = REPLY_TARGET[this.dialect];
    const row = (await this.exec<ReplyRow>(query, [taskId, tenantId])).rows[0];
    if (!row) return undefined;
    if (row.r_snapshot_version != null && Number(row.r_snapshot_version) !== Number(row.version)) {
      throw new ConflictError(`run ${taskId} changed while its reply waited for it`);
    }
    const target: ReplyTarget = taskAndRunOf(row);
    if (holdsRecorded(target.run)) await this.values.read(target.run);
    if (row.i_interrupt_id !== null) target.open = interruptOf(row);
    return { target, configs: Number(row.p_configs) };
  }

  /** The task a starting message (tenant, principal, messageId) created, if any. */
  async findByMessage(tenantId: string, principalId: string, messageId: string): Promise<TaskRecord | undefined> {
    const { rows } = await this.exec<A2ATasksTable>(TASK_BY_MESSAGE, [tenantId, principalId, messageId]);
    return rows[0] && taskRows.fromRow(rows[0]);
  }

  /** Mark a reply applied; the primary key makes a concurrent duplicate fail its transaction. */
  async recordReply(tenantId: string, principalId: string, messageId: string, taskId: string): Promise<void> {
    await this.sendAhead(INSERT_REPLY, [tenantId, principalId, messageId, taskId]);
  }

  /** The task a reply with this messageId was already applied to, if any. */
  async findReply(tenantId: string, principalId: string, messageId: string): Promise<string | undefined> {
    return (await this.first<{ task_id: string }>(FIND_REPLY, [tenantId, principalId, messageId]))?.task_id;
  }

  /** A tenant's tasks, most recently changed first, by keyset pagination (no offsets, no scans). */
  async list(
    tenantId: string,
    opts: { limit: number; cursor?: string; state?: string; contextId?: string },
  ): Promise<TaskPage> {
    const filter: TaskFilter = {
      ...(opts.state ? { state: opts.state } : {}),
      ...(opts.contextId ? { contextId: opts.contextId } : {}),
    };
    const after = opts.cursor === undefined ? undefined : cursorKey(opts.cursor);
    const { tasks, more } = await this.page(tenantId, filter, opts.limit, after);
    const last = tasks.at(-1);
    return more && last ? { tasks, nextCursor: taskListCursor(last) } : { tasks };
  }
  /**
   * A page of a tenant's tasks by status time, newest first, strictly after `after` (keyset: a
   * task inserted meanwhile is newer, so it never shifts a later page). `more`: another page follows.
   */
  async page(
    tenantId: string,
    filter: TaskFilter,
    limit: number,
    after?: { updatedAt: string; taskId: string },
  ): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    const key = after ? ([after.updatedAt, after.taskId] as const) : undefined;
    const { rows, more } = await keysetPage(this.filtered(tenantId, filter).selectAll(), TASK_LIST_KEY, limit, key);
    return { tasks: rows.map(taskRows.fromRow), more };
  }

  /**
   * `page`, each task read with its run in the same statement (so the run's state and the
   * record's status time agree), the run as a RunHead: never its inputs, state or metadata. A
   * task whose run was purged meanwhile is left out.
   */
  async pageWithRuns(
    tenantId: string,
    filter: TaskFilter,
    limit: number,
    after?: { updatedAt: string; taskId: string },
  ): Promise<{ tasks: Array<{ rec: TaskRecord; run: RunHead }>; more: boolean }> {
    const key = after ? ([after.updatedAt, after.taskId] as const) : undefined;
    const q = tasksWithRunsQuery(this.db, tenantId, filter);
    const { rows, more } = await keysetPage(q, TASK_LIST_KEY, limit, key);
    const tasks = rows.map((row) => ({ rec: taskRows.fromRow(row), run: runHeadOf(row) }));
    return { tasks, more };
  }

  /** How many of a tenant's tasks match `filter` (ListTasks totalSize). */
  async count(tenantId: string, filter: TaskFilter): Promise<number> {
    const row = await this.filtered(tenantId, filter)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  private filtered(tenantId: string, filter: TaskFilter) {
    return tasksQuery(this.db, tenantId, filter);
  }
}

/**
 * A tenant's tasks matching `filter` (ListTasks, GET /v1/a2a/tasks), unordered. Column names
 * qualified: `tasksWithRunsQuery` joins runs, which has a tenant_id and an updated_at too. With a
 * state, a2a_tasks_tenant_state serves it in status order (migration 0015); without,
 * a2a_tasks_tenant_updated.
 */
export function tasksQuery(db: Kysely<Database>, tenantId: string, filter: TaskFilter) {
  let q = db.selectFrom('a2a_tasks').where('a2a_tasks.tenant_id', '=', tenantId);
  if (filter.state !== undefined) q = q.where('a2a_tasks.state', '=', filter.state);
  if (filter.contextId !== undefined) q = q.where('a2a_tasks.context_id', '=', filter.contextId);
  if (filter.since !== undefined) q = q.where('a2a_tasks.updated_at', '>=', filter.since);
  return q;
}

/** `tasksQuery`, each task with its run's head (the `r_` columns): what a ListTasks page reads. */
export function tasksWithRunsQuery(db: Kysely<Database>, tenantId: string, filter: TaskFilter) {
  return tasksQuery(db, tenantId, filter)
    .innerJoin('runs', 'runs.run_id', 'a2a_tasks.task_id')
    .selectAll('a2a_tasks')
    .select(RUN_HEAD_COLUMNS.map((c) => sql.ref(`runs.${c}`).as(`r_${c}`)));
}

/** The task record and run of a row of TASK_AND_RUN. */
function taskAndRunOf(row: RunsTable & TaskColumns): { rec: TaskRecord; run: RunRecord } {
  const rec = taskRows.fromRow({
    task_id: row.run_id,
    tenant_id: row.tenant_id,
    principal_id: row.t_principal_id,
    context_id: row.t_context_id,
    message_id: row.t_message_id,
    state: row.t_state,
    interrupt_kind: row.t_interrupt_kind,
    updated_at: row.t_updated_at,
  });
  return { rec, run: runRows.fromRow(row) };
}

/** The `i_` columns of REPLY_TARGET (all null when the run has no open interrupt). */
type OpenColumns = { [K in keyof InterruptsTable as `i_${K}`]: InterruptsTable[K] | null };

/** A row of REPLY_TARGET: counts come back as text from PostgreSQL. */
type ReplyRow = RunsTable &
  TaskColumns &
  OpenColumns & { p_configs: number | string; r_snapshot_version?: number | string | null };

/** What a reply reads: the task record, its run, and the run's open interrupt if any. */
export interface ReplyTarget {
  rec: TaskRecord;
  run: RunRecord;
  open?: InterruptRecord;
}

/** The open interrupt of a REPLY_TARGET row (its `i_` columns). */
const interruptOf = interruptRows.fromPrefixed('i_') as (row: OpenColumns) => InterruptRecord;

/** A task's projected state and when it last changed. */
interface TaskState {
  state: string;
  interruptKind: string | undefined;
  updatedAt: string;
}

/** ListTasks filters (A2A 1.0), ANDed; `since` is an inclusive lower bound on the status time. */
export interface TaskFilter {
  contextId?: string;
  state?: string;
  since?: string;
}

/** A malformed cursor is a RangeError (the caller's 400), never a query. */
/** The list order: most recently changed first. */
export const TASK_LIST_KEY = ['a2a_tasks.updated_at', 'a2a_tasks.task_id'] as const;

/** The run of a `pageWithRuns` row (its `r_` columns). */
const runHeadOf = runRows.fromPrefixed('r_') as (row: Record<string, unknown>) => RunHead;

function cursorKey(cursor: string): { updatedAt: string; taskId: string } {
  const key = decodeKeysetCursor(cursor);
  if (!key) throw new RangeError('invalid cursor');
  return { updatedAt: key[0], taskId: key[1] };
}

/**
 * The task records as one transaction sees them: a state change is written once, when the
 * transaction ends (`flushStates`, before COMMIT), with the last state it set — a request that
 * moves a task twice (input-required → working → completed) writes one UPDATE. Any read of the
 * table in the transaction writes the pending changes first, so it sees them.
 */
export class TxTaskRecords extends TaskRecords {
  private readonly states = new Map<string, TaskState>();
  /** The last state set per task, written or not (a read in between writes the pending ones). */
  private readonly lastSet = new Map<string, TaskState>();

  override async updateState(taskId: string, state: string, interruptKind: string | undefined, updatedAt: string) {
    this.states.delete(taskId); // keep the order of the last changes
    this.states.set(taskId, { state, interruptKind, updatedAt });
    this.lastSet.set(taskId, { state, interruptKind, updatedAt });
  }

  /** Write the state changes this transaction made (called before it commits, and before a read). */
  async flushStates(): Promise<void> {
    for (const [taskId, s] of this.states) {
      this.states.delete(taskId);
      await super.updateState(taskId, s.state, s.interruptKind, s.updatedAt);
    }
  }

  override async get(taskId: string, tenantId: string): Promise<TaskRecord | undefined> {
    await this.flushStates();
    return super.get(taskId, tenantId);
  }

  override async getWithRun(taskId: string, tenantId: string) {
    await this.flushStates();
    return super.getWithRun(taskId, tenantId);
  }

  /**
   * The reply's read, remembered by the transaction: a task without push configs lists none
   * until one is registered (push-configs.ts); on PostgreSQL, an open interrupt read with its run
   * locked and unchanged stays open until this transaction ends (interrupts.ts).
   */
  override async getForReply(taskId: string, tenantId: string): Promise<ReplyTarget | undefined> {
    await this.flushStates();
    const read = await this.readReplyTarget(taskId, tenantId);
    if (!read) return undefined;
    if (read.configs === 0) sawNoConfigs(this.db, taskId);
    if (read.target.open && this.dialect === 'postgres') readOpenLocked(this.db, read.target.open);
    return read.target;
  }

  /** The last state this transaction set for a task (what the record holds once it commits), if any. */
  stateSet(taskId: string): TaskState | undefined {
    return this.lastSet.get(taskId);
  }

  override async findByMessage(tenantId: string, principalId: string, messageId: string) {
    await this.flushStates();
    return super.findByMessage(tenantId, principalId, messageId);
  }

  override async list(tenantId: string, opts: Parameters<TaskRecords['list']>[1]): Promise<TaskPage> {
    await this.flushStates();
    return super.list(tenantId, opts);
  }
}
