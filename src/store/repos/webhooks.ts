// Webhook subscriptions by tenant. Registering and deleting are one statement each (no
// transaction needed); delivery reads a tenant's subscriptions after each commit (src/webhooks/).
import type { WebhooksTable } from '../db.js';
import type { WebhookRecord } from '../model.js';
import { Repo } from './repo.js';

function toRecord(row: WebhooksTable): WebhookRecord {
  const rec: WebhookRecord = {
    webhookId: row.webhook_id,
    tenantId: row.tenant_id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    sealedSecret: row.secret,
    secretFingerprint: row.secret_fingerprint,
    createdAt: row.created_at,
  };
  if (row.tags !== null) rec.tags = JSON.parse(row.tags) as string[];
  return rec;
}

export class Webhooks extends Repo {
  async insert(rec: WebhookRecord): Promise<void> {
    await this.db
      .insertInto('webhooks')
      .values({
        webhook_id: rec.webhookId,
        tenant_id: rec.tenantId,
        url: rec.url,
        events: JSON.stringify(rec.events),
        tags: rec.tags ? JSON.stringify(rec.tags) : null,
        secret: rec.sealedSecret,
        secret_fingerprint: rec.secretFingerprint,
        created_at: rec.createdAt,
      })
      .execute();
  }

  /** True when the tenant had that subscription (another tenant's is never touched). */
  async delete(tenantId: string, webhookId: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('webhooks')
      .where('tenant_id', '=', tenantId)
      .where('webhook_id', '=', webhookId)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** One subscription, whatever its tenant (the worker signs with its secret). */
  async get(webhookId: string): Promise<WebhookRecord | undefined> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('webhook_id', '=', webhookId).executeTakeFirst();
    return row && toRecord(row);
  }

  /** Whether any tenant has a subscription (the commit step skips its read while none has). */
  async any(): Promise<boolean> {
    return (await this.db.selectFrom('webhooks').select('webhook_id').limit(1).executeTakeFirst()) !== undefined;
  }

  /** The tenant's subscriptions, oldest first. */
  async forTenant(tenantId: string): Promise<WebhookRecord[]> {
    const rows = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .orderBy('created_at')
      .orderBy('webhook_id')
      .execute();
    return rows.map(toRecord);
  }
}
