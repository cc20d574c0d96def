// What every repository is built on: a Kysely handle (the store's pool, or one transaction) and
// the dialect and clock of its store. A repository built on a transaction writes inside it.
import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from '../db.js';
import { sentAhead } from '../pg-driver.js';
import type { Statement } from '../statements.js';

export type Dialect = 'sqlite' | 'postgres';

export abstract class Repo {
  constructor(
    protected readonly db: Kysely<Database>,
    protected readonly dialect: Dialect,
    protected readonly now: () => Date,
  ) {}

  /** The rows a fixed statement returns. */
  protected async all<R>(query: Statement, params: readonly unknown[]): Promise<R[]> {
    return (await this.db.executeQuery(query.with<R>(this.dialect, params))).rows;
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
    await this.db.executeQuery(sentAhead('with' in query ? query.with(this.dialect, params) : query));
  }

  /** Run a fixed statement that writes; how many rows it changed. */
  protected async write(query: Statement, params: readonly unknown[]): Promise<number> {
    return Number((await this.db.executeQuery(query.with(this.dialect, params))).numAffectedRows ?? 0);
  }
}
