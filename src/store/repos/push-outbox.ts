// The push outbox: one row per (config, transition), written in the transition's transaction,
// claimed by workers with a lease, delivered in order per (task, config), retried, dead-lettered.
// Rows are never deleted by delivery: operators see them.
import { type ExpressionBuilder, sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Database, PushOutboxTable } from '../db.js';
import type { DeliveryRecord, DeliveryState } from '../model.js';
import { deliveryRows } from '../rows.js';
import { claimStatements, statement } from '../statements.js';
import { Repo } from './repo.js';

export interface NewDelivery {
  taskId: string;
  configId: string;
  tenantId: string;
  /** The event sequence of the transition: the per-config delivery order. */
  seq: number;
  final: boolean;
  /** The serialized body: the neutral event (and whether it ends the task), encoded at delivery. */
  body: string;
  protocolVersion?: string;
}

/** What one attempt changed. */
export interface Outcome {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt?: number;
  lastStatus?: number;
  lastError?: string;
}

const GET_DELIVERY = statement('select * from "push_outbox" where "delivery_id" = ? and "tenant_id" = ?');
const HAS_PENDING = statement(
  'select 1 from "push_outbox" where "task_id" = ? and "config_id" = ? and "state" = \'pending\' limit 1',
);
/** Due, unleased (or lease expired), and first in line for its (task, config). */
export const CLAIM_DUE = claimStatements(
  'push_outbox',
  'delivery_id',
  'select "o"."delivery_id" from "push_outbox" as "o" where "o"."state" = \'pending\'' +
    ' and "o"."next_attempt_at" <= ? and ("o"."lease_expires_at" is null or "o"."lease_expires_at" < ?)' +
    ' and not exists (select 1 from "push_outbox" as "p" where "p"."task_id" = "o"."task_id"' +
    ' and "p"."config_id" = "o"."config_id" and "p"."seq" < "o"."seq" and "p"."state" = \'pending\')' +
    ' order by "o"."next_attempt_at" limit ?',
);

/** Row `o` has no earlier pending delivery of the same (task, config): it is next in line. */
const firstInLine = ({ not, exists, selectFrom }: ExpressionBuilder<Database & { o: PushOutboxTable }, 'o'>) =>
  not(
    exists(
      selectFrom('push_outbox as p')
        .select(sql`1`.as('one'))
        .whereRef('p.task_id', '=', 'o.task_id')
        .whereRef('p.config_id', '=', 'o.config_id')
        .whereRef('p.seq', '<', 'o.seq')
        .where('p.state', '=', 'pending'),
    ),
  );

/**
 * Rows per insert statement. One statement for all of a transition's deliveries once met SQLite's
 * bound on bound parameters (16 per row) and failed the transition; batches never do.
 */
export const ENQUEUE_BATCH = 100;

export class PushOutbox extends Repo {
  async enqueue(deliveries: NewDelivery[]): Promise<void> {
    for (let i = 0; i < deliveries.length; i += ENQUEUE_BATCH) {
      await this.insertBatch(deliveries.slice(i, i + ENQUEUE_BATCH));
    }
  }

  private async insertBatch(deliveries: NewDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    const at = this.now();
    const insert = this.db
      .insertInto('push_outbox')
      .values(
        deliveries.map((d) => ({
          delivery_id: `dlv_${uuidv7()}`,
          task_id: d.taskId,
          config_id: d.configId,
          tenant_id: d.tenantId,
          seq: d.seq,
          state: 'pending',
          final: d.final ? 1 : 0,
          body: d.body,
          attempts: 0,
          next_attempt_at: at.getTime(),
          lease_owner: null,
          lease_expires_at: null,
          last_status: null,
          last_error: null,
          created_at: at.toISOString(),
          delivered_at: null,
          protocol_version: d.protocolVersion ?? null,
        })),
      )
      .compile();
    await this.sendAhead(insert);
  }

  /**
   * Lease due deliveries. Only the oldest undelivered row of each (task, config) is eligible, so
   * a config receives its task's transitions in order even across retries.
   */
  async claimDue(owner: string, leaseMs: number, limit: number): Promise<DeliveryRecord[]> {
    const now = this.now().getTime();
    const rows = await this.all<PushOutboxTable>(CLAIM_DUE[this.dialect], [owner, now + leaseMs, now, now, limit]);
    return rows.map(deliveryRows.fromRow);
  }

