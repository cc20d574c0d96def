// Opening a store: SQLite file (default) or PostgreSQL URL, migrated to the latest schema.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  type DatabaseIntrospector,
  type Driver,
  type LogEvent,
  Kysely,
  Migrator,
  PostgresDialect,
  type PostgresDialectConfig,
  SqliteDialect,
  type SqliteDatabase,
  sql,
  type TableMetadata,
} from 'kysely';
import pg from 'pg';
import type { Database } from './db.js';
import { migrationProvider } from './migrations.js';
import { PipelinedPostgresDriver } from './pg-driver.js';
import type { SqliteDirect, StatementResult } from './statements.js';
import { Store, type StoreOptions } from './store.js';
import { WriteLog, type WriteStatement } from './write-log.js';

// Epoch-ms columns are int8 on PostgreSQL; pg returns those as strings unless told otherwise.
// Values stay far below 2^53, so Number is exact.
pg.types.setTypeParser(20, (v: string) => Number(v));

export interface OpenStoreOptions {
  /** `postgres://…` selects PostgreSQL; otherwise `sqliteFile` is used. */
  databaseUrl?: string;
  sqliteFile?: string;
  /** SQLite `synchronous`: NORMAL survives a process crash, FULL also a power loss. */
  sqliteSynchronous?: 'NORMAL' | 'FULL';
  /** PostgreSQL schema to use (created if missing); isolates test suites sharing a server. */
  pgSchema?: string;
  pgPoolSize?: number;
  now?: () => Date;
  /**
   * SQLite: hold the file for this process alone (locking_mode EXCLUSIVE). Another process
   * cannot open it meanwhile, and every transaction skips the shared-memory locking.
   */
  sqliteExclusive?: boolean;
  /** Told of every statement the database runs (BEGIN and COMMIT included), by its first keyword. */
  onStatement?: (op: string) => void;
  /** SQLite: told, after each COMMIT, how many store transactions it committed (group commit). */
  onGroupCommit?: (transactions: number) => void;
  /** SQLite: the clock a group commit's time budget is measured on (tests pass their own). */
  groupClock?: () => number;
  /**
   * PostgreSQL: an idle pooled connection failed (the server restarted, failed over, or ended it).
   * The pool drops it and the next query gets a fresh one; unheard, pg's error would end the process.
   */
  onPoolError?: (err: Error) => void;
  /** PostgreSQL: told of every exchange with the server the store waits for (one round trip each). */
  onRoundTrip?: () => void;
}

/** The kinds of statement that open or end a transaction or savepoint. */
const TRANSACTION_CONTROL = new Set(['begin', 'commit', 'end', 'rollback', 'savepoint', 'release']);

/** A statement's kind (`select`, `insert`, `commit`, …): its first keyword. */
function opOf(sql: string): string {
  const space = sql.search(/\s/);
  return (space < 0 ? sql : sql.slice(0, space)).toLowerCase();
}

/** Kysely's query log, reduced to the statement's kind. */
function statementLog(onStatement: ((op: string) => void) | undefined) {
  if (!onStatement) return {};
  return {
    log(event: LogEvent) {
      onStatement(opOf(event.query.sql));
    },
  };
}

