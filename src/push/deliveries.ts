// Push deliveries as operators see them (GET /v1/a2a/deliveries, POST …/{id}/retry): a tenant's
// outbox rows, and the retry of a dead-lettered one, which wakes the push worker.
import type { DeliveryRecord } from '../store/model.js';
import type { ConfigActor } from './configs.js';
import { retryDelivery } from './retry.js';
import type { Store } from '../store/store.js';

/** A retry's outcome: the delivery pending again, or why not (no such delivery, not dead). */
export type RetryOutcome = { retried: DeliveryRecord } | { missing: true } | { notDead: DeliveryRecord['state'] };

export class Deliveries {
  constructor(
    private readonly store: Store,
    private readonly kick: () => void = () => {},
  ) {}

  list(tenantId: string, filter: { taskId?: string; state?: string; limit?: number }): Promise<DeliveryRecord[]> {
    return this.store.outbox.list(tenantId, filter);
  }

  /** An operator's retry of a dead letter, recorded in the audit log as `by`'s act. */
  async retry(tenantId: string, deliveryId: string, by: ConfigActor): Promise<RetryOutcome> {
    const row = await retryDelivery(this.store, tenantId, deliveryId, by);
    if (row) {
      this.kick();
      return { retried: row };
    }
    const existing = await this.store.outbox.get(tenantId, deliveryId);
    return existing ? { notDead: existing.state } : { missing: true };
  }
}
