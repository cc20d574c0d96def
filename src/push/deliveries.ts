// Push deliveries as operators see them (GET /v1/a2a/deliveries, POST …/{id}/retry): a tenant's
// outbox rows, and the retry of a dead-lettered one, which wakes the push worker.
import type { DeliveryRecord } from '../store/model.js';
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

  async retry(tenantId: string, deliveryId: string): Promise<RetryOutcome> {
    const row = await this.store.outbox.retryDead(tenantId, deliveryId);
    if (row) {
      this.kick();
      return { retried: row };
    }
    const existing = await this.store.outbox.get(tenantId, deliveryId);
    return existing ? { notDead: existing.state } : { missing: true };
  }
}
