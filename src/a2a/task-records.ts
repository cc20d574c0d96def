// The persisted A2ATaskState (RFC 0100 §2), one row per run, kept current by a transition hook
// that runs inside every run transaction — so the record can never disagree with its run.
import { newContextId } from '../engine/ids.js';
import type { A2ATasksTable, RunsTable } from '../store/db.js';
import { runFromRow } from '../store/rows.js';
import type { RunRecord } from '../store/model.js';
import { statement } from '../store/statements.js';
import type { RunChange, Store, StoreTx } from '../store/store.js';
import { projectState } from './projection.js';
import type { A2ATaskState } from './types.js';

export interface TaskRecord {
  taskId: string;
  tenantId: string;
  principalId: string;
  contextId: string;
  messageId?: string;
  state: A2ATaskState['state'];
  interruptKind?: 'approval' | 'clarification';
  updatedAt: string;
}

/** A2A correlation data carried in run metadata by the A2A surface. */
export interface A2ARunMetadata {
  contextId?: string;
  messageId?: string;
}

export function registerTaskRecords(store: Store): void {
  store.addTransitionHook(syncTaskRecord);
  store.addPurgeHook(async (trx, runIds) => {
    await trx.deleteFrom('a2a_messages').where('task_id', 'in', runIds).execute();
    await trx.deleteFrom('a2a_tasks').where('task_id', 'in', runIds).execute();
  });
}

/** An `a2a.message` event whose payload names the replying principal marks a reply applied. */
async function recordReplies(tx: StoreTx, change: RunChange): Promise<void> {
  for (const e of change.events) {
    if (e.type !== 'a2a.message' || typeof e.payload.principalId !== 'string') continue;
    const message = e.payload.message as { messageId: string };
    // The primary key makes a concurrent duplicate reply fail its whole transaction.
    await tx.db
      .insertInto('a2a_messages')
      .values({
        tenant_id: change.run.tenantId,
        principal_id: e.payload.principalId,
        message_id: message.messageId,
        task_id: change.run.runId,
      })
      .execute();
  }
}

