// Run snapshots as read outside a transaction, and the worker's leases on them. Writes that
// change a run's content go through StoreTx (tx.ts); leases are single atomic statements.
import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import type { Database, RunsTable } from '../db.js';
import { decodeKeysetCursor, encodeCursor, keysetPage } from '../cursor.js';
import {
  isWaiting,
  type RunHead,
  type RunRecord,
  type RunStatus,
  TERMINAL_STATUSES,
  WAITING_STATUSES,
} from '../model.js';
import { RUN_HEAD_COLUMNS, runHeadOf, runRows } from '../rows.js';
import { claimStatements, statement } from '../statements.js';
import { Repo } from './repo.js';
import { holdsRecorded, RunValues } from './run-values.js';

/** Statuses a worker drives; any other status waits for something outside the worker. */
const RUNNABLE: RunStatus[] = ['pending', 'running', 'cancelling'];

const inList = (statuses: readonly string[]) => statuses.map((s) => `'${s}'`).join(', ');

/**
 * A run that is not terminal, exactly as the predicate of the partial indexes runs_runnable and
 * runs_tenant_status (migration 0010). SQLite uses a partial index only when the query repeats
 * each term of its predicate, and within an OR only the terms of that branch count: so each
 * branch of the claim repeats it (test/integration/run-index-plans.test.ts checks the plans).
 */
export const ACTIVE_TERMS = [...TERMINAL_STATUSES].map((s) => `"status" <> '${s}'`).join(' and ');

// runs_runnable holds, of the active runs, those the worker may have to take without anyone
// asking: `("status" in ('pending', 'running', 'cancelling') or "wake_at" is not null)` (migration
// 0015). A run waiting on a person with no deadline is not in it at all: a million open approvals
// cost the claim and the next-wake query nothing. Each reader below repeats one side of that OR.

/** Runnable with its timer due, or waiting on a person past the gate's deadline (a timer too);
 * and the lease free or expired. */
export const CLAIM = claimStatements(
  'runs',
  'run_id',
  `select "run_id" from "runs" where ("status" in (${inList(RUNNABLE)}) and ${ACTIVE_TERMS} and "wake_at" is null` +
    // Two branches, not `(wake_at is null or wake_at <= ?)`: each is a range of the index, so runs
    // sleeping on a later timer (a peer's answer, a delay) are never read.
    ` or "status" in (${inList(RUNNABLE)}) and ${ACTIVE_TERMS} and "wake_at" is not null and "wake_at" <= ?` +
    ` or "status" in (${inList(WAITING_STATUSES)}) and ${ACTIVE_TERMS} and "wake_at" is not null and "wake_at" <= ?)` +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?)' +
    ' order by "updated_at" limit ?',
);

/**
 * Timed runs of one status read for the next wake, earliest timer first. A run's claimable
 * moment is its timer or, if later, the end of its lease: past the first run whose lease does
 * not outlast its timer, no run can be earlier, so only the runs leased beyond their timers come
 * before it — as many as there are live leases. Reading at most this many keeps the query
 * bounded however many runs sleep or wait; with more leases than that, the worker wakes at its
 * poll interval at the latest.
 */
const WAKE_SCAN = 1000;

const timedOf = (status: string) =>
  `select "wake_at", "lease_expires_at" from "runs" where "status" = '${status}' and ${ACTIVE_TERMS}` +
  ` and "wake_at" is not null order by "wake_at" limit ${WAKE_SCAN}`;

/** Runs without a timer held by a lease (being executed): claimable when the lease ends. */
const HELD_UNTIMED =
  `select "wake_at", "lease_expires_at" from "runs" where "status" in (${inList(RUNNABLE)}) and ${ACTIVE_TERMS}` +
  ' and "wake_at" is null and "lease_expires_at" is not null';

/**
 * The earliest moment a claim could take a run: its timer due and any lease on it expired. Per
 * status, the runs_runnable index in timer order (see WAKE_SCAN); a waiting run without a
 * deadline is not the worker's until someone decides, and is not read.
 */
const nextWake = (later: string) =>
  statement(
    `select min(${later}) as "next" from (` +
      [...RUNNABLE, ...WAITING_STATUSES].map((s, i) => `select * from (${timedOf(s)}) as "t${i}"`).join(' union all ') +
      ` union all ${HELD_UNTIMED}) as "due"`,
  );
const LATER = 'coalesce("wake_at", 0), coalesce("lease_expires_at", 0)';
export const NEXT_WAKE = { sqlite: nextWake(`max(${LATER})`), postgres: nextWake(`greatest(${LATER})`) };

export const GET_RUN = statement('select * from "runs" where "run_id" = ?');
const RENEW_LEASE = statement('update "runs" set "lease_expires_at" = ? where "run_id" = ? and "lease_owner" = ?');
const RELEASE_LEASE = statement(
  'update "runs" set "lease_owner" = null, "lease_expires_at" = null where "run_id" = ? and "lease_owner" = ?',
);

