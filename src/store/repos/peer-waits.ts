// A run's waits on other agents' tasks (the a2a.invoke node): the push callback finds its run by
// an opaque wait id and checks a token hash, and a cancel of the run finds the peer tasks to
// cancel. The token itself is never stored, only its sha256.
import { randomBytes } from 'node:crypto';
import type { PeerWaitsTable } from '../db.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

const FOR_CALL = statement('select * from "peer_waits" where "run_id" = ? and "node_id" = ? and "ordinal" = ?');

export type PeerWaitState = 'waiting' | 'cancel' | 'done';

export interface PeerWaitRecord {
  waitId: string;
  runId: string;
  nodeId: string;
  ordinal: number;
  /** How to reach the peer again: a registry name or a URL (never a credential). */
  target: { agent: string } | { url: string };
  peerTaskId?: string;
  tokenHash?: string;
  state: PeerWaitState;
  attempts: number;
  nextAttemptAt: number;
  createdAt: string;
}

export interface PeerWaitInput {
  runId: string;
  nodeId: string;
  ordinal: number;
  target: PeerWaitRecord['target'];
  peerTaskId?: string;
  tokenHash?: string;
}

const fromRow = (r: PeerWaitsTable): PeerWaitRecord => ({
  waitId: r.wait_id,
  runId: r.run_id,
  nodeId: r.node_id,
  ordinal: Number(r.ordinal),
  target: JSON.parse(r.target) as PeerWaitRecord['target'],
  ...(r.peer_task_id !== null ? { peerTaskId: r.peer_task_id } : {}),
  ...(r.token_hash !== null ? { tokenHash: r.token_hash } : {}),
  state: r.state as PeerWaitState,
  attempts: Number(r.attempts),
  nextAttemptAt: Number(r.next_attempt_at),
  createdAt: r.created_at,
});

export class PeerWaits extends Repo {
  /**
   * The wait of one execution of a node, made or updated: a re-executed call (after a crash)
   * keeps its wait id, so a push registered before the crash still finds the run.
   */
  async upsert(w: PeerWaitInput): Promise<PeerWaitRecord> {
    const now = this.now();
    await this.db
      .insertInto('peer_waits')
      .values({
        wait_id: `pw_${randomBytes(16).toString('base64url')}`,
        run_id: w.runId,
        node_id: w.nodeId,
        ordinal: w.ordinal,
        target: JSON.stringify(w.target),
        peer_task_id: w.peerTaskId ?? null,
        token_hash: w.tokenHash ?? null,
        state: 'waiting',
        attempts: 0,
        next_attempt_at: now.getTime(),
        created_at: now.toISOString(),
      })
      .onConflict((oc) =>
        oc.columns(['run_id', 'node_id', 'ordinal']).doUpdateSet({
          target: JSON.stringify(w.target),
          ...(w.peerTaskId !== undefined ? { peer_task_id: w.peerTaskId } : {}),
          ...(w.tokenHash !== undefined ? { token_hash: w.tokenHash } : {}),
        }),
      )
      .execute();
    return (await this.forCall(w.runId, w.nodeId, w.ordinal)) as PeerWaitRecord;
  }

  async get(waitId: string): Promise<PeerWaitRecord | undefined> {
    const row = await this.db.selectFrom('peer_waits').selectAll().where('wait_id', '=', waitId).executeTakeFirst();
    return row && fromRow(row);
  }

  async forCall(runId: string, nodeId: string, ordinal: number): Promise<PeerWaitRecord | undefined> {
    const row = await this.first<PeerWaitsTable>(FOR_CALL, [runId, nodeId, ordinal]);
    return row && fromRow(row);
  }

  async forRun(runId: string): Promise<PeerWaitRecord[]> {
    const rows = await this.db.selectFrom('peer_waits').selectAll().where('run_id', '=', runId).execute();
    return rows.map(fromRow);
  }

  /**
   * The run is cancelled (or gave up), or one of its branches was withdrawn (`nodeId`): its open
   * waits now want a tasks/cancel — those without a peer task too, whose send may have made one
   * before its answer was lost (src/peers/cancels.ts).
   */
  async requestCancel(runId: string, nodeId?: string): Promise<number> {
    let q = this.db
      .updateTable('peer_waits')
      .set({ state: 'cancel', next_attempt_at: this.now().getTime() })
      .where('run_id', '=', runId)
      .where('state', '=', 'waiting');
    if (nodeId !== undefined) q = q.where('node_id', '=', nodeId);
    const res = await q.executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /** Waits whose peer task is to be cancelled now, oldest first. */
  async dueCancels(limit: number): Promise<PeerWaitRecord[]> {
    const rows = await this.db
      .selectFrom('peer_waits')
      .selectAll()
      .where('state', '=', 'cancel')
      .where('next_attempt_at', '<=', this.now().getTime())
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute();
    return rows.map(fromRow);
  }

  /** Try this wait's cancel again at `at` (epoch ms). */
  async retryCancel(waitId: string, at: number): Promise<void> {
    await this.db
      .updateTable('peer_waits')
      .set((eb) => ({ next_attempt_at: at, attempts: eb('attempts', '+', 1) }))
      .where('wait_id', '=', waitId)
      .where('state', '=', 'cancel')
      .execute();
  }

  /** Nothing more to do for this wait (the peer task ended, or its cancel was acknowledged). */
  async finish(waitId: string): Promise<void> {
    await this.db.updateTable('peer_waits').set({ state: 'done' }).where('wait_id', '=', waitId).execute();
  }

  /** When the cancel pass next has work (epoch ms), if ever. */
  async nextCancelAt(): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('peer_waits')
      .select((eb) => eb.fn.min('next_attempt_at').as('next'))
      .where('state', '=', 'cancel')
      .executeTakeFirst();
    return row?.next == null ? undefined : Number(row.next);
  }
}
