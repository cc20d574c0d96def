// Push notifications for A2A tasks: the outbox rows a transition causes are written by a
// transition hook inside the transition's own transaction (DESIGN.md, "the one rule"), with a
// content-free TaskStatusUpdateEvent as body. Delivery is the push worker's job.
import { listConfigs } from '../push/configs.js';
import { enqueue } from '../push/outbox.js';
import type { RunChange, Store, StoreTx } from '../store/store.js';
import { isTerminalState, projectState, toStatusUpdate } from './projection.js';
import type { StoredTaskState } from './types.js';

/** RFC 0100 §4: push at least on entering these states. */
export const PUSH_STATES: ReadonlySet<StoredTaskState> = new Set(['input-required', 'completed', 'failed', 'canceled']);

/** Changes whose transaction enqueued deliveries: only those need the worker woken. */
const enqueued = new WeakSet<RunChange>();

export function registerPushOutbox(store: Store, wake: () => void): void {
  store.addTransitionHook(enqueueForTransition);
  store.addPurgeHook(async (trx, runIds) => {
    await trx.deleteFrom('push_outbox').where('task_id', 'in', runIds).execute();
    const secrets = await trx
      .selectFrom('push_configs')
      .select(['token_secret', 'credentials_secret'])
      .where('task_id', 'in', runIds)
      .execute();
    const ids = secrets
      .flatMap((s) => [s.token_secret, s.credentials_secret])
      .filter((x): x is string => typeof x === 'string');
    if (ids.length > 0) await trx.deleteFrom('secrets').where('secret_id', 'in', ids).execute();
    await trx.deleteFrom('push_configs').where('task_id', 'in', runIds).execute();
  });
  // Waking the worker costs it a claim query (a write transaction on SQLite): only when there is
  // something to claim. Deliveries due later are found by the worker's own timer.
  store.onCommit((changes) => {
    if (changes.some((c) => enqueued.has(c))) wake();
  });
}

async function enqueueForTransition(tx: StoreTx, change: RunChange): Promise<void> {
  const next = projectState(change.run.status);
  if (!PUSH_STATES.has(next.state)) return;
  if (change.before) {
    const prev = projectState(change.before.status);
    if (prev.state === next.state && prev.interruptKind === next.interruptKind) return;
  }
  const configs = await listConfigs(tx.db, change.run.runId, tx.dialect);
  if (configs.length === 0) return;
  const task = await tx.db
    .selectFrom('a2a_tasks')
    .select('context_id')
    .where('task_id', '=', change.run.runId)
    .executeTakeFirst();
  const final = isTerminalState(next.state);
  // Content-free: the state and the interrupt kind, never inputs, outputs or error text.
  const body = toStatusUpdate(change.run.runId, task?.context_id ?? '', next.state, change.run.updatedAt, {
    final,
    ...(next.interruptKind ? { interruptKind: next.interruptKind } : {}),
  });
  await enqueue(
    tx.db,
    configs.map((c) => ({
      taskId: c.task_id,
      configId: c.config_id,
      tenantId: c.tenant_id,
      seq: change.run.nextSeq - 1,
      final,
      body,
    })),
  );
  enqueued.add(change);
}
