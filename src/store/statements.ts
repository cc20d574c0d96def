// Fixed SQL for the statements every request runs, written once. A repository runs one with
// `Repo.exec`: on PostgreSQL through Kysely's own connection (the pool, or the transaction's), on
// SQLite straight on the connection when it may (`SqliteDirect`, connect.ts), else through Kysely.
//
//   const GET_RUN = statement('select * from "runs" where "run_id" = ?');
//   const { rows } = await this.exec<RunsTable>(GET_RUN, [runId]);
//
// Why not the query builder here: building and compiling a query costs more CPU than SQLite
// takes to run these small statements (bench/RESULTS.md). The text is the same on both dialects:
// standard SQL with double-quoted identifiers; `?` placeholders become `$1…` on PostgreSQL, where
// each is also a named prepared statement (parsed and planned once per connection: pg-driver.ts).
import { CompiledQuery } from 'kysely';
import { prepareOnUse } from './pg-driver.js';
import type { Dialect } from './store.js';

export interface Statement {
  /** The SQL with `?` placeholders (SQLite's form). */
  readonly text: string;
  /** The statement with its parameters, for `db.executeQuery`. */
  with<R>(dialect: Dialect, params: readonly unknown[]): CompiledQuery<R>;
}

/** What running a statement returns (Kysely's QueryResult, as far as the repositories read it). */
export interface StatementResult<R> {
  rows: R[];
  numAffectedRows?: bigint;
}

/**
 * Runs a fixed statement on the SQLite connection at once, synchronously, skipping Kysely's
 * per-query layers (its connection queue, executor and logging promises cost more than SQLite
 * takes to run these statements). Answers undefined when the statement must wait its turn on
 * Kysely's connection instead: outside a transaction while one is open, it would read what that
 * transaction has not committed. `params` must not change after the call: a group commit may run
 * a write again (write-log.ts).
 */
export type SqliteDirect = <R>(text: string, params: readonly unknown[]) => StatementResult<R> | undefined;

export function statement(text: string): Statement {
  let n = 0;
  const pgText = text.replace(/\?/g, () => `$${++n}`);
  prepareOnUse(pgText);
  return {
    text,
    with: <R>(dialect: Dialect, params: readonly unknown[]) =>
      CompiledQuery.raw(dialect === 'postgres' ? pgText : text, [...params]) as CompiledQuery<R>,
  };
}

/**
 * Statements whose shape depends on a count (a multi-row insert of n rows): one Statement per n,
 * made on first use and kept, since the counts that occur are few and small.
 */
export function statementPerCount(make: (n: number) => string): (n: number) => Statement {
  const made = new Map<number, Statement>();
  return (n) => {
    let s = made.get(n);
    if (!s) {
      s = statement(make(n));
      if (made.size < 64) made.set(n, s);
    }
    return s;
  };
}

/**
 * An atomic claim: lease the rows `candidates` selects (a query ending in its ORDER BY and LIMIT),
 * in one UPDATE; on PostgreSQL the candidates are locked SKIP LOCKED, so instances claim side by
 * side. Parameters: the owner, the lease expiry, then the candidate query's own.
 */
export function claimStatements(table: string, id: string, candidates: string): Record<Dialect, Statement> {
  const text = (lock: string) =>
    `update "${table}" set "lease_owner" = ?, "lease_expires_at" = ? where "${id}" in (${candidates}${lock}) returning *`;
  return { sqlite: statement(text('')), postgres: statement(text(' for update skip locked')) };
}
