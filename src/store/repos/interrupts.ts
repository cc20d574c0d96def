// Interrupts: what an open gate asks, its votes and exchanges, and how it was resolved.
import { interruptRows } from '../rows.js';
import type { InterruptRecord } from '../model.js';
import { Repo } from './repo.js';

export class Interrupts extends Repo {
  /** The open interrupt of a run (of one node, when given). */
  async getOpen(runId: string, nodeId?: string): Promise<InterruptRecord | undefined> {
    let q = this.db.selectFrom('interrupts').selectAll().where('run_id', '=', runId).where('status', '=', 'open');
    if (nodeId !== undefined) q = q.where('node_id', '=', nodeId);
    const row = await q.executeTakeFirst();
    return row && interruptRows.fromRow(row);
  }

  /** The newest interrupt of a node, open or not. */
  async getLatest(runId: string, nodeId: string): Promise<InterruptRecord | undefined> {
    const row = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', '=', runId)
      .where('node_id', '=', nodeId)
      .orderBy('created_at', 'desc')
      .orderBy('interrupt_id', 'desc')
      .executeTakeFirst();
    return row && interruptRows.fromRow(row);
  }

  /** The open interrupts of these runs, by run id (one query). */
  async openOf(runIds: readonly string[]): Promise<Map<string, InterruptRecord>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', 'in', runIds)
      .where('status', '=', 'open')
      .execute();
    return new Map(rows.map((r) => [r.run_id, interruptRows.fromRow(r)]));
  }

  async listByRun(runId: string): Promise<InterruptRecord[]> {
    const rows = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('created_at')
      .execute();
    return rows.map(interruptRows.fromRow);
  }

  async insert(rec: InterruptRecord): Promise<void> {
    await this.db.insertInto('interrupts').values(interruptRows.toRow(rec)).execute();
  }

  /** Update an interrupt still in `expectStatus`; false if someone else changed it first. `data`
   * changes only when a deadline escalates the gate (new approvers, new expiry). */
  async update(rec: InterruptRecord, expectStatus: InterruptRecord['status']): Promise<boolean> {
    const row = interruptRows.toRow(rec);
    const res = await this.db
      .updateTable('interrupts')
      .set({
        status: row.status,
        data: row.data,
        votes: row.votes,
        exchanges: row.exchanges,
        resolution: row.resolution,
        resolved_by: row.resolved_by,
        resolved_at: row.resolved_at,
      })
      .where('interrupt_id', '=', rec.interruptId)
      .where('status', '=', expectStatus)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async cancelOpen(runId: string): Promise<void> {
    await this.db
      .updateTable('interrupts')
      .set({ status: 'cancelled', resolved_at: this.now().toISOString() })
      .where('run_id', '=', runId)
      .where('status', '=', 'open')
      .execute();
  }
}