export async function openStore(opts: OpenStoreOptions): Promise<Store> {
  const pgUrl = opts.databaseUrl?.match(/^postgres(ql)?:\/\//);
  const { store, lock }: Opened = pgUrl ? await openPostgres(opts) : openSqlite(opts);
  try {
    await migrate(store, lock, opts.pgSchema);
  } catch (err) {
    await store.destroy().catch(() => {});
    throw err;
  }
  return new Store({ ...store, ...(opts.now ? { now: opts.now } : {}) });
}

/** A database handle before migration; the Store is built on it once the schema is current. */
interface Opened {
  store: StoreOptions;
  lock?: MigrationLock;
}

/** Serializes migrations of processes starting together (Kysely locks only on PostgreSQL). */
interface MigrationLock {
  run<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * WAL pages after which a commit copies the WAL back into the database file (SQLite's default is
 * 1,000: 4 MB). A checkpoint writes each page once however often the WAL holds it, and every
 * commit rewrites the same hot pages (the tables' and indexes' newest leaves), so a longer WAL
 * copies them less often: about a tenth less CPU per approval flow under load (docs/decisions.md).
 * Durability is the WAL's either way; a restart replays at most this much (40 MB of 4 KB pages).
 */
export const SQLITE_WAL_AUTOCHECKPOINT = 10_000;

function openSqlite(opts: OpenStoreOptions): Opened {
  const file = opts.sqliteFile ?? '.handoff/handoff.db';
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const database = new BetterSqlite3(file);
  database.pragma('busy_timeout = 5000');
  // Before WAL is entered: then the WAL index lives in this process's memory, not shared memory.
  if (opts.sqliteExclusive) {
    database.pragma('locking_mode = EXCLUSIVE');
    holdExclusively(database, file);
  }
  enableWal(database);
  database.pragma(`synchronous = ${opts.sqliteSynchronous ?? 'NORMAL'}`);
  database.pragma('foreign_keys = ON');
  // SQLite keeps a statement's undo pages (a statement journal) in a temporary file: in memory
  // they cost no write syscalls (a temp file is not durable anyway).
  database.pragma('temp_store = MEMORY');
  database.pragma(`wal_autocheckpoint = ${SQLITE_WAL_AUTOCHECKPOINT}`);
  const prepared = statementCache(database);
  const writes = new WriteLog(() => database.inTransaction, opts.onStatement);
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({
      database: {
        close: () => database.close(),
        prepare: (sql: string) => forKysely(prepared(sql), writes) as unknown as ReturnType<SqliteDatabase['prepare']>,
      },
    }),
    ...statementLog(opts.onStatement),
  });
  const direct = directRunner(prepared, writes, opts.onStatement);
  const store: StoreOptions = {
    db,
    dialect: 'sqlite',
    destroy: () => db.destroy(),
    dataVersion: dataVersionReader(database, opts),
    // Outside a transaction, a read waits for Kysely's connection while a transaction is open.
    direct: {
      transaction: direct,
      pool: (text, params) => (database.inTransaction ? undefined : direct(text, params)),
      inTransaction: () => database.inTransaction,
      writes,
    },
    ...(opts.onGroupCommit ? { onGroupCommit: opts.onGroupCommit } : {}),
    ...(opts.groupClock ? { groupClock: opts.groupClock } : {}),
  };
  // Kysely runs SQLite migrations without a transaction or lock. One IMMEDIATE transaction around
  // them gives both: a second process waits (busy_timeout), and a crash leaves no half schema.
  const lock: MigrationLock = {
    async run(fn) {
      database.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn();
        database.exec('COMMIT');
        return out;
      } catch (err) {
        if (database.inTransaction) database.exec('ROLLBACK');
        throw err;
      }
    },
  };
  return { store, lock };
}

/**
 * SQLite's `data_version`, which changes when another connection commits to the file. A file held
 * exclusively is written by this connection alone, so the number cannot change and is not read:
 * a tasks/get the cache answers then runs no statement at all (docs/decisions.md).
 */
function dataVersionReader(database: BetterSqlite3.Database, opts: OpenStoreOptions): () => number {
  if (opts.sqliteExclusive) return () => 0;
  const pragma = database.prepare('pragma data_version').pluck();
  return () => {
    opts.onStatement?.('pragma');
    return pragma.get() as number;
  };
}

/**
 * Take the file's lock now (a write lock, held until close), so a second process fails here, at
 * start, with a clear message, and not later in some request. busy_timeout lets a previous owner
 * that is just exiting finish first.
 */
function holdExclusively(database: BetterSqlite3.Database, file: string): void {
  try {
    database.exec('BEGIN IMMEDIATE; COMMIT');
  } catch (err) {
    database.close();
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    throw new Error(
      `the SQLite database ${file} is in use by another process (another handoff serve on the same data directory?); ` +
        'SQLite serves one process: give each its own --data, or share a PostgreSQL database (--database-url postgres://…) between instances',
    );
  }
}

