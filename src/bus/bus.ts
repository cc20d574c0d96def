// The change bus: after-commit wake-ups. It carries no data a reader must trust — only "run X
// changed, its last event is now N" — so a missed or duplicated notice is harmless: readers
// always go back to the store (the event log) for the truth.
import type { RunStatus } from '../store/model.js';

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
