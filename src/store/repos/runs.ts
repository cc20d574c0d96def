// Run snapshots as read outside a transaction, and the worker's leases on them. Writes that
// change a run's content go through StoreTx (tx.ts); leases are single atomic statements.
import { sql } from 'kysely';
import type { RunsTable } from '../db.js';
import type { RunRecord, RunStatus } from '../model.js';
import { runRows } from '../rows.js';
import { claimStatements, statement } from '../statements.js';
import { Repo } from './repo.js';

/** Statuses a worker drives; any other status waits for something outside the worker. */
const RUNNABLE: RunStatus[] = ['pending', 'running', 'cancelling'];

/** Runnable, timer due, lease free or expired. */
const CLAIM = claimStatements(
  'runs',
  'run_id',
  `select "run_id" from "runs" where "status" in (${RUNNABLE.map((s) => `'${s}'`).join(', ')})` +
    ' and ("wake_at" is null or "wake_at" <= ?) and ("lease_expires_at" is null or "lease_expires_at" < ?)' +
    ' order by "updated_at" limit ?',
);
export const GET_RUN = statement('select * from "runs" where "run_id" = ?');
const RENEW_LEASE = statement('update "runs" set "lease_expires_at" = ? where "run_id" = ? and "lease_owner" = ?');
const RELEASE_LEASE = statement(
  'update "runs" set "lease_owner" = null, "lease_expires_at" = null where "run_id" = ? and "lease_owner" = ?',
);

export class Runs extends Repo {
  async get(runId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.db.executeQuery(GET_RUN.with<RunsTable>(this.dialect, [runId]));
    return rows[0] && runRows.fromRow(rows[0]);
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Lease up to `limit` runs that want a worker now: runnable status, timer due, and no live
   * lease. Atomic on both dialects (a single UPDATE; SKIP LOCKED on PostgreSQL).
   */
  async claim(owner: string, leaseMs: number, limit: number): Promise<RunRecord[]> {
    const now = this.now().getTime();
    const rows = await this.all<RunsTable>(CLAIM[this.dialect], [owner, now + leaseMs, now, now, limit]);
    return rows.map(runRows.fromRow);
  }

  /** Extend a lease this owner still holds; false if it was lost. */
  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    return (await this.write(RENEW_LEASE, [this.now().getTime() + leaseMs, runId, owner])) === 1;
  }

  async releaseLease(runId: string, owner: string): Promise<void> {
    await this.write(RELEASE_LEASE, [runId, owner]);
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
   * When a worker should next look for work: the earliest moment a runnable run becomes
   * claimable — its timer is due AND any lease on it has expired (a run leased by someone else
   * is not claimable before its lease ends, so waking for its timer alone would busy-loop).
   */
  async nextWakeAt(): Promise<number | undefined> {
    const later =
      this.dialect === 'postgres'
        ? sql<number>`greatest(coalesce(wake_at, 0), coalesce(lease_expires_at, 0))`
        : sql<number>`max(coalesce(wake_at, 0), coalesce(lease_expires_at, 0))`;
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.min(later).as('next'))
      .where('status', 'in', RUNNABLE)
      .where((eb) => eb.or([eb('wake_at', 'is not', null), eb('lease_expires_at', 'is not', null)]))
      .executeTakeFirst();
    return row?.next == null ? undefined : Number(row.next);
  }
}
