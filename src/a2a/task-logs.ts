// The events a Task is built from (its artifacts and message history), per run, as this process
// committed them: the answer to a reply into a task, or a tasks/get that misses the TaskCache,
// then needs no read of the log.
//
// Exact, like the TaskCache (task-cache.ts): an entry starts from a run's first commit (its whole
// log is in that change) and grows only by the next commit, in sequence; a commit that does not
// continue it (one missed, say) drops it. It answers only for the `nextSeq` it holds, so a caller
// holding another snapshot of the run reads the store. Anything written by another process
// changes SQLite's data_version, which empties it; on PostgreSQL there is none.
//
// Two tiers, each bounded and least recently used out first: the runs still going (a reply may
// come, hours later) and the finished ones, kept only briefly (the request that finished the run
// answers from its entry, and a tasks/get soon after; later gets hit the TaskCache or read the
// store). Without the split, a busy host filled the whole bound with finished runs: they pushed
// out the waiting runs the entries exist for, and the bound, counted in payload characters, held
// about ten times as many bytes of heap (parsed objects): RSS doubled in 40 s of approval load
// (docs/decisions.md).
import { isTerminal, type RunEvent, type RunEventType } from '../store/model.js';
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

/** Characters of payload the finished runs' tier holds (about 2,000 approval flows' logs). */
export const FINISHED_MAX_CHARS = 1024 * 1024;

export class TaskLogs {
  /** Runs not in a terminal state. */
  private readonly live: ExactLru<Entry>;
  /** Runs in a terminal state (no more commits come). */
  private readonly finished: ExactLru<Entry>;

  constructor(
    dataVersion: () => number,
    private readonly limits: CharLimits = DEFAULT_CHAR_LIMITS,
    finishedMaxChars = FINISHED_MAX_CHARS,
  ) {
    // One data_version check per read: the finished tier never checks its own (a constant), it is
    // emptied with the live tier.
    this.finished = new ExactLru<Entry>(() => 0, Math.min(finishedMaxChars, limits.maxChars));
    this.live = new ExactLru<Entry>(dataVersion, limits.maxChars, () => this.finished.clear());
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
    if (!this.live.current()) return undefined;
    const tier = this.live.peek(runId) ? this.live : this.finished;
    return tier.peek(runId)?.nextSeq === nextSeq ? tier.use(runId)?.events : undefined;
  }

  /** Runs and characters held, both tiers. */
  get size(): { runs: number; chars: number } {
    const live = this.live.size;
    const finished = this.finished.size;
    return { runs: live.entries + finished.entries, chars: live.chars + finished.chars };
  }

  private drop(runId: string): void {
    this.live.drop(runId);
    this.finished.drop(runId);
  }

  private apply({ before, run, events }: RunChange): void {
    // A new run's change holds its whole log; any other continues the entry only in sequence.
    const first = before ? before.nextSeq : 0;
    const prior = before ? (this.live.peek(run.runId) ?? this.finished.peek(run.runId)) : undefined;
    if (before && prior?.nextSeq !== first) {
      this.drop(run.runId);
      return;
    }
    // Its own events are those in its range: a transaction's later commits to a run may append to
    // the list its first change was given.
    const added = events.filter(
      (e) => e.sequence >= first && e.sequence < run.nextSeq && TASK_EVENT_TYPES.includes(e.type),
    );
    const chars = (prior?.chars ?? 0) + added.reduce((n, e) => n + JSON.stringify(e.payload).length, 0);
    const entry = { nextSeq: run.nextSeq, events: prior ? [...prior.events, ...added] : added, chars };
    this.drop(run.runId);
    if (chars <= this.limits.maxEntryChars) (isTerminal(run.status) ? this.finished : this.live).set(run.runId, entry);
  }
}
