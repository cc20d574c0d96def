// A tenant's runs, newest first (created_at, then run_id), by keyset pagination: GET /v1/runs and
// the console's inbox and run list. Two indexes serve it (migration 0006): one over every run of a
// tenant, and a partial one holding only the runs that wait on a person.
//
//   const page = await listRuns(store, 't1', { statuses: ['waiting-approval'], limit: 50 });
//   const next = await listRuns(store, 't1', { statuses: ['waiting-approval'], limit: 50, cursor: page.nextCursor });
import { type Expression, type SqlBool, sql } from 'kysely';
import { WAITING_STATUSES } from './migrations.js';
import type { InterruptRecord, RunRecord, RunStatus } from './model.js';
import { interruptFromRow, runFromRow } from './rows.js';
import type { Store } from './store.js';

export interface RunListFilter {
  /** Any of these statuses (all when absent). */
  statuses?: RunStatus[];
  workflowId?: string;
  /** Case-insensitive (ASCII): a run id prefix, or text within the workflow id or a tag. */
  text?: string;
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface ListedRun {
  run: RunRecord;
  /** The open interrupt of a run that waits for approval or input. */
  interrupt?: InterruptRecord;
}

export interface RunPage {
  runs: ListedRun[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

// Written exactly as the partial index's predicate: SQLite uses a partial index only when the query
// repeats its WHERE term (literals, not parameters).
const WAITING_LITERALS = sql.join(WAITING_STATUSES.map((s) => sql.lit(s)));
const WAITING_TERM: Expression<SqlBool> = sql<SqlBool>`${sql.ref('status')} in (${WAITING_LITERALS})`;

export async function listRuns(store: Store, tenantId: string, filter: RunListFilter): Promise<RunPage> {
  let q = store.db.selectFrom('runs').selectAll().where('tenant_id', '=', tenantId);
  const statuses = filter.statuses;
  if (statuses && statuses.length > 0) {
    if (statuses.every((s) => (WAITING_STATUSES as readonly string[]).includes(s))) q = q.where(WAITING_TERM);
    // Statuses are checked against RUN_STATUSES by the caller; literals keep the plan independent of them.
    q = q.where(
      sql.ref('status'),
      'in',
      statuses.map((s) => sql.lit(s)),
    );
  }
  if (filter.workflowId !== undefined) q = q.where('workflow_id', '=', filter.workflowId);
  if (filter.text !== undefined) q = q.where(textMatch(filter.text));
  if (filter.cursor !== undefined) {
    const after = decodeCursor(filter.cursor);
    q = q.where(sql<SqlBool>`(${sql.ref('created_at')}, ${sql.ref('run_id')}) < (${after.createdAt}, ${after.runId})`);
  }
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('run_id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  const runs = rows.slice(0, filter.limit).map(runFromRow);
  const open = await openInterrupts(store, runs);
  const last = runs.at(-1);
  const page: RunPage = {
    runs: runs.map((run) => ({ run, ...(open.has(run.runId) ? { interrupt: open.get(run.runId) } : {}) })),
  };
  if (rows.length > filter.limit && last) page.nextCursor = encodeCursor(last);
  return page;
}

/** The open interrupts of the waiting runs among `runs`, by run id (one query). */
async function openInterrupts(store: Store, runs: RunRecord[]): Promise<Map<string, InterruptRecord>> {
  const ids = runs.filter((r) => (WAITING_STATUSES as readonly string[]).includes(r.status)).map((r) => r.runId);
  if (ids.length === 0) return new Map();
  const rows = await store.db
    .selectFrom('interrupts')
    .selectAll()
    .where('run_id', 'in', ids)
    .where('status', '=', 'open')
    .execute();
  return new Map(rows.map((r) => [r.run_id, interruptFromRow(r)]));
}

/**
 * `text` as a run id prefix, or within the workflow id or a tag. Tags are stored as JSON text, so
 * the text is matched in its JSON-escaped form (a quote in it cannot match a tag boundary).
 */
function textMatch(text: string): Expression<SqlBool> {
  const lower = text.toLowerCase();
  const plain = escapeLike(lower);
  const inTags = escapeLike(JSON.stringify(lower).slice(1, -1));
  const terms = [like('run_id', `${plain}%`), like('workflow_id', `%${plain}%`), like('tags', `%${inTags}%`)];
  return sql<SqlBool>`(${sql.join(terms, sql` or `)})`;
}

const like = (column: string, pattern: string) => sql<SqlBool>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`;

const escapeLike = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);

const encodeCursor = (run: RunRecord): string =>
  Buffer.from(JSON.stringify([run.createdAt, run.runId])).toString('base64url');

function decodeCursor(cursor: string): { createdAt: string; runId: string } {
  try {
    const [createdAt, runId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof createdAt === 'string' && typeof runId === 'string') return { createdAt, runId };
  } catch {
    // fall through
  }
  throw new RangeError('cursor is not one this server gave: pass the nextCursor of the previous page');
}
