// The webhook outbox: one row per (subscription, run event) written in the run's transaction, then
// claimed with a lease, sent and settled by the webhook worker (src/webhooks/webhooks.ts).
import type { WebhookDeliveriesTable } from '../db.js';
import { claimStatements } from '../statements.js';
import { Repo } from './repo.js';

export type WebhookDelivery = WebhookDeliveriesTable;

/** What an attempt leaves: delivered, pending again at `nextAttemptAt`, or dead. */
export interface WebhookOutcome {
  state: 'delivered' | 'pending' | 'dead';
  attempts: number;
  nextAttemptAt?: number;
  lastStatus?: number;
  lastError?: string;
}

const CLAIM_DUE = claimStatements(
  'webhook_deliveries',
  'delivery_id',
  'select "delivery_id" from "webhook_deliveries" where "state" = \'pending\' and "next_attempt_at" <= ?' +
    ' and ("lease_expires_at" is null or "lease_expires_at" < ?) order by "next_attempt_at" limit ?',
);

export class WebhookDeliveries extends Repo {
  async enqueue(rows: WebhookDeliveriesTable[]): Promise<void> {
    if (rows.length > 0) await this.db.insertInto('webhook_deliveries').values(rows).execute();
  }

  /** Lease up to `limit` due deliveries to `owner` for `leaseMs`. */
  async claimDue(owner: string, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const now = this.now().getTime();
    return this.all<WebhookDeliveriesTable>(CLAIM_DUE[this.dialect], [owner, now + leaseMs, now, now, limit]);
  }

  /** Record an attempt for a row `owner` still leases; false if it lost the lease. */
  async settle(deliveryId: string, owner: string, o: WebhookOutcome): Promise<boolean> {
    const res = await this.db
      .updateTable('webhook_deliveries')
      .set({
        state: o.state,
        attempts: o.attempts,
        ...(o.nextAttemptAt !== undefined ? { next_attempt_at: o.nextAttemptAt } : {}),
        last_status: o.lastStatus ?? null,
        last_error: o.lastError ?? null,
        lease_owner: null,
        lease_expires_at: null,
      })
      .where('delivery_id', '=', deliveryId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Hand back the leases `owner` holds (a draining instance). */
  async releaseLeases(owner: string): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('lease_owner', '=', owner)
      .execute();
  }
}