// Only a run that sleeps (running, timer in the future, no live lease) is woken: anything else
// is already due, held by a worker (which reads the peer itself), or not waiting on a timer. Its
// timer comes to now if its last commit (the last read of the peer) is at least the spacing old,
// else to the spacing from now: wakes, however many, read the peer at most once per spacing, and
// once a run is due every further wake is a no-op. ISO timestamps of one format compare as text.
const DUE = 'case when "updated_at" <= ? then cast(? as bigint) else cast(? as bigint) end';
const WAKE = statement(
  `update "runs" set "wake_at" = ${DUE} where "run_id" = ? and "status" = 'running' and "wake_at" > ${DUE}` +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?)',
);

/**
 * A run's children that have not ended, exactly as the predicate of the partial index
 * runs_parent_active (migration 0012), so SQLite uses it. Parameter: the parent's run id.
 */
export const ACTIVE_CHILDREN = `"parent_run_id" = ? and "parent_run_id" is not null and ${ACTIVE_TERMS}`;
const CHILDREN = statement(
  `select "run_id", "parent_node_id", "workflow_id", "status" from "runs" where ${ACTIVE_CHILDREN} order by "created_at", "run_id"`,
);

// A child's end wakes its parent: the timer is brought forward AND the version moves, so a parent
// a worker is executing right now (it may have read the child still running) fails its commit
// and reads its children again, instead of sleeping past the end it did not see. A waiting parent
// is woken too: a forked run waits at a gate in one branch while a forEach sleeps in another.
const WAKE_PARENT = statement(
  `update "runs" set "wake_at" = ?, "version" = "version" + 1 where "run_id" = ?` +
    ` and "status" in ('running', 'waiting-approval', 'waiting-input')`,
);

/** Ids per `in (…)` list: well under SQLite's and PostgreSQL's parameter limits. */
const IDS_PER_QUERY = 500;

/** A child run that has not ended, as its parent's snapshot lists it. */
export interface ChildSummary {
  runId: string;
  nodeId: string;
  workflowId: string;
  status: RunStatus;
}

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

/** The cursor of the run list's page that follows `run` (GET /v1/runs `nextCursor`). */
export const runListCursor = (run: { createdAt: string; runId: string }): string =>
  encodeCursor([run.createdAt, run.runId]);

