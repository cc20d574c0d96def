// The events a Task is built from (its artifacts and message history), per run, as this process
// committed them: the answer to a reply into a task, or a tasks/get that misses the TaskCache,
// then needs no read of the log.
//
// Exact, like the TaskCache (task-cache.ts): an entry starts from a run's first commit (its whole
// log is in that change) and grows only by the next commit, in sequence; a commit that does not
// continue it (one missed, say) drops it. It answers only for the `nextSeq` it holds, so a caller
// holding another snapshot of the run reads the store. Anything written by another process
// changes SQLite's data_version, which empties it; on PostgreSQL there is none.
import type { RunEvent, RunEventType } from '../store/model.js';
import type { CommitListener, RunChange, Store } from '../store/store.js';

/** The events a Task is built from: its artifacts and its message history. */
export const TASK_EVENT_TYPES: readonly RunEventType[] = ['artifact.created', 'a2a.message'];

/** Caps: total characters of payload held, and the largest log kept (a bigger one is dropped). */
export interface TaskLogLimits {
  maxChars: number;
  maxEntryChars: number;
}
const DEFAULT_LIMITS: TaskLogLimits = { maxChars: 16 * 1024 * 1024, maxEntryChars: 256 * 1024 };

interface Entry {
  /** The run's next sequence after the events held. */
  nextSeq: number;
  events: RunEvent[];
  chars: number;
}

export class TaskLogs {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;
  private version: number;

  constructor(
    private readonly dataVersion: () => number,
    private readonly limits: TaskLogLimits = DEFAULT_LIMITS,
  ) {
    this.version = dataVersion();
  }

  /** The logs for `store`, or undefined where it cannot keep them exact (PostgreSQL). */
  static forStore(store: Store): TaskLogs | undefined {
    return store.dataVersion ? new TaskLogs(store.dataVersion) : undefined;
  }

  /** Follows every commit and purge (a pipeline listener). */
  readonly listener: CommitListener = {
    name: 'task-logs',
    committed: (changes) => {
      for (const change of changes) this.apply(change);
    },
    purged: (runIds) => {
      for (const id of runIds) this.drop(id);
    },
  };

  /** The Task events of `runId` up to `nextSeq` (the snapshot the caller holds), if held. */
  get(runId: string, nextSeq: number): RunEvent[] | undefined {
    if (!this.current()) return undefined;
    const entry = this.entries.get(runId);
    if (entry?.nextSeq !== nextSeq) return undefined;
    this.entries.delete(runId); // most recently used last: eviction takes the oldest first
    this.entries.set(runId, entry);
    return entry.events;
  }

  /** Runs and characters held. */
  get size(): { runs: number; chars: number } {
    return { runs: this.entries.size, chars: this.chars };
  }

  private apply({ before, run, events }: RunChange): void {
    const entry = this.entries.get(run.runId);
    const first = before ? before.nextSeq : 0;
    // A new run's change holds its whole log; any other continues the entry only in sequence.
    if (before !== undefined && entry?.nextSeq !== first) {
      this.drop(run.runId);
      return;
    }
    // Its own events are those in its range: a transaction's later commits to a run may append to
    // the list its first change was given.
    const added = events.filter(
      (e) => e.sequence >= first && e.sequence < run.nextSeq && TASK_EVENT_TYPES.includes(e.type),
    );
    const chars = added.reduce((n, e) => n + JSON.stringify(e.payload).length, 0);
    if (entry === undefined || before === undefined) {
      this.drop(run.runId);
      this.keep(run.runId, { nextSeq: run.nextSeq, events: added, chars });
      return;
    }
    this.entries.delete(run.runId);
    this.chars -= entry.chars;
    this.keep(run.runId, { nextSeq: run.nextSeq, events: [...entry.events, ...added], chars: entry.chars + chars });
  }

  private keep(runId: string, entry: Entry): void {
    if (entry.chars > this.limits.maxEntryChars) return;
    this.entries.set(runId, entry);
    this.chars += entry.chars;
    for (const id of this.entries.keys()) {
      if (this.chars <= this.limits.maxChars) return;
      this.drop(id);
    }
  }

  private drop(runId: string): void {
    const entry = this.entries.get(runId);
    if (!entry) return;
    this.chars -= entry.chars;
    this.entries.delete(runId);
  }

  /** False (and everything forgotten) when another process wrote the database since last look. */
  private current(): boolean {
    const v = this.dataVersion();
    if (v === this.version) return true;
    this.version = v;
    this.entries.clear();
    this.chars = 0;
    return false;
  }
}
