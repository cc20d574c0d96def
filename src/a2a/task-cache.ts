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

/** Caps: total characters held, and the largest Task kept (bigger ones are simply not cached). */
export interface TaskCacheLimits {
  maxChars: number;
  maxEntryChars: number;
}
const DEFAULT_LIMITS: TaskCacheLimits = { maxChars: 16 * 1024 * 1024, maxEntryChars: 256 * 1024 };

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
  private readonly entries = new Map<string, Entry>();
  private readonly reading = new Map<string, Set<Ticket>>();
  private chars = 0;
  private version: number;

  /** `dataVersion` changes whenever something this process is not told about wrote the data. */
  constructor(
    private readonly dataVersion: () => number,
    private readonly limits: TaskCacheLimits = DEFAULT_LIMITS,
  ) {
    this.version = dataVersion();
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
    if (!this.current()) return undefined;
    const entry = this.entries.get(taskId);
    if (!entry || entry.tenantId !== tenantId) return undefined;
    const text = entry.texts.get(key(historyLength, version));
    if (text !== undefined) {
      this.entries.delete(taskId); // most recently used last: eviction takes the oldest first
      this.entries.set(taskId, entry);
    }
    return text;
  }

  /** Call before reading the store for `taskId`; `put` the result with the ticket, then `end` it. */
  begin(taskId: string): Ticket {
    this.current();
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
    if (!this.current() || ticket.stale || text.length > this.limits.maxEntryChars) return;
    let entry = this.entries.get(ticket.taskId);
    if (entry && entry.tenantId !== tenantId) return;
    if (entry) this.entries.delete(ticket.taskId); // re-inserted below: most recently used last
    entry ??= { tenantId, texts: new Map(), chars: 0 };
    const k = key(historyLength, version);
    const old = entry.texts.get(k);
    if (old !== undefined) entry.chars -= old.length;
    entry.texts.set(k, text);
    entry.chars += text.length;
    this.chars += text.length - (old?.length ?? 0);
    this.entries.set(ticket.taskId, entry);
    this.evictOverLimit();
  }

  /** These runs changed (committed): forget them, and spoil reads of them in flight. */
  invalidate(runIds: Iterable<string>): void {
    for (const id of runIds) {
      this.drop(id);
      const set = this.reading.get(id);
      if (set) for (const t of set) t.stale = true;
    }
  }

  /** Tasks held, and the characters they take. */
  get size(): { tasks: number; chars: number } {
    return { tasks: this.entries.size, chars: this.chars };
  }

  /** False (and everything forgotten) when another process wrote the database since last look. */
  private current(): boolean {
    const v = this.dataVersion();
    if (v === this.version) return true;
    this.version = v;
    this.entries.clear();
    this.chars = 0;
    for (const set of this.reading.values()) for (const t of set) t.stale = true;
    return false;
  }

  private drop(taskId: string): void {
    const entry = this.entries.get(taskId);
    if (!entry) return;
    this.chars -= entry.chars;
    this.entries.delete(taskId);
  }

  /** Least recently used first: Map order is insertion order, and a use re-inserts. */
  private evictOverLimit(): void {
    for (const id of this.entries.keys()) {
      if (this.chars <= this.limits.maxChars) return;
      this.drop(id);
    }
  }
}

/** One entry per wire: the same Task is different text in each protocol version. */
const key = (historyLength: number | undefined, version: string): string =>
  `${version}/${historyLength === undefined ? '' : String(historyLength)}`;
