// An operator's retry of a dead-lettered push delivery, recorded in the audit log with it.
import type { DeliveryRecord } from '../store/model.js';
import type { Store } from '../store/store.js';
import type { ConfigActor } from './configs.js';

/**
 * The delivery `deliveryId` of `tenantId`, pending again with its attempts reset, if it was dead;
 * undefined (and nothing written) for any other. The retry is `by`'s act (`delivery.retry`).
 */
export function retryDelivery(
  store: Store,
  tenantId: string,
  deliveryId: string,
  by: ConfigActor,
): Promise<DeliveryRecord | undefined> {
  return store.transaction(async (tx) => {
    const row = await tx.outbox.retryDead(tenantId, deliveryId);
    if (row) {
      tx.recordAudit({
        tenantId,
        principal: by.principalId,
        surface: by.surface ?? 'rest',
        act: 'delivery.retry',
        runId: row.taskId,
        values: { deliveryId, configId: row.configId, seq: row.seq, state: row.state },
      });
    }
    return row;
  });
}