/**
 * Switching a new file to WAL needs an exclusive lock, and SQLite reports SQLITE_BUSY at once
 * (no busy handler) when processes starting together hold the file: retry briefly.
 */
function enableWal(database: BetterSqlite3.Database): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; ; attempt++) {
    try {
      database.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= 250) throw err;
      Atomics.wait(pause, 0, 0, 20);
    }
  }
}

/** A prepared statement and its kind (for the statement counter). */
interface Prepared extends WriteStatement {
  /** It changes the database (not `sqlite3_stmt_readonly`): its runs go to the write log. */
  writes: boolean;
  /** A reading statement as the direct runner runs it (made on its first direct run; null: none). */
  reader?: RawReader | null;
  /** A writing statement as Kysely runs it (made on its first such run). */
  logged?: KyselyStatement;
}

/** What Kysely's SQLite driver calls on a prepared statement. */
type KyselyStatement = Pick<BetterSqlite3.Statement, 'reader' | 'all' | 'run' | 'iterate'>;

/** The statement Kysely runs: a writing one goes through the write log (each run that succeeds is kept). */
function forKysely(entry: Prepared, writes: WriteLog): KyselyStatement {
  if (!entry.writes) return entry.stmt;
  const { stmt } = entry;
  entry.logged ??= {
    reader: stmt.reader,
    all: (values: unknown[]) => writes.write(entry, values, () => stmt.all(values)),
    run: (values: unknown[]) => writes.write(entry, values, () => stmt.run(values)),
    // Kysely streams only selects; a write's rows all at once, so the write is whole when kept.
    iterate: (values: unknown[]) => writes.write(entry, values, () => stmt.all(values))[Symbol.iterator](),
  } as KyselyStatement;
  return entry.logged;
}

/**
 * A reading statement in better-sqlite3's raw mode (each row an array), and the function that
 * makes a row object of an array. better-sqlite3 builds an object row key by key, making each
 * column name a V8 string again for every row (about a quarter of a 40-column read of a run); a function
 * made once per statement, one object literal with the columns' names, builds the same object at
 * the cost of the literal. Its own statement: Kysely runs the shared one, expecting objects.
 */
export interface RawReader {
  stmt: BetterSqlite3.Statement;
  row: (values: unknown[]) => Record<string, unknown>;
}

export function rawReader(database: BetterSqlite3.Database, sql: string): RawReader | undefined {
  const stmt = database.prepare(sql).raw(true);
  const names = stmt.columns().map((c) => c.name);
  // In a literal, a `__proto__` key sets the prototype: such a statement keeps object rows.
  if (names.includes('__proto__')) return undefined;
  // Names are quoted by JSON.stringify; a repeated name keeps its last value, as object rows do.
  const body = `return {${names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ')}};`;
  return { stmt, row: new Function('v', body) as RawReader['row'] };
}

/**
 * Kysely's SQLite driver prepares every statement anew; preparing costs more than running the
 * small statements the store issues. better-sqlite3 statements are reusable, and one statement
 * runs at a time on the single connection (synchronously), so a cache keyed by SQL text is safe.
 */
function statementCache(database: BetterSqlite3.Database, max = 500): (sql: string, direct?: boolean) => Prepared {
  const cache = new Map<string, Prepared>();
  return (sql, direct) => {
    let entry = cache.get(sql);
    if (!entry) {
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      const stmt = database.prepare(sql);
      const op = opOf(sql);
      // BEGIN IMMEDIATE and the like are not read-only to SQLite, but they are the group's own.
      entry = { stmt, op, writes: !stmt.readonly && !TRANSACTION_CONTROL.has(op) };
      cache.set(sql, entry);
    }
    if (direct && entry.stmt.reader && entry.reader === undefined) entry.reader = rawReader(database, sql) ?? null;
    return entry;
  };
}

