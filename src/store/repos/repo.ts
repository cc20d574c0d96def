// What every repository is built on: a Kysely handle (the store's pool, or one transaction) and
// the dialect and clock of its store. A repository built on a transaction writes inside it.
import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from '../db.js';
import { sentAhead } from '../pg-driver.js';
import type { SqliteDirect, Statement, StatementResult } from '../statements.js';

export type Dialect = 'sqlite' | 'postgres';

export abstract class Repo {
  constructor(
    protected readonly db: Kysely<Database>,
    protected readonly dialect: Dialect,
    protected readonly now: () => Date,
    /** SQLite: the connection itself, for fixed statements (bound to `db`'s transaction, if any). */
    protected readonly direct?: SqliteDirect,
  ) {}

  /** Run a fixed statement: straight on the SQLite connection when it may, else through Kysely. */
  protected exec<R>(query: Statement, params: readonly unknown[]): Promise<StatementResult<R>> | StatementResult<R> {
    return this.direct?.<R>(query.text, params) ?? this.db.executeQuery(query.with<R>(this.dialect, params));
  }

  /** The rows a fixed statement returns. */
  protected async all<R>(query: Statement, params: readonly unknown[]): Promise<R[]> {
    return (await this.exec<R>(query, params)).rows;
  }

  protected async first<R>(query: Statement, params: readonly unknown[]): Promise<R | undefined> {
    return (await this.all<R>(query, params))[0];
  }

  /**
   * Run a write whose result no one reads. Inside a PostgreSQL transaction it goes out with the
   * transaction's next awaited statement (src/store/pg-driver.ts); if it fails, so does that
   * statement or the COMMIT, with this write's error.
   */
  protected async sendAhead(query: Statement | CompiledQuery, params: readonly unknown[] = []): Promise<void> {
    if (!('with' in query)) {
      await this.db.executeQuery(sentAhead(query));
      return;
    }
    // SQLite has no round trip to save: straight on the connection when it may.
    if (this.direct?.(query.text, params)) return;
    await this.db.executeQuery(sentAhead(query.with(this.dialect, params)));
  }

  /** Run a fixed statement that writes; how many rows it changed. */
  protected async write(query: Statement, params: readonly unknown[]): Promise<number> {
    return Number((await this.exec(query, params)).numAffectedRows ?? 0);
  }
}

/** Resolves in a later turn of the event loop, after the callbacks already waiting for one. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
