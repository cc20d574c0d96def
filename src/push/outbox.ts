// The push outbox: delivery rows written in the transaction of the transition that causes them,
// claimed by workers with a lease, delivered in order per (task, config), retried with backoff,
// dead-lettered after the last attempt. Rows are never deleted by delivery: operators see them.
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { Database, PushOutboxTable } from '../store/db.js';

export type DeliveryState = 'pending' | 'delivered' | 'dead' | 'cancelled';

export interface NewDelivery {
  taskId: string;
  configId: string;
  tenantId: string;
  /** The event sequence of the transition: the per-config delivery order. */
  seq: number;
  final: boolean;
  body: unknown;
}

/**
 * Rows per insert statement. One statement for all of a transition's deliveries once met SQLite's
 * bound on bound parameters (16 per row) and failed the transition; batches never do.
 */
export const ENQUEUE_BATCH = 100;

export async function enqueue(db: Kysely<Database>, deliveries: NewDelivery[], now = Date.now()): Promise<void> {
  for (let i = 0; i < deliveries.length; i += ENQUEUE_BATCH) {
    await insertDeliveries(db, deliveries.slice(i, i + ENQUEUE_BATCH), now);
  }
}

async function insertDeliveries(db: Kysely<Database>, deliveries: NewDelivery[], now: number): Promise<void> {
  const at = new Date(now).toISOString();
  await db
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
        body: JSON.stringify(d.body),
        attempts: 0,
        next_attempt_at: now,
        lease_owner: null,
        lease_expires_at: null,
        last_status: null,
        last_error: null,
        created_at: at,
        delivered_at: null,
      })),
    )
    .execute();
}

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
 * Lease due deliveries. Only the oldest undelivered row of each (task, config) is eligible, so
 * a config receives its task's transitions in order even across retries.
 */
export async function claimDue(
  db: Kysely<Database>,
  dialect: 'sqlite' | 'postgres',
  owner: string,
  leaseMs: number,
  limit: number,
  now = Date.now(),
): Promise<PushOutboxTable[]> {
  let candidates = db
    .selectFrom('push_outbox as o')
    .select('o.delivery_id')
    .where('o.state', '=', 'pending')
    .where('o.next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('o.lease_expires_at', 'is', null), eb('o.lease_expires_at', '<', now)]))
    .where(firstInLine)
    .orderBy('o.next_attempt_at')
    .limit(limit);
  if (dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  return db
    .updateTable('push_outbox')
    .set({ lease_owner: owner, lease_expires_at: now + leaseMs })
    .where('delivery_id', 'in', candidates)
    .returningAll()
    .execute();
}

export interface Outcome {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt?: number;
  lastStatus?: number;
  lastError?: string;
}

/** Record an attempt's outcome for a row this worker still leases. */
export async function settle(db: Kysely<Database>, deliveryId: string, owner: string, o: Outcome): Promise<boolean> {
  const res = await db
    .updateTable('push_outbox')
    .set({
      state: o.state,
      attempts: o.attempts,
      ...(o.nextAttemptAt !== undefined ? { next_attempt_at: o.nextAttemptAt } : {}),
      last_status: o.lastStatus ?? null,
      last_error: o.lastError ?? null,
      lease_owner: null,
      lease_expires_at: null,
      ...(o.state === 'delivered' ? { delivered_at: new Date().toISOString() } : {}),
    })
    .where('delivery_id', '=', deliveryId)
    .where('lease_owner', '=', owner)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** An operator's retry of a dead-lettered delivery: back to pending, attempts from zero. */
export async function retryDead(
  db: Kysely<Database>,
  tenantId: string,
  deliveryId: string,
  now = Date.now(),
): Promise<PushOutboxTable | undefined> {
  return db
    .updateTable('push_outbox')
    .set({ state: 'pending', attempts: 0, next_attempt_at: now, lease_owner: null, lease_expires_at: null })
    .where('delivery_id', '=', deliveryId)
    .where('tenant_id', '=', tenantId)
    .where('state', '=', 'dead')
    .returningAll()
    .executeTakeFirst();
}

export async function listDeliveries(
  db: Kysely<Database>,
  tenantId: string,
  filter: { taskId?: string; state?: string; limit?: number },
): Promise<PushOutboxTable[]> {
  let q = db.selectFrom('push_outbox').selectAll().where('tenant_id', '=', tenantId);
  if (filter.taskId) q = q.where('task_id', '=', filter.taskId);
  if (filter.state) q = q.where('state', '=', filter.state);
  return q
    .orderBy('created_at', 'desc')
    .orderBy('delivery_id', 'desc')
    .limit(filter.limit ?? 100)
    .execute();
}

export async function getDelivery(
  db: Kysely<Database>,
  tenantId: string,
  deliveryId: string,
): Promise<PushOutboxTable | undefined> {
  return db
    .selectFrom('push_outbox')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
}

/**
 * When the worker should look again: the earliest moment a pending delivery becomes claimable —
 * due, not leased (or its lease expired), and first in line for its (task, config). Rows behind
 * another delivery or held by a worker are not counted, so waiting on them never spins.
 */
export async function nextDueAt(db: Kysely<Database>, dialect: 'sqlite' | 'postgres'): Promise<number | undefined> {
  const later =
    dialect === 'postgres'
      ? sql<number>`greatest(o.next_attempt_at, coalesce(o.lease_expires_at, 0))`
      : sql<number>`max(o.next_attempt_at, coalesce(o.lease_expires_at, 0))`;
  const row = await db
    .selectFrom('push_outbox as o')
    .select((eb) => eb.fn.min(later).as('next'))
    .where('o.state', '=', 'pending')
    .where(firstInLine)
    .executeTakeFirst();
  return row?.next == null ? undefined : Number(row.next);
}

/** Age in ms of the oldest pending delivery (outbox lag), or 0. */
export async function oldestPendingAgeMs(db: Kysely<Database>, now = Date.now()): Promise<number> {
  const row = await db
    .selectFrom('push_outbox')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return row?.oldest ? Math.max(0, now - Date.parse(String(row.oldest))) : 0;
}

/** Whether a config still owes deliveries (its secrets are kept until it does not). */
export async function hasPending(db: Kysely<Database>, taskId: string, configId: string): Promise<boolean> {
  const row = await db
    .selectFrom('push_outbox')
    .select('delivery_id')
    .where('task_id', '=', taskId)
    .where('config_id', '=', configId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return row !== undefined;
}

/** Backoff from a schedule of ceilings in ms (growing), with jitter: half fixed, half random, so
 * retries of many deliveries that failed together spread out instead of arriving as one burst. */
export function backoffMs(schedule: number[], attempt: number, random = Math.random): number {
  const ceiling = schedule[Math.min(attempt - 1, schedule.length - 1)] ?? 1000;
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** `1s,5s,30s,2m,1h` → milliseconds. */
export function parseSchedule(raw: string): number[] {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return raw.split(',').map((part) => {
    const m = part.trim().match(/^(\d+(?:\.\d+)?)(ms|s|m|h)$/);
    if (!m) throw new Error(`invalid retry schedule entry '${part.trim()}' (use e.g. 1s,5s,30s,2m,1h)`);
    return Math.round(Number(m[1]) * (units[m[2] as string] as number));
  });
}

/** Hand back every pending delivery `owner` still leases (graceful drain): claimable at once. */
export async function releaseLeases(db: Kysely<Database>, owner: string): Promise<void> {
  await db
    .updateTable('push_outbox')
    .set({ lease_owner: null, lease_expires_at: null })
    .where('lease_owner', '=', owner)
    .where('state', '=', 'pending')
    .execute();
}
