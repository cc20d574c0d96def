// Push notifications for A2A tasks: the deliveries a transition causes are enqueued by a step of
// the transition pipeline, inside the transition's own transaction (nothing is announced that is
// not committed), with a content-free status update as body: the neutral event, encoded for the
// version of each config's registration when it is sent (renderPush). Delivery is the push
// worker's job; its listener wakes the worker only after a commit that enqueued something.
import type { CommitListener, RunChange, StoreTx, TransitionStep } from '../store/store.js';
import { isTerminalState, projectState, toStatusUpdate } from './projection.js';
import { contextIdOf } from './task-records.js';
import { CODECS } from './codec/index.js';
import type { StreamEvent, TaskState } from './model.js';
import type { DeliveryRecord } from '../store/model.js';
import type { RenderedPush } from '../push/worker.js';
import { SERVED_VERSIONS, type ProtocolVersion } from './versions.js';

/** RFC 0100: push at least on entering these states. */
export const PUSH_STATES: ReadonlySet<TaskState> = new Set(['input-required', 'completed', 'failed', 'canceled']);

/** The pipeline step that writes the outbox rows, and the listener that wakes the worker. */
export function pushOutbox(wake: () => void): { step: TransitionStep; listener: CommitListener } {
  // Changes whose transaction enqueued deliveries: only those need the worker woken. Waking it
  // costs a claim query (a write transaction on SQLite); later due rows are found by its timer.
  const enqueued = new WeakSet<RunChange>();
  return {
    step: {
      name: 'push-outbox',
      async run(tx, change) {
        if (await enqueueForTransition(tx, change)) enqueued.add(change);
      },
    },
    listener: {
      name: 'push-worker-wake',
      committed(changes) {
        if (changes.some((c) => enqueued.has(c))) wake();
      },
    },
  };
}

/** One outbox row per config of the task when the transition enters a push state. */
async function enqueueForTransition(tx: StoreTx, change: RunChange): Promise<boolean> {
  const next = projectState(change.run.status);
  if (!PUSH_STATES.has(next.state)) return false;
  if (change.before) {
    const prev = projectState(change.before.status);
    if (prev.state === next.state && prev.interruptKind === next.interruptKind) return false;
  }
  const configs = await tx.pushConfigs.list(change.run.runId);
  if (configs.length === 0) return false;
  const final = isTerminalState(next.state);
  // Content-free: the state and the interrupt kind, never inputs, outputs or error text.
  const update = toStatusUpdate(
    change.run.runId,
    contextIdOf(change.run),
    next.state,
    change.run.updatedAt,
    next.interruptKind ? { interruptKind: next.interruptKind } : {},
  );
  // The neutral event: each delivery is encoded for its config's version when it is sent.
  const serialized = JSON.stringify({ event: { kind: 'status-update', update }, final } satisfies NeutralPush);
  await tx.outbox.enqueue(
    configs.map((c) => ({
      taskId: c.taskId,
      configId: c.configId,
      tenantId: c.tenantId,
      seq: change.run.nextSeq - 1,
      final,
      body: serialized,
      protocolVersion: c.protocolVersion,
    })),
  );
  return true;
}

/** An outbox body: the event and whether it ends the task (0.3 `final`). */
interface NeutralPush {
  event: StreamEvent;
  final: boolean;
}

/**
 * What a delivery sends: the neutral event encoded for the version its config was registered in
 * (every stored body is neutral: migration 0014 converted the 0.3 bodies of older rows) — for 0.3
 * the status update as `application/json`, for 1.0 a StreamResponse as `application/a2a+json`.
 * The version goes out as A2A-Version.
 */
export function renderPush(row: DeliveryRecord): RenderedPush {
  const asked = row.protocolVersion;
  const version: ProtocolVersion = (SERVED_VERSIONS as readonly string[]).includes(asked ?? '')
    ? (asked as ProtocolVersion)
    : '0.3';
  const { event, final } = JSON.parse(row.body) as NeutralPush;
  return {
    body: JSON.stringify(CODECS[version].encodeStreamEvent(event, final)),
    contentType: version === '1.0' ? 'application/a2a+json' : 'application/json',
    version,
  };
}
