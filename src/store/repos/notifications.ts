// The notification outbox: one row per recipient and occasion of a gate (it opened, a reminder
// before its deadline, an escalation), written in the transaction that opened or escalated the
// gate, claimed by a worker with a lease, sent once after that commit, retried on the push
// schedule, dead-lettered. Rows are kept: operators see them (GET /v1/notifications).
import { v7 as uuidv7 } from 'uuid';
import type { NotificationsTable } from '../db.js';
import { claimStatements } from '../statements.js';
import { Repo } from './repo.js';

export type NotificationState = 'pending' | 'sent' | 'dead' | 'cancelled';

export interface NewNotification {
  tenantId: string;
  runId: string;
  interruptId: string;
  nodeId: string;
  reason: 'opened' | 'reminder' | 'escalated';
  channel: 'email' | 'webhook' | 'slack';
  target: string;
  recipient: string;
  /** The decision link's token sealed by the host key (absent: the message carries no link). */
  sealedToken?: string;
  linkExpiresAt?: number;
  /** When it is due (a reminder's moment); now by default. */
  dueAt?: number;
}

export interface NotificationRecord extends Required<Omit<NewNotification, 'sealedToken' | 'linkExpiresAt'>> {
  notificationId: string;
  sealedToken?: string;
  linkExpiresAt?: number;
  state: NotificationState;
  attempts: number;
  lastError?: string;
  createdAt: string;
  sentAt?: string;
}

/** What one attempt changed. */
export interface NotificationOutcome {
  state: NotificationState;
  attempts: number;
  nextAttemptAt?: number;
  lastError?: string;
}

const CLAIM_DUE = claimStatements(
  'notifications',
  'notification_id',
  'select "notification_id" from "notifications" where "state" = \'pending\' and "next_attempt_at" <= ?' +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?) order by "next_attempt_at" limit ?',
);

function fromRow(r: NotificationsTable): NotificationRecord {
  return {
    notificationId: r.notification_id,
    tenantId: r.tenant_id,
    runId: r.run_id,
    interruptId: r.interrupt_id,
    nodeId: r.node_id,
    reason: r.reason as NotificationRecord['reason'],
    channel: r.channel as NotificationRecord['channel'],
    target: r.target,
    recipient: r.recipient,
    ...(r.sealed_token ? { sealedToken: r.sealed_token } : {}),
    ...(r.link_expires_at != null ? { linkExpiresAt: Number(r.link_expires_at) } : {}),
    state: r.state as NotificationState,
    attempts: r.attempts,
    dueAt: Number(r.next_attempt_at),
    ...(r.last_error ? { lastError: r.last_error } : {}),
    createdAt: r.created_at,
    ...(r.sent_at ? { sentAt: r.sent_at } : {}),
  };
}

export class Notifications extends Repo {
  async enqueue(rows: NewNotification[]): Promise<void> {
    if (rows.length === 0) return;
    const at = this.now();
    await this.db
      .insertInto('notifications')
      .values(
        rows.map((n) => ({
          notification_id: `ntf_${uuidv7()}`,
          tenant_id: n.tenantId,
          run_id: n.runId,
          interrupt_id: n.interruptId,
          node_id: n.nodeId,
          reason: n.reason,
          channel: n.channel,
          target: n.target,
          recipient: n.recipient,
          sealed_token: n.sealedToken ?? null,
          link_expires_at: n.linkExpiresAt ?? null,
          state: 'pending',
          attempts: 0,
          next_attempt_at: n.dueAt ?? at.getTime(),
          lease_owner: null,
          lease_expires_at: null,
          last_error: null,
          created_at: at.toISOString(),
          sent_at: null,
        })),
      )
      .execute();
  }

  /** Lease due notifications (one atomic statement; SKIP LOCKED on PostgreSQL). */
  async claimDue(owner: string, leaseMs: number, limit: number): Promise<NotificationRecord[]> {
    const now = this.now().getTime();
    const rows = await this.all<NotificationsTable>(CLAIM_DUE[this.dialect], [owner, now + leaseMs, now, now, limit]);
    return rows.map(fromRow);
  }

  /**
   * Record an attempt's outcome for a row this worker still leases; false if it lost the lease.
   * A sent or cancelled row forgets its sealed token: only the link's hash is kept from then on.
   */
  async settle(notificationId: string, owner: string, o: NotificationOutcome): Promise<boolean> {
    const done = o.state === 'sent' || o.state === 'cancelled';
    const res = await this.db
      .updateTable('notifications')
      .set({
        state: o.state,
        attempts: o.attempts,
        ...(o.nextAttemptAt !== undefined ? { next_attempt_at: o.nextAttemptAt } : {}),
        last_error: o.lastError ?? null,
        lease_owner: null,
        lease_expires_at: null,
        ...(done ? { sealed_token: null } : {}),
        ...(o.state === 'sent' ? { sent_at: this.now().toISOString() } : {}),
      })
      .where('notification_id', '=', notificationId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** An operator's retry of a dead letter: pending again, attempts from zero. */
  async retryDead(tenantId: string, notificationId: string): Promise<NotificationRecord | undefined> {
    const row = await this.db
      .updateTable('notifications')
      .set({
        state: 'pending',
        attempts: 0,
        next_attempt_at: this.now().getTime(),
        lease_owner: null,
        lease_expires_at: null,
      })
      .where('notification_id', '=', notificationId)
      .where('tenant_id', '=', tenantId)
      .where('state', '=', 'dead')
      .returningAll()
      .executeTakeFirst();
    return row && fromRow(row);
  }

  async list(
    tenantId: string,
    filter: { runId?: string; state?: string; limit?: number },
  ): Promise<NotificationRecord[]> {
    let q = this.db.selectFrom('notifications').selectAll().where('tenant_id', '=', tenantId);
    if (filter.runId) q = q.where('run_id', '=', filter.runId);
    if (filter.state) q = q.where('state', '=', filter.state);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('notification_id', 'desc')
      .limit(filter.limit ?? 100)
      .execute();
    return rows.map(fromRow);
  }

  /** The earliest moment a pending notification becomes claimable, if any. */
  async nextDueAt(): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('notifications')
      .select((eb) => eb.fn.min('next_attempt_at').as('next'))
      .where('state', '=', 'pending')
      .where('lease_owner', 'is', null)
      .executeTakeFirst();
    return row?.next == null ? undefined : Number(row.next);
  }

  /** Hand back what `owner` leases (a drain), or every lease (`owner` absent: a restart on SQLite). */
  async releaseLeases(owner?: string): Promise<void> {
    let q = this.db.updateTable('notifications').set({ lease_owner: null, lease_expires_at: null });
    q = owner === undefined ? q.where('lease_owner', 'is not', null) : q.where('lease_owner', '=', owner);
    await q.where('state', '=', 'pending').execute();
  }
}
