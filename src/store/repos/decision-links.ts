// One-time decision links (src/notify/links.ts): each bound to a run, an interrupt, a recipient
// and an expiry, found by the sha256 of its token — the token itself is never stored.
import type { DecisionLinksTable } from '../db.js';
import { Repo } from './repo.js';

export interface DecisionLinkRecord {
  tokenHash: string;
  tenantId: string;
  runId: string;
  interruptId: string;
  nodeId: string;
  recipient: string;
  expiresAt: number;
  usedAt?: string;
  createdAt: string;
}

function fromRow(r: DecisionLinksTable): DecisionLinkRecord {
  return {
    tokenHash: r.token_hash,
    tenantId: r.tenant_id,
    runId: r.run_id,
    interruptId: r.interrupt_id,
    nodeId: r.node_id,
    recipient: r.recipient,
    expiresAt: Number(r.expires_at),
    ...(r.used_at ? { usedAt: r.used_at } : {}),
    createdAt: r.created_at,
  };
}

export class DecisionLinks extends Repo {
  async insert(links: Omit<DecisionLinkRecord, 'usedAt' | 'createdAt'>[]): Promise<void> {
    if (links.length === 0) return;
    const at = this.now().toISOString();
    await this.db
      .insertInto('decision_links')
      .values(
        links.map((l) => ({
          token_hash: l.tokenHash,
          tenant_id: l.tenantId,
          run_id: l.runId,
          interrupt_id: l.interruptId,
          node_id: l.nodeId,
          recipient: l.recipient,
          expires_at: l.expiresAt,
          used_at: null,
          created_at: at,
        })),
      )
      .execute();
  }

  async get(tokenHash: string): Promise<DecisionLinkRecord | undefined> {
    const row = await this.db
      .selectFrom('decision_links')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return row && fromRow(row);
  }

  /** Mark the link used, once: false when it already was (another use committed first). */
  async use(tokenHash: string): Promise<boolean> {
    const res = await this.db
      .updateTable('decision_links')
      .set({ used_at: this.now().toISOString() })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }
}