export interface RunPage {
  /** Without inputs, state and metadata: a list shows none of them. */
  runs: RunHead[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

// Written exactly as the partial index's predicate: SQLite uses a partial index only when the query
// repeats its WHERE term (literals, not parameters).
const WAITING_TERM: Expression<SqlBool> = sql<SqlBool>`${sql.ref('status')} in (${sql.join(
  WAITING_STATUSES.map((s) => sql.lit(s)),
)})`;

export class Runs extends Repo {
  #values?: RunValues;

  async get(runId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.exec<RunsTable>(GET_RUN, [runId]);
    return rows[0] && this.whole(runRows.fromRow(rows[0]));
  }

  /** A run as read, with its parts stored by reference read in (only a run that has some waits for them). */
  private whole(run: RunRecord): RunRecord | Promise<RunRecord> {
    if (!holdsRecorded(run)) return run;
    this.#values ??= new RunValues(this.db, this.dialect, this.now, this.direct);
    return this.#values.read(run);
  }

  private allWhole(runs: RunRecord[]): RunRecord[] | Promise<RunRecord[]> {
    return runs.some(holdsRecorded) ? Promise.all(runs.map((r) => this.whole(r))) : runs;
  }

  /**
   * A tenant's runs, newest first (created_at, then run_id), by keyset pagination (GET /v1/runs,
   * the console). Two indexes serve it (migration 0006): every run of a tenant, and a partial one
   * holding only the runs that wait on a person.
   */
  async list(tenantId: string, filter: RunListFilter): Promise<RunPage> {
    const after = filter.cursor === undefined ? undefined : decodeKeysetCursor(filter.cursor);
    if (filter.cursor !== undefined && after === undefined) {
      throw new RangeError('cursor is not one this server gave: pass the nextCursor of the previous page');
    }
    const page = await keysetPage(runListQuery(this.db, tenantId, filter), RUN_LIST_KEY, filter.limit, after);
    const runs = page.rows.map(runHeadOf);
    const last = runs.at(-1);
    return page.more && last ? { runs, nextCursor: runListCursor(last) } : { runs };
  }

  /** The runs with these ids that exist, in no particular order. */
  async getMany(runIds: readonly string[]): Promise<RunRecord[]> {
    const out: RunRecord[] = [];
    for (let i = 0; i < runIds.length; i += IDS_PER_QUERY) {
      const ids = runIds.slice(i, i + IDS_PER_QUERY);
      const rows = await this.db.selectFrom('runs').selectAll().where('run_id', 'in', ids).execute();
      // A child's artifact (its output) may be a part stored by reference: read in whole.
      out.push(...(await this.allWhole(rows.map(runRows.fromRow))));
    }
    return out;
  }

  /** A run's children that have not ended, oldest first (runs_parent_active). */
  async children(parentRunId: string): Promise<ChildSummary[]> {
    const rows = await this.all<Pick<RunsTable, 'run_id' | 'parent_node_id' | 'workflow_id' | 'status'>>(CHILDREN, [
      parentRunId,
    ]);
    return rows.map((r) => ({
      runId: r.run_id,
      nodeId: r.parent_node_id ?? '',
      workflowId: r.workflow_id,
      status: r.status as RunStatus,
    }));
  }

  /**
   * A child of `parentRunId` ended: bring the parent's timer forward and move its version (see
   * WAKE_PARENT). A single statement, outside any transaction; true if the parent was running or waiting.
   */
  async wakeParent(parentRunId: string): Promise<boolean> {
    return (await this.write(WAKE_PARENT, [this.now().getTime(), parentRunId])) === 1;
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Lease up to `limit` runs that want a worker now: runnable status and timer due, or a gate's
   * deadline passed; and no live lease. Atomic on both dialects (a single UPDATE; SKIP LOCKED on PostgreSQL).
   */
  async claim(owner: string, leaseMs: number, limit: number): Promise<RunRecord[]> {
    const now = this.now().getTime();
    const rows = await this.all<RunsTable>(CLAIM[this.dialect], [owner, now + leaseMs, now, now, now, limit]);
    return this.allWhole(rows.map(runRows.fromRow));
  }

  /** Extend a lease this owner still holds; false if it was lost. */
  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.write(RENEW_LEASE, [this.now().getTime() + leaseMs, runId, owner])) === 1;
  }

  async releaseLease(runId: string, owner: string): Promise<void> {
    await this.write(RELEASE_LEASE, [runId, owner]);
  }

  /**
   * Bring a sleeping run's timer forward (a peer said its task changed): to now, or to `spacingMs`
   * from now when the run committed less than `spacingMs` ago. A single statement, outside any
   * transaction; true if it moved the timer (false: not sleeping, leased, or already due by then).
   */
  async wake(runId: string, spacingMs: number): Promise<boolean> {
    const now = this.now().getTime();
    const due = [new Date(now - spacingMs).toISOString(), now, now + spacingMs];
    return (await this.write(WAKE, [...due, runId, ...due, now])) === 1;
  }

  /** Free every lease of `owner` (a drain), or every lease at all (`owner` absent); returns how many. */
  async releaseLeases(owner?: string): Promise<number> {
    const q = this.db.updateTable('runs').set({ lease_owner: null, lease_expires_at: null });
    const res = await (owner === undefined
      ? q.where('lease_owner', 'is not', null)
      : q.where('lease_owner', '=', owner)
    ).executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /**
   * When a worker should next look for work: the earliest moment a runnable run (or a gate's
   * deadline) becomes claimable — its timer is due AND any lease on it has expired (a run leased by someone else
   * is not claimable before its lease ends, so waking for its timer alone would busy-loop).
   */
  async nextWakeAt(): Promise<number | undefined> {
    const row = await this.first<{ next: number | string | null }>(NEXT_WAKE[this.dialect], []);
    return row?.next == null ? undefined : Number(row.next);
  }
}

/** The run list's order: newest first. */
export const RUN_LIST_KEY = ['created_at', 'run_id'] as const;

/**
 * A tenant's runs matching `filter`, unordered (GET /v1/runs). Only waiting statuses (the inbox):
 * the partial index runs_tenant_waiting, whose predicate it repeats; else runs_tenant_created.
 */
export function runListQuery(db: Kysely<Database>, tenantId: string, filter: Omit<RunListFilter, 'limit' | 'cursor'>) {
  // Never the inputs, state or metadata: a page of runs of a megabyte each read 100 MB for a few KB of summaries.
  let q = db.selectFrom('runs').select(RUN_HEAD_COLUMNS).where('tenant_id', '=', tenantId);
  const statuses = filter.statuses;
  if (statuses && statuses.length > 0) {
    if (statuses.every(isWaiting)) q = q.where(WAITING_TERM);
    // Statuses are checked against RUN_STATUSES by the caller; literals keep the plan independent of them.
    q = q.where(
      sql.ref('status'),
      'in',
      statuses.map((s) => sql.lit(s)),
    );
  }
  if (filter.workflowId !== undefined) q = q.where('workflow_id', '=', filter.workflowId);
  if (filter.text !== undefined) q = q.where(textMatch(filter.text));
  return q;
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
