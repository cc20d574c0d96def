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
import { type CharLimits, DEFAULT_CHAR_LIMITS, ExactLru } from './exact-lru.js';

/** The events a Task is built from: its artifacts and its message history. */
export const TASK_EVENT_TYPES: readonly RunEventType[] = ['artifact.created', 'a2a.message'];

interface Entry {
  /** The run's next sequence after the events held. */
  nextSeq: number;
  events: RunEvent[];
  /** Characters of the events' payloads as JSON (what the caps count). */
  chars: number;
}

export class TaskLogs {
  private readonly entries: ExactLru<Entry>;

  constructor(
    dataVersion: () => number,
    private readonly limits: CharLimits = DEFAULT_CHAR_LIMITS,
  ) {
    this.entries = new ExactLru<Entry>(dataVersion, limits.maxChars);
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
      for (const id of runIds) this.entries.drop(id);
    },
  };

  /** The Task events of `runId` up to `nextSeq` (the snapshot the caller holds), if held. */
  get(runId: string, nextSeq: number): RunEvent[] | undefined {
    if (!this.entries.current() || this.entries.peek(runId)?.nextSeq !== nextSeq) return undefined;
    return this.entries.use(runId)?.events;
  }

  /** Runs and characters held. */
  get size(): { runs: number; chars: number } {
    const { entries, chars } = this.entries.size;
    return { runs: entries, chars };
  }

  private apply({ before, run, events }: RunChange): void {
    // A new run's change holds its whole log; any other continues the entry only in sequence.
    const first = before ? before.nextSeq : 0;
    const prior = before ? this.entries.peek(run.runId) : undefined;
    if (before && prior?.nextSeq !== first) {
      this.entries.drop(run.runId);
      return;
    }
    // Its own events are those in its range: a transaction's later commits to a run may append to
    // the list its first change was given.
    const added = events.filter(
      (e) => e.sequence >= first && e.sequence < run.nextSeq && TASK_EVENT_TYPES.includes(e.type),
    );
    const chars = (prior?.chars ?? 0) + added.reduce((n, e) => n + JSON.stringify(e.payload).length, 0);
    const entry = { nextSeq: run.nextSeq, events: prior ? [...prior.events, ...added] : added, chars };
    if (chars > this.limits.maxEntryChars) this.entries.drop(run.runId);
    else this.entries.set(run.runId, entry);
  }
}