/**
 * Fixed statements run at once on the connection, counted like Kysely's (statements.ts); a
 * writing one that succeeds goes to the write log.
 */
function directRunner(
  prepared: (sql: string, direct?: boolean) => Prepared,
  writes: WriteLog,
  onStatement?: (op: string) => void,
): SqliteDirect {
  return <R>(text: string, params: readonly unknown[]) => {
    const entry = prepared(text, true);
    onStatement?.(entry.op);
    if (!entry.writes) return runPrepared<R>(entry, params);
    return writes.write(entry, params, () => runPrepared<R>(entry, params));
  };
}

function runPrepared<R>({ stmt, reader }: Prepared, params: readonly unknown[]): StatementResult<R> {
  if (reader) return { rows: (reader.stmt.all(params) as unknown[][]).map(reader.row) as R[] };
  if (stmt.reader) return { rows: stmt.all(params) as R[] };
  return { rows: [], numAffectedRows: BigInt(stmt.run(params).changes) };
}

async function openPostgres(opts: OpenStoreOptions): Promise<Opened> {
  const schema = opts.pgSchema;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema))
    throw new Error(`invalid PostgreSQL schema name: ${schema}`);
  if (schema) {
    const client = new pg.Client({ connectionString: opts.databaseUrl });
    await client.connect();
    try {
      await client.query(`create schema if not exists ${schema}`);
    } catch (err) {
      // Instances starting together race on the catalog; the schema exists either way.
      const code = (err as { code?: string }).code;
      if (code !== '23505' && code !== '42P06') throw err;
    } finally {
      await client.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max: opts.pgPoolSize ?? 10,
    // A transaction's writes go out together with its next awaited statement (pg-driver.ts).
    pipeline: true,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  pool.on('error', (err) => opts.onPoolError?.(err));
  const driver = new PipelinedPostgresDriver({ pool, ...(opts.onRoundTrip ? { onRoundTrip: opts.onRoundTrip } : {}) });
  const db = new Kysely<Database>({
    dialect: new SchemaScopedPostgresDialect({ pool }, schema ?? 'public', driver),
    ...statementLog(opts.onStatement),
  });
  return { store: { db, dialect: 'postgres', destroy: () => db.destroy() } };
}

async function migrate(store: StoreOptions, lock: MigrationLock | undefined, pgSchema: string | undefined) {
  const migrator = new Migrator({
    db: store.db,
    provider: migrationProvider(store.dialect),
    // Keep Kysely's bookkeeping tables in our schema, so several schemas can share a database.
    ...(store.dialect === 'postgres' ? { migrationTableSchema: pgSchema ?? 'public' } : {}),
  });
  const run = () => migrator.migrateToLatest();
  const { error } = lock ? await lock.run(run) : await run();
  if (error) throw new Error(`database migration failed: ${(error as Error).message ?? String(error)}`);
}

/**
 * PostgreSQL through the pipelined driver (pg-driver.ts), whose introspection sees only our schema. Kysely's migrator asks the introspector
 * whether its bookkeeping tables exist; the stock one reads every table of the database and
 * calls catalog functions on each, which fails ("schema … does not exist") when another
 * deployment or test suite sharing the database drops its schema meanwhile.
 */
class SchemaScopedPostgresDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly schema: string,
    private readonly driver: Driver,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return this.driver;
  }

  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    const stock = super.createIntrospector(db);
    const schema = this.schema;
    return {
      getSchemas: () => stock.getSchemas(),
      getMetadata: (options) => stock.getMetadata(options),
      async getTables(): Promise<TableMetadata[]> {
        const { rows } = await sql<{ name: string; kind: string }>`
          select c.relname as name, c.relkind as kind from pg_catalog.pg_class c
          join pg_catalog.pg_namespace n on n.oid = c.relnamespace
          where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v')`.execute(db);
        // Only names and schema are read by the migrator; columns are not needed.
        return rows.map((r) => ({ name: r.name, schema, isView: r.kind === 'v', columns: [] }));
      },
    };
  }
}
