// Kysely's PostgreSQL driver, reworked so that a transaction costs as few round trips as it can.
//
// The pool's clients run in pg's pipeline mode: a query is written at once, without waiting for
// the answer to the one before it. Inside a transaction, the store marks the writes whose result
// it never reads (`sendAhead`, src/store/repos/repo.ts); those, and BEGIN, are only buffered, and
// go out together with the next statement the transaction waits for (a read, a checked UPDATE, or
// COMMIT) in one socket write. A transaction that only writes (an A2A send, POST /v1/runs) is
// then one round trip: BEGIN, its INSERTs and COMMIT in one write, their answers in one read.
//
// Nothing is weaker for it: the statements are the same, in the same order, in one transaction.
// A write sent ahead that fails aborts the transaction in the database, so whatever follows it
// fails too (COMMIT answers ROLLBACK); the transaction reports the write's own error.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type pg from 'pg';

/**
 * The store's fixed statements (statements.ts), by their PostgreSQL text: each is prepared once
 * per connection under its name, so the server parses and plans it once, not on every run.
 * Past MAX_PREPARED texts (multi-row shapes of unusual sizes), statements run unnamed.
 */
const PREPARED = new Map<string, string>();
const MAX_PREPARED = 500;

/** Run `sql` (a fixed statement's text) as a named prepared statement on every connection. */
export function prepareOnUse(sql: string): void {
  if (!PREPARED.has(sql) && PREPARED.size < MAX_PREPARED) PREPARED.set(sql, `handoff_${PREPARED.size + 1}`);
}

/** Compiled statements whose result the caller never reads (see `sendAhead`). */
const AHEAD = new WeakSet<CompiledQuery>();

/**
 * Mark a write whose result the caller ignores: inside a PostgreSQL transaction it is sent with
 * the transaction's next awaited statement, and its failure surfaces there (or at COMMIT).
 */
export function sentAhead<R>(query: CompiledQuery<R>): CompiledQuery<R> {
  AHEAD.add(query);
  return query;
}

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

export interface PipelinedPostgresDriverConfig {
  pool: pg.Pool;
  /** Told of every exchange with the server that the process waits for (one per round trip). */
  onRoundTrip?: () => void;
}

export class PipelinedPostgresDriver implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, PipelinedConnection>();

  constructor(private readonly config: PipelinedPostgresDriverConfig) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.config.pool.connect();
    let connection = this.connections.get(client);
    if (!connection) {
      connection = new PipelinedConnection(client, this.config.onRoundTrip);
      this.connections.set(client, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (settings.isolationLevel || settings.accessMode) {
      throw new Error('the store runs every transaction at the default isolation level');
    }
    await connection.executeQuery(BEGIN);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const { rows } = await connection.executeQuery<{ command?: string }>(COMMIT);
    // PostgreSQL answers COMMIT with ROLLBACK when an earlier statement aborted the transaction.
    if (rows[0]?.command === 'ROLLBACK') throw new Error('the transaction was aborted by an earlier statement');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await connection.executeQuery(ROLLBACK);
    } catch (err) {
      // The client's state is unknown: it leaves the pool when released.
      (connection as PipelinedConnection).discard(err as Error);
      throw err;
    }
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PipelinedConnection).release();
  }

  async destroy(): Promise<void> {
    await this.config.pool.end();
  }
}

/** One pooled client, as Kysely sees it. */
class PipelinedConnection implements DatabaseConnection {
  /** Between BEGIN and COMMIT/ROLLBACK. */
  private inTransaction = false;
  /** The socket holds back what is written until `flush` (BEGIN and writes sent ahead). */
  private corked = false;
  /** Writes sent ahead and not yet answered (each settles; a failure is kept in `failure`). */
  private ahead: Promise<void>[] = [];
  /** The first failure of a write sent ahead in this transaction. */
  private failure: { error: unknown } | undefined;
  /** Set when a statement failed in a way that leaves this client unfit for reuse. */
  private broken: Error | undefined;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly onRoundTrip: (() => void) | undefined,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query === BEGIN) {
      this.inTransaction = true;
      this.failure = undefined;
      this.sendAhead(query);
      return { rows: [] };
    }
    if (this.inTransaction && AHEAD.has(query)) {
      this.sendAhead(query);
      return { rows: [] };
    }
    return this.exchange<R>(query);
  }

  // biome-ignore lint/correctness/useYield: the store never streams (Kysely's cursor option is not set).
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported by the store');
  }

  /** Write `query` now (held back with the others until the next flush); its answer is awaited later. */
  private sendAhead(query: CompiledQuery): void {
    this.cork();
    const sent = this.submit(query).then(
      () => {},
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    this.ahead.push(sent);
  }

  /** Send `query` with everything held back, and wait for its answer: one round trip. */
  private async exchange<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const answer = this.submit(query);
    this.flush();
    this.onRoundTrip?.();
    let result: pg.QueryResult | undefined;
    let error: unknown;
    try {
      result = await answer;
    } catch (err) {
      error = err;
    }
    // Answers come in order: every write sent before `query` has been answered by now.
    const ahead = this.ahead;
    this.ahead = [];
    await Promise.all(ahead);
    const failure = this.failure;
    if (query === COMMIT || query === ROLLBACK) {
      this.inTransaction = false;
      this.failure = undefined;
    }
    // What failed first is what the caller hears ("current transaction is aborted" follows it);
    // a ROLLBACK only ends the transaction that failure already doomed.
    if (failure && query !== ROLLBACK) throw failure.error;
    if (error !== undefined) throw error;
    return toResult<R>(result as pg.QueryResult);
  }

  private submit(query: CompiledQuery): Promise<pg.QueryResult> {
    const name = PREPARED.get(query.sql);
    const values = [...query.parameters];
    if (name === undefined) return this.client.query(query.sql, values);
    return this.client.query({ name, text: query.sql, values }).catch((err: { code?: string }) => {
      // A schema change under a prepared `select *` (another instance migrating the shared
      // schema) makes it fail on this connection for good: the connection leaves the pool, and
      // the next one prepares it anew.
      if (err.code === '0A000') this.broken ??= err as Error;
      throw err;
    });
  }

  private cork(): void {
    if (this.corked) return;
    this.corked = true;
    socketOf(this.client)?.cork();
  }

  private flush(): void {
    if (!this.corked) return;
    this.corked = false;
    socketOf(this.client)?.uncork();
  }

  discard(err: Error): void {
    this.broken ??= err;
  }

  release(): void {
    this.flush();
    // A transaction left open (Kysely always ends one; this is a guard) must not reach the pool.
    if (this.inTransaction) this.broken ??= new Error('released inside a transaction');
    const broken = this.broken;
    this.broken = undefined;
    this.inTransaction = false;
    this.ahead = [];
    this.failure = undefined;
    // pg destroys a client released with an error instead of pooling it.
    this.client.release(broken);
  }
}

function toResult<R>(result: pg.QueryResult): QueryResult<R> {
  const { command, rowCount, rows } = result;
  if (command === 'ROLLBACK' || command === 'COMMIT') return { rows: [{ command } as R] };
  const writes = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return {
    ...(writes ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}),
    rows: (rows ?? []) as R[],
  };
}

/**
 * The client's socket, to hold writes back and send them as one (node's cork/uncork; pg corks the
 * few messages of each query the same way). pg does not expose it in its types; without it,
 * statements are still pipelined, only written one by one.
 */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | undefined {
  const stream = (client as unknown as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } }).connection
    ?.stream;
  return typeof stream?.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as { cork(): void; uncork(): void })
    : undefined;
}
