// The change bus: after-commit wake-ups. It carries no data a reader must trust — only "run X
// changed, its last event is now N" — so a missed or duplicated notice is harmless: readers
// always go back to the store (the event log) for the truth.
import type { RunStatus } from '../store/model.js';
import type { CommitListener } from '../store/store.js';

export interface RunNotice {
  runId: string;
  tenantId: string;
  status: RunStatus;
  /** Sequence of the run's last committed event (-1 if none yet). */
  lastSeq: number;
  /** Committed by another instance (PostgreSQL bus); absent for this process's own commits. */
  remote?: boolean;
}

export interface ChangeBus {
  publish(notices: RunNotice[]): void;
  /** Notices for one run. Returns the unsubscribe function. */
  subscribeRun(runId: string, fn: (n: RunNotice) => void): () => void;
  /** Every notice (workers use this to wake up). */
  subscribeAll(fn: (n: RunNotice) => void): () => void;
  close(): Promise<void>;
}

/** The pipeline listener that announces each commit on the bus: one notice per run and
 * transaction, with its final state (readers go to the log for the events anyway). */
export function busPublisher(bus: ChangeBus): CommitListener {
  return {
    name: 'bus',
    committed(changes) {
      const last = new Map(changes.map((c) => [c.run.runId, c.run]));
      bus.publish(
        [...last.values()].map((r) => ({
          runId: r.runId,
          tenantId: r.tenantId,
          status: r.status,
          lastSeq: r.nextSeq - 1,
        })),
      );
    },
  };
}
