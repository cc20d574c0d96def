// Run snapshots as read outside a transaction, and the worker's leases on them. Writes that
// change a run's content go through StoreTx (tx.ts); leases are single atomic statements.
import { type Expression, type SqlBool, sql } from 'kysely';
import type { RunsTable } from '../db.js';
import { decodeCursor, encodeCursor, keysetPage } from '../cursor.js';
import { isWaiting, type RunRecord, type RunStatus, TERMINAL_STATUSES, WAITING_STATUSES } from '../model.js';
import { runRows } from '../rows.js';
import { claimStatements, statement } from '../statements.js';
import { Repo } from './repo.js';

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

/** Runnable with its timer due, or waiting on a person past the gate's deadline (a timer too);
 * and the lease free or expired. */
export const CLAIM = claimStatements(
  'runs',
  'run_id',
  `select "run_id" from "runs" where ("status" in (${inList(RUNNABLE)}) and ${ACTIVE_TERMS}` +
    ` and ("wake_at" is null or "wake_at" <= ?)` +
    ` or "status" in (${inList(WAITING_STATUSES)}) and ${ACTIVE_TERMS} and "wake_at" <= ?)` +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?)' +
    ' order by "updated_at" limit ?',
);

/** The earliest moment a claim could take a run: its timer due and any lease on it expired. */
const nextWake = (later: string) =>
  statement(
    `select min(${later}) as "next" from "runs" where ("status" in (${inList(RUNNABLE)}) and ${ACTIVE_TERMS}` +
      ' and ("wake_at" is not null or "lease_expires_at" is not null)' +
      // A gate's deadline; a waiting run without one is not the worker's until someone decides.
      ` or "status" in (${inList(WAITING_STATUSES)}) and ${ACTIVE_TERMS} and "wake_at" is not null)`,
  );
const LATER = 'coalesce("wake_at", 0), coalesce("lease_expires_at", 0)';
export const NEXT_WAKE = { sqlite: nextWake(`max(${LATER})`), postgres: nextWake(`greatest(${LATER})`) };

export const GET_RUN = statement('select * from "runs" where "run_id" = ?');
const RENEW_LEASE = statement('update "runs" set "lease_expires_at" = ? where "run_id" = ? and "lease_owner" = ?');
const RELEASE_LEASE = statement(
  'update "runs" set "lease_owner" = null, "lease_expires_at" = null where "run_id" = ? and "lease_owner" = ?',
);

// Only a run that sleeps (running, timer in the future, no live lease) is woken: anything else
// is already due, held by a worker (which reads the peer itself), or not waiting on a timer.
const WAKE = statement(
  `update "runs" set "wake_at" = ? where "run_id" = ? and "status" = 'running' and "wake_at" > ?` +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?)',
);

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

export interface RunPage {
  runs: RunRecord[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
}

// Written exactly as the partial index's predicate: SQLite uses a partial index only when the query
// repeats its WHERE term (literals, not parameters).
const WAITING_TERM: Expression<SqlBool> = sql<SqlBool>`${sql.ref('status')} in (${sql.join(
  WAITING_STATUSES.map((s) => sql.lit(s)),
)})`;

export class Runs extends Repo {
  async get(runId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.exec<RunsTable>(GET_RUN, [runId]);
    return rows[0] && runRows.fromRow(rows[0]);
  }

  /**
   * A tenant's runs, newest first (created_at, then run_id), by keyset pagination (GET /v1/runs,
   * the console). Two indexes serve it (migration 0006): every run of a tenant, and a partial one
   * holding only the runs that wait on a person.
   */
  async list(tenantId: string, filter: RunListFilter): Promise<RunPage> {
    let q = this.db.selectFrom('runs').selectAll().where('tenant_id', '=', tenantId);
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
    const after = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor, 2);
    if (filter.cursor !== undefined && after === undefined) {
      throw new RangeError('cursor is not one this server gave: pass the nextCursor of the previous page');
    }
    const page = await keysetPage(q, ['created_at', 'run_id'], filter.limit, after as [string, string] | undefined);
    const runs = page.rows.map(runRows.fromRow);
    const last = runs.at(-1);
    return page.more && last ? { runs, nextCursor: encodeCursor([last.createdAt, last.runId]) } : { runs };
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
    return rows.map(runRows.fromRow);
  }

  /** Extend a lease this owner still holds; false if it was lost. */
  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.write(RENEW_LEASE, [this.now().getTime() + leaseMs, runId, owner])) === 1;
  }

  async releaseLease(runId: string, owner: string): Promise<void> {
    await this.write(RELEASE_LEASE, [runId, owner]);
  }

  /**
   * Bring a sleeping run's timer forward to now (a peer said its task changed): the next claim
   * pass takes it. A single statement, outside any transaction; true if the run was sleeping.
   */
  async wake(runId: string): Promise<boolean> {
    const now = this.now().getTime();
    return (await this.write(WAKE, [now, runId, now, now])) === 1;
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
