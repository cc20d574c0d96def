// The map under the tasks/get cache (task-cache.ts): entries by task id, bounded by the
// characters they hold (least recently used out first), all forgotten the moment SQLite's
// data_version says another connection wrote the file.

/** Caps: total characters held, and the largest entry kept (a bigger one is simply not kept). */
export interface CharLimits {
  maxChars: number;
  maxEntryChars: number;
}
export const DEFAULT_CHAR_LIMITS: CharLimits = { maxChars: 16 * 1024 * 1024, maxEntryChars: 256 * 1024 };

export class ExactLru<E extends { chars: number }> {
  private readonly entries = new Map<string, E>();
  private chars = 0;
  private version: number;

  constructor(
    private readonly dataVersion: () => number,
    private readonly maxChars: number,
    /** Told when another process's write emptied the entries. */
    private readonly onCleared: () => void = () => {},
  ) {
    this.version = dataVersion();
  }

  /** False (and everything forgotten) when another process wrote the database since last look. */
  current(): boolean {
    const v = this.dataVersion();
    if (v === this.version) return true;
    this.version = v;
    this.clear();
    return false;
  }

  /** Forget every entry (and tell `onCleared`). */
  clear(): void {
    this.entries.clear();
    this.chars = 0;
    this.onCleared();
  }

  /** The entry, left where it is in the eviction order. */
  peek(id: string): E | undefined {
    return this.entries.get(id);
  }

  /** The entry, now the most recently used (Map order is insertion order). */
  use(id: string): E | undefined {
    const entry = this.entries.get(id);
    if (entry !== undefined) {
      this.entries.delete(id);
      this.entries.set(id, entry);
    }
    return entry;
  }

  /** Keep `entry` (replacing any under `id`) as the most recently used, then evict the least
   * recently used while over `maxChars`. Drop an entry before changing its `chars`. */
  set(id: string, entry: E): void {
    this.drop(id);
    this.entries.set(id, entry);
    this.chars += entry.chars;
    for (const old of this.entries.keys()) {
      if (this.chars <= this.maxChars) return;
      this.drop(old);
    }
  }

  drop(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.chars -= entry.chars;
    this.entries.delete(id);
  }

  /** Entries held, and the characters they take. */
  get size(): { entries: number; chars: number } {
    return { entries: this.entries.size, chars: this.chars };
  }
}