/** The task a reply with this messageId was already applied to, if any. */
export async function findReply(
  store: Store,
  tenantId: string,
  principalId: string,
  messageId: string,
): Promise<string | undefined> {
  const row = await store.db
    .selectFrom('a2a_messages')
    .select('task_id')
    .where('tenant_id', '=', tenantId)
    .where('principal_id', '=', principalId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
  return row?.task_id;
}

async function syncTaskRecord(tx: StoreTx, change: RunChange): Promise<void> {
  await recordReplies(tx, change);
  const next = projectState(change.run.status);
  if (!change.before) {
    const a2a = (change.run.metadata.a2a ?? {}) as A2ARunMetadata;
    const params = [
      change.run.runId,
      change.run.tenantId,
      change.run.principalId,
      a2a.contextId ?? newContextId(),
      a2a.messageId ?? null,
      next.state,
      next.interruptKind ?? null,
      change.run.updatedAt,
    ];
    await tx.db.executeQuery(INSERT_TASK.with(tx.dialect, params));
    return;
  }
  const prev = projectState(change.before.status);
  // updatedAt means "when the projected state last changed", so only a real change writes.
  if (prev.state === next.state && prev.interruptKind === next.interruptKind) return;
  await tx.db.executeQuery(
    UPDATE_TASK.with(tx.dialect, [next.state, next.interruptKind ?? null, change.run.updatedAt, change.run.runId]),
  );
}

// Every A2A request runs these; fixed SQL skips the query builder (store/statements.ts).
const INSERT_TASK = statement(
  'insert into "a2a_tasks" ("task_id", "tenant_id", "principal_id", "context_id", "message_id", "state", "interrupt_kind", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?)',
);
const UPDATE_TASK = statement(
  'update "a2a_tasks" set "state" = ?, "interrupt_kind" = ?, "updated_at" = ? where "task_id" = ?',
);
const GET_TASK = statement('select * from "a2a_tasks" where "task_id" = ? and "tenant_id" = ?');
const TASK_BY_MESSAGE = statement(
  'select * from "a2a_tasks" where "tenant_id" = ? and "principal_id" = ? and "message_id" = ?',
);

/** Read a task record as `tenantId` may see it: another tenant's task is simply absent. */
export async function getTaskRecord(store: Store, taskId: string, tenantId: string): Promise<TaskRecord | undefined> {
  const { rows } = await store.db.executeQuery(GET_TASK.with<A2ATasksTable>(store.dialect, [taskId, tenantId]));
  return rows[0] && fromRow(rows[0]);
}

/**
 * A task record with its run, read together (one statement, one consistent snapshot): what
 * tasks/get needs. Another tenant's task is simply absent.
 */
export async function getTaskAndRun(
  store: Store,
  taskId: string,
  tenantId: string,
): Promise<{ rec: TaskRecord; run: RunRecord } | undefined> {
  const { rows } = await store.db.executeQuery(
    TASK_AND_RUN.with<RunsTable & TaskColumns>(store.dialect, [taskId, tenantId]),
  );
  const row = rows[0];
  if (!row) return undefined;
  const rec = fromRow({
    task_id: row.run_id,
    tenant_id: row.tenant_id,
    principal_id: row.t_principal_id,
    context_id: row.t_context_id,
    message_id: row.t_message_id,
    state: row.t_state,
    interrupt_kind: row.t_interrupt_kind,
    updated_at: row.t_updated_at,
  });
  return { rec, run: runFromRow(row) };
}

interface TaskColumns {
  t_principal_id: string;
  t_context_id: string;
  t_message_id: string | null;
  t_state: string;
  t_interrupt_kind: string | null;
  t_updated_at: string;
}

const TASK_AND_RUN = statement(
  'select "r".*, "t"."principal_id" as "t_principal_id", "t"."context_id" as "t_context_id", "t"."message_id" as "t_message_id",' +
    ' "t"."state" as "t_state", "t"."interrupt_kind" as "t_interrupt_kind", "t"."updated_at" as "t_updated_at"' +
    ' from "a2a_tasks" as "t" join "runs" as "r" on "r"."run_id" = "t"."task_id" where "t"."task_id" = ? and "t"."tenant_id" = ?',
);

export async function findTaskByMessage(
  store: Store,
  tenantId: string,
  principalId: string,
  messageId: string,
): Promise<TaskRecord | undefined> {
  const { rows } = await store.db.executeQuery(
    TASK_BY_MESSAGE.with<A2ATasksTable>(store.dialect, [tenantId, principalId, messageId]),
  );
  return rows[0] && fromRow(rows[0]);
}

/** The RFC 0100 record exactly as the schema has it (closed: internal columns stay internal). */
export function toStateRecord(rec: TaskRecord): A2ATaskState {
  const out: A2ATaskState = {
    taskId: rec.taskId,
    runId: rec.taskId,
    contextId: rec.contextId,
    state: rec.state,
    updatedAt: rec.updatedAt,
  };
  if (rec.interruptKind) out.interruptKind = rec.interruptKind;
  return out;
}

function fromRow(row: A2ATasksTable): TaskRecord {
  const rec: TaskRecord = {
    taskId: row.task_id,
    tenantId: row.tenant_id,
    principalId: row.principal_id,
    contextId: row.context_id,
    state: row.state as TaskRecord['state'],
    updatedAt: row.updated_at,
  };
  if (row.message_id) rec.messageId = row.message_id;
  if (row.interrupt_kind) rec.interruptKind = row.interrupt_kind as TaskRecord['interruptKind'];
  return rec;
}

export interface TaskPage {
  tasks: TaskRecord[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

/** A tenant's tasks, most recently changed first, by keyset pagination (no offsets, no scans). */
export async function listTaskRecords(
  store: Store,
  tenantId: string,
  opts: { limit: number; cursor?: string; state?: string; contextId?: string },
): Promise<TaskPage> {
  let q = store.db.selectFrom('a2a_tasks').selectAll().where('tenant_id', '=', tenantId);
  if (opts.state) q = q.where('state', '=', opts.state);
  if (opts.contextId) q = q.where('context_id', '=', opts.contextId);
  const after = opts.cursor ? decodeCursor(opts.cursor) : undefined;
  if (after) {
    q = q.where((eb) =>
      eb.or([
        eb('updated_at', '<', after.updatedAt),
        eb.and([eb('updated_at', '=', after.updatedAt), eb('task_id', '<', after.taskId)]),
      ]),
    );
  }
  const rows = await q
    .orderBy('updated_at', 'desc')
    .orderBy('task_id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const tasks = rows.slice(0, opts.limit).map(fromRow);
  const last = tasks.at(-1);
  return rows.length > opts.limit && last ? { tasks, nextCursor: encodeCursor(last) } : { tasks };
}

const encodeCursor = (t: TaskRecord): string =>
  Buffer.from(JSON.stringify([t.updatedAt, t.taskId])).toString('base64url');

function decodeCursor(cursor: string): { updatedAt: string; taskId: string } {
  try {
    const [updatedAt, taskId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof updatedAt === 'string' && typeof taskId === 'string') return { updatedAt, taskId };
  } catch {
    // fall through
  }
  throw new RangeError('invalid cursor');
}
