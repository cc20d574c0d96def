// Idempotency records: (tenant, scope, key) → the response an earlier request produced.
import { type SqlBool, sql } from 'kysely';
import type { IdempotencyTable } from '../db.js';
import type { IdempotencyRecord } from '../model.js';
import { statement } from '../statements.js';
import { nextTurn, Repo } from './repo.js';

const GET = statement('select * from "idempotency" where "tenant_id" = ? and "scope" = ? and "key" = ?');

export class Idempotency extends Repo {
  async get(tenantId: string, scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.first<IdempotencyTable>(GET, [tenantId, scope, key]);
    if (!row) return undefined;
    return {
      tenantId: row.tenant_id,
      scope: row.scope,
      key: row.key,
      bodyHash: row.body_hash,
      statusCode: row.status_code,
      response: JSON.parse(row.response),
      createdAt: row.created_at,
    };
  }

  /** Insert a record; the primary key makes a concurrent duplicate fail its transaction. */
  async put(rec: Omit<IdempotencyRecord, 'createdAt'>): Promise<void> {
    const insert = this.db
      .insertInto('idempotency')
      .values({
        tenant_id: rec.tenantId,
        scope: rec.scope,
        key: rec.key,
        body_hash: rec.bodyHash,
        status_code: rec.statusCode,
        response: JSON.stringify(rec.response),
        created_at: this.now().toISOString(),
      })
      .compile();
    await this.sendAhead(insert);
  }

  /**
   * Delete the records created before `cutoff`, `batch` at a time (idempotency_created): each
   * DELETE is short, so on SQLite a writer waits for one batch at most, never for the whole purge.
   */
  async purgeBefore(cutoff: Date, batch = 500): Promise<number> {
    const iso = cutoff.toISOString();
    let total = 0;
    for (;;) {
      const res = await this.db
        .deleteFrom('idempotency')
        .where(
          sql<SqlBool>`("tenant_id", "scope", "key") in (${this.db
            .selectFrom('idempotency')
            .select(['tenant_id', 'scope', 'key'])
            .where('created_at', '<', iso)
            .limit(batch)})`,
        )
        .executeTakeFirst();
      const n = Number(res.numDeletedRows);
      total += n;
      if (n < batch) return total;
      await nextTurn(); // the transactions asked for meanwhile go first (Store.purgeTerminalBefore)
    }
  }
}
