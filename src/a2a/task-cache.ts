// Serialized Tasks for tasks/get, kept only while they are exactly what the store holds. A caller
// waiting on a long task polls tasks/get; each poll would otherwise re-read the run, its task
// record and its log and rebuild the same JSON.
//
// Exact, not "fresh enough": every change to a Task goes through a store transaction that names
// its run to `onCommit` after COMMIT and before its caller hears back, so the entry is gone before
// anyone can know there is something newer. A purge names its runs to `onPurge`. A read racing a
// commit cannot store what it read (its ticket is marked stale). Anything written by another
// process changes SQLite's data_version, which empties the cache. The store offers this only on
// SQLite (`store.dataVersion`); on PostgreSQL other instances write the same rows and there is no
// cache at all.
import type { CommitListener, Store } from '../store/store.js';
import { type CharLimits, DEFAULT_CHAR_LIMITS, ExactLru } from './exact-lru.js';

interface Entry {
  tenantId: string;
  /** Serialized Task by protocol version and historyLength (key()). */
  texts: Map<string, string>;
  chars: number;
}

/** One read in flight: `stale` once its task changed (or the cache was emptied) meanwhile. */
export interface Ticket {
  readonly taskId: string;
  stale: boolean;
}

export class TaskCache {
  private readonly entries: ExactLru<Entry>;
  private readonly reading = new Map<string, Set<Ticket>>();

  /** `dataVersion` changes whenever something this process is not told about wrote the data. */
  constructor(
    dataVersion: () => number,
    private readonly limits: CharLimits = DEFAULT_CHAR_LIMITS,
  ) {
    this.entries = new ExactLru<Entry>(dataVersion, limits.maxChars, () => {
      for (const set of this.reading.values()) for (const t of set) t.stale = true;
    });
  }

  /** A cache for `store`, or undefined where the store cannot make it exact (PostgreSQL). Its
   * `listener` must be in the store's pipeline, before anything that wakes readers. */
  static forStore(store: Store): TaskCache | undefined {
    return store.dataVersion ? new TaskCache(store.dataVersion) : undefined;
  }

  /** Drops each committed or purged task at once (a pipeline listener). */
  readonly listener: CommitListener = {
    name: 'task-cache',
    committed: (changes) => this.invalidate(changes.map((c) => c.run.runId)),
    purged: (runIds) => this.invalidate(runIds),
  };

  /** The Task as `tenantId` may see it, serialized for `version`, if held. */
  get(taskId: string, tenantId: string, historyLength: number | undefined, version = '0.3'): string | undefined {
    if (!this.entries.current()) return undefined;
    const entry = this.entries.peek(taskId);
    if (!entry || entry.tenantId !== tenantId) return undefined;
    const text = entry.texts.get(key(historyLength, version));
    if (text !== undefined) this.entries.use(taskId);
    return text;
  }

  /** Call before reading the store for `taskId`; `put` the result with the ticket, then `end` it. */
  begin(taskId: string): Ticket {
    this.entries.current();
    const ticket: Ticket = { taskId, stale: false };
    let set = this.reading.get(taskId);
    if (!set) {
      set = new Set();
      this.reading.set(taskId, set);
    }
    set.add(ticket);
    return ticket;
  }

  end(ticket: Ticket): void {
    const set = this.reading.get(ticket.taskId);
    if (set?.delete(ticket) && set.size === 0) this.reading.delete(ticket.taskId);
  }

  /** Keep what a ticket's read produced, unless the task changed while it was being read. */
  put(ticket: Ticket, tenantId: string, historyLength: number | undefined, text: string, version = '0.3'): void {
    if (!this.entries.current() || ticket.stale || text.length > this.limits.maxEntryChars) return;
    let entry = this.entries.peek(ticket.taskId);
    if (entry && entry.tenantId !== tenantId) return;
    if (entry) this.entries.drop(ticket.taskId); // its chars change below; kept again as most recently used
    entry ??= { tenantId, texts: new Map(), chars: 0 };
    const k = key(historyLength, version);
    entry.chars += text.length - (entry.texts.get(k)?.length ?? 0);
    entry.texts.set(k, text);
    this.entries.set(ticket.taskId, entry);
  }

  /** These runs changed (committed): forget them, and spoil reads of them in flight. */
  invalidate(runIds: Iterable<string>): void {
    for (const id of runIds) {
      this.entries.drop(id);
      const set = this.reading.get(id);
      if (set) for (const t of set) t.stale = true;
    }
  }

  /** Tasks held, and the characters they take. */
  get size(): { tasks: number; chars: number } {
    const { entries, chars } = this.entries.size;
    return { tasks: entries, chars };
  }
}

/** One entry per wire: the same Task is different text in each protocol version. */
const key = (historyLength: number | undefined, version: string): string =>
  `${version}/${historyLength === undefined ? '' : String(historyLength)}`;
