// The writes of an open SQLite group commit, kept so that a member that fails after writing can be
// undone without savepoints (store.ts): the group rolls back and runs again the writes of the
// members before it. Replaying is exact: the same statements with the same values, in the same
// order, from the same committed state (store.ts fails the group if another connection wrote).
import type BetterSqlite3 from 'better-sqlite3';

/** A prepared statement that changes the database, with its kind (for the statement counter). */
export interface WriteStatement {
  readonly stmt: BetterSqlite3.Statement;
  readonly op: string;
}

export class WriteLog {
  private readonly statements: WriteStatement[] = [];
  private readonly values: (readonly unknown[])[] = [];
  private open = false;

  /**
   * `inTransaction`: whether the connection has a transaction open; `counted` hears each
   * statement a replay runs, like any other.
   */
  constructor(
    private readonly inTransaction: () => boolean,
    private readonly counted?: (op: string) => void,
  ) {}

  /** Keep every write that succeeds from now on (a group's BEGIN). */
  start(): void {
    this.truncate(0);
    this.open = true;
  }

  /** Keep nothing more, and forget what was kept (the group's COMMIT or ROLLBACK). */
  stop(): void {
    this.open = false;
    this.truncate(0);
  }

  /** How many writes are kept: a member's writes are those after the length it started at. */
  get length(): number {
    return this.statements.length;
  }

  /**
   * Run a write (`run`: `statement` with `values`) and keep it once it succeeded; its values are
   * kept as given, a caller never changes them afterwards. While a group is open but SQLite has
   * ended its transaction (I/O error, disk full, RAISE(ROLLBACK)), the write is refused: it would
   * commit on its own, outside the group that is failing.
   */
  write<T>(statement: WriteStatement, values: readonly unknown[], run: () => T): T {
    if (!this.open) return run();
    if (!this.inTransaction()) {
      throw new Error('SQLite ended this transaction; its group is rolled back and takes no more writes');
    }
    const result = run();
    this.statements.push(statement);
    this.values.push(values);
    return result;
  }

  /** Forget the writes after the first `length` (a failed member's). */
  truncate(length: number): void {
    this.statements.length = length;
    this.values.length = length;
  }

  /** Run the kept writes again, in order, in a new transaction after a ROLLBACK. */
  replay(): void {
    for (const [i, { stmt, op }] of this.statements.entries()) {
      this.counted?.(op);
      if (stmt.reader) stmt.all(this.values[i]);
      else stmt.run(this.values[i]);
    }
  }
}