  /** Record an attempt's outcome for a row this worker still leases; false if it lost the lease. */
  async settle(deliveryId: string, owner: string, o: Outcome): Promise<boolean> {
    const res = await this.db
      .updateTable('push_outbox')
      .set({
        state: o.state,
        attempts: o.attempts,
        ...(o.nextAttemptAt !== undefined ? { next_attempt_at: o.nextAttemptAt } : {}),
        last_status: o.lastStatus ?? null,
        last_error: o.lastError ?? null,
        lease_owner: null,
        lease_expires_at: null,
        ...(o.state === 'delivered' ? { delivered_at: this.now().toISOString() } : {}),
      })
      .where('delivery_id', '=', deliveryId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** An operator's retry of a dead-lettered delivery: back to pending, attempts from zero. */
  async retryDead(tenantId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    const row = await this.db
      .updateTable('push_outbox')
      .set({
        state: 'pending',
        attempts: 0,
        next_attempt_at: this.now().getTime(),
        lease_owner: null,
        lease_expires_at: null,
      })
      .where('delivery_id', '=', deliveryId)
      .where('tenant_id', '=', tenantId)
      .where('state', '=', 'dead')
      .returningAll()
      .executeTakeFirst();
    return row && deliveryRows.fromRow(row);
  }

  /** The pending deliveries of a config are cancelled (the config was deleted or replaced). */
  async cancelPending(taskId: string, configId: string): Promise<void> {
    await this.db
      .updateTable('push_outbox')
      .set({ state: 'cancelled', lease_owner: null, lease_expires_at: null })
      .where('task_id', '=', taskId)
      .where('config_id', '=', configId)
      .where('state', '=', 'pending')
      .execute();
  }

  async list(tenantId: string, filter: { taskId?: string; state?: string; limit?: number }): Promise<DeliveryRecord[]> {
    let q = this.db.selectFrom('push_outbox').selectAll().where('tenant_id', '=', tenantId);
    if (filter.taskId) q = q.where('task_id', '=', filter.taskId);
    if (filter.state) q = q.where('state', '=', filter.state);
    const rows = await q
      .orderBy('created_at', 'desc')
      .orderBy('delivery_id', 'desc')
      .limit(filter.limit ?? 100)
      .execute();
    return rows.map(deliveryRows.fromRow);
  }

  async get(tenantId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    const row = await this.first<PushOutboxTable>(GET_DELIVERY, [deliveryId, tenantId]);
    return row && deliveryRows.fromRow(row);
  }

  /**
   * When a worker should look again: the earliest moment a pending delivery becomes claimable —
   * due, not leased (or its lease expired), and first in line for its (task, config). Rows behind
   * another delivery or held by a worker are not counted, so waiting on them never spins.
   */
  async nextDueAt(): Promise<number | undefined> {
    const later =
      this.dialect === 'postgres'
        ? sql<number>`greatest(o.next_attempt_at, coalesce(o.lease_expires_at, 0))`
        : sql<number>`max(o.next_attempt_at, coalesce(o.lease_expires_at, 0))`;
    const row = await this.db
      .selectFrom('push_outbox as o')
      .select((eb) => eb.fn.min(later).as('next'))
      .where('o.state', '=', 'pending')
      .where(firstInLine)
      .executeTakeFirst();
    return row?.next == null ? undefined : Number(row.next);
  }

  /** Age in ms of the oldest pending delivery (the outbox lag), or 0. */
  async oldestPendingAgeMs(): Promise<number> {
    const row = await this.db
      .selectFrom('push_outbox')
      .select((eb) => eb.fn.min('created_at').as('oldest'))
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return row?.oldest ? Math.max(0, this.now().getTime() - Date.parse(String(row.oldest))) : 0;
  }

  /** Whether a config still owes deliveries (its secrets are kept until it does not). */
  async hasPending(taskId: string, configId: string): Promise<boolean> {
    return (await this.first(HAS_PENDING, [taskId, configId])) !== undefined;
  }

  /** Hand back the pending deliveries `owner` leases (a drain), or every lease (`owner` absent). */
  async releaseLeases(owner?: string): Promise<void> {
    let q = this.db.updateTable('push_outbox').set({ lease_owner: null, lease_expires_at: null });
    q = owner === undefined ? q.where('lease_owner', 'is not', null) : q.where('lease_owner', '=', owner);
    await q.where('state', '=', 'pending').execute();
  }
}
