// The durable store: one implementation over Kysely for SQLite and PostgreSQL, and the only door
// to the database. Every table is reached through a repository (src/store/repos/).
//
// Contract (what callers may rely on):
// - `transaction(fn)` runs `fn` in ONE database transaction. Everything written through the
//   `StoreTx` it receives commits together or not at all.
// - `tx.commitRun` appends events with gap-free sequences and bumps `version`; it throws
//   `ConflictError` if the run changed since `before` was read (optimistic concurrency).
// - The transition pipeline (`setPipeline`) is one ordered list, set once by the host:
//   its steps run, in order, inside the transaction of every run insert or commit, so derived
//   records (the A2A task record, the push outbox) are written atomically with the run; its
//   listeners are called, in order, after a successful commit — never before, never for a
//   rolled-back transaction — and after a purge.
// - The writes outside `transaction` are single atomic statements: lease claims, renewals and
//   hand-backs of runs and deliveries, a delivery's attempt outcome, an operator's retry.
import { type Kysely, sql } from 'kysely';
import type { Database } from './db.js';
import { TERMINAL_STATUSES } from './model.js';
import { Events } from './repos/events.js';
import { type Dialect, nextTurn } from './repos/repo.js';
import { Quotas } from './repos/quotas.js';
import { Runs } from './repos/runs.js';
import { Tables } from './repos/tables.js';
import type { SqliteDirect } from './statements.js';
import type { WriteLog } from './write-log.js';
import { type RunChange, StoreTx, type TransitionStep } from './tx.js';

export type { Dialect } from './repos/repo.js';
export type { NewRun, RunChange, RunPatch, TransitionStep } from './tx.js';
export { StoreTx } from './tx.js';

/** Told about what committed, in pipeline order (after COMMIT, before the caller hears back). */
export interface CommitListener {
  readonly name: string;
  committed?(changes: RunChange[]): void;
  /** These runs and everything of theirs were purged (the deletion committed). */
  purged?(runIds: string[]): void;
}

/** What runs with every run change: steps inside its transaction, listeners after its commit. */
export interface Pipeline {
  steps: TransitionStep[];
  listeners: CommitListener[];
}

export interface StoreOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  now?: () => Date;
  /** Closes the underlying driver (pool / file). */
  destroy: () => Promise<void>;
  /** SQLite's `data_version`: changes when another connection (process) commits to the file. */
  dataVersion?: () => number;
  /**
   * SQLite: fixed statements straight on the connection (statements.ts), `pool` for reads outside
   * a transaction (it declines while one is open), `transaction` for those inside one (and for
   * the group's BEGIN, COMMIT, ROLLBACK); `inTransaction`: whether one is open; `writes`: every
   * write that succeeded on the connection while a group records them (write-log.ts).
   */
  direct?: { pool: SqliteDirect; transaction: SqliteDirect; inTransaction: () => boolean; writes: WriteLog };
  /** SQLite: told, after each COMMIT, how many store transactions it committed (group commit). */
  onGroupCommit?: (transactions: number) => void;
  /** SQLite: the monotonic clock (ms) a group's budget is measured on; `performance.now` by default. */
  groupClock?: () => number;
}

/** SQLite: the connection itself (see `StoreOptions.direct`). */
type SqliteConnection = NonNullable<StoreOptions['direct']>;

/** A transaction waiting for its group commit. */
interface PendingTx {
  fn: (tx: StoreTx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Most transactions one SQLite commit carries, and how long its members may run in all. The budget
 * only keeps a group of unusually long transactions from holding its first member's answer back:
 * under load, a group closed early leaves the rest queued for one more COMMIT (docs/decisions.md).
 */
const GROUP_MAX = 64;
const GROUP_BUDGET_MS = 25;
const TERMINAL = [...TERMINAL_STATUSES];

/** ROLLBACK after a failure: if it fails too, the first failure is the one to report. */
function rollbackQuietly(run: (text: string) => unknown): void {
  try {
    run('rollback');
  } catch {
    // The connection's state is SQLite's to report on the next BEGIN.
  }
}

export class Store extends Tables {
  readonly dialect: Dialect;
  readonly runs: Runs;
  readonly events: Events;
  readonly quotas: Quotas;
  /**
   * Where defined, this process's own commits are all announced to the pipeline's listeners, and
   * the returned number changes when anything else writes the database — what a read cache needs
   * to stay exact. Undefined on PostgreSQL (other instances write the same rows).
   */
  readonly dataVersion: (() => number) | undefined;
  /**
   * The raw database, for tests and tools (the bench's bulk seeder) only: production code goes
   * through the repositories (test/unit/store-boundary.test.ts checks that src/ does).
   */
  readonly db: Kysely<Database>;
  private readonly now: () => Date;
  private readonly destroyFn: () => Promise<void>;
  private pipeline: Pipeline = { steps: [], listeners: [] };
  private pipelineSet = false;
  private readonly pending: PendingTx[] = [];
  private draining = false;
  private readonly direct: StoreOptions['direct'];
  private readonly onGroupCommit: StoreOptions['onGroupCommit'];
  private readonly groupClock: () => number;

  constructor(opts: StoreOptions) {
    const now = opts.now ?? (() => new Date());
    const pool = opts.direct?.pool;
    super(opts.db, opts.dialect, now, pool);
    this.db = opts.db;
    this.dialect = opts.dialect;
    this.now = now;
    this.destroyFn = opts.destroy;
    this.dataVersion = opts.dataVersion;
    this.direct = opts.direct;
    this.onGroupCommit = opts.onGroupCommit;
    this.groupClock = opts.groupClock ?? (() => performance.now());
    this.runs = new Runs(opts.db, opts.dialect, now, pool);
    this.events = new Events(opts.db, opts.dialect, now, pool);
    this.quotas = new Quotas(opts.db, opts.dialect, now, pool);
  }

  /** Set the transition pipeline, once, before the first transaction (the host's composition). */
  setPipeline(pipeline: Pipeline): void {
    if (this.pipelineSet) throw new Error('the store pipeline is set once');
    this.pipelineSet = true;
    this.pipeline = { steps: [...pipeline.steps], listeners: [...pipeline.listeners] };
  }

  /** The pipeline's step and listener names, in order (for tests and diagnostics). */
  get pipelineOrder(): { steps: string[]; listeners: string[] } {
    return { steps: this.pipeline.steps.map((s) => s.name), listeners: this.pipeline.listeners.map((l) => l.name) };
  }

  /**
   * Run `fn` in one transaction (see the contract above). On SQLite, transactions requested in
   * the same turn of the event loop share one database commit (group commit): one that fails is
   * undone alone (see `runGroup`), and none resolves before the shared COMMIT has succeeded. One
   * writer at a time is all SQLite allows anyway; sharing the commit spreads its cost (the WAL
   * write, and the fsync with synchronous=FULL) over the group.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (!this.direct) return this.transactionAlone(fn);
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve, reject } as PendingTx);
      if (!this.draining) {
        this.draining = true;
        // Let this turn's other requests queue up first: they join the same commit.
        setImmediate(() => void this.drainGroups());
      }
    });
  }

  /** PostgreSQL: each transaction on its own pooled connection, through Kysely. */
  private async transactionAlone<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    let tx: StoreTx | undefined;
    const result = await this.db.transaction().execute(async (trx) => {
      tx = this.newTx(trx);
      return this.runIn(tx, fn);
    });
    tx?.committed();
    if (tx && tx.changes.length > 0) this.emit(tx.changes);
    return result;
  }

  private newTx(db: Kysely<Database>): StoreTx {
    return new StoreTx(db, this.pipeline.steps, this.now, this.dialect, this.direct?.transaction);
  }

  /** Run one transaction's work in `tx`, then write what it deferred (before anything commits). */
  private async runIn<T>(tx: StoreTx, fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    const result = await fn(tx);
    await tx.flush();
    return result;
  }

  private async drainGroups(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.commitGroup();
    } finally {
      this.draining = false;
    }
  }

  /**
   * SQLite: commit the transactions at the head of the queue together. A group closes at
   * GROUP_MAX members or once its members have run for GROUP_BUDGET_MS: the first member's caller
   * waits for the last one's work, so a group of long transactions (worker steps) stays short.
   *
   * BEGIN, COMMIT and ROLLBACK run straight on the connection (counted like any statement); the
   * group holds Kysely's one connection meanwhile, so no other Kysely query runs inside its
   * transaction, and the members' own Kysely statements run on it (`conn`).
   */
  private async commitGroup(): Promise<void> {
    const direct = this.direct as SqliteConnection;
    try {
      await this.db.connection().execute((conn) => this.runGroup(conn, direct));
    } catch (err) {
      // The connection could not be had (the store is closing): the head of the queue fails.
      this.pending.shift()?.reject(err);
    }
  }

  /**
   * Members run one after another in one transaction, without savepoints (a savepoint costs
   * every page a member first touches a copy, docs/decisions.md). A member that fails having
   * written nothing needs no undo (a failed statement undoes itself). One that wrote is undone by
   * ROLLBACK, then BEGIN and the write log's replay of the members before it; the group then
   * commits what it has, so a run of failing members costs at most one replay per group. If
   * SQLite ends the transaction itself (I/O error, disk full, RAISE(ROLLBACK)), the members that
   * ran before in it fail with it.
   */
  private async runGroup(conn: Kysely<Database>, direct: SqliteConnection): Promise<void> {
    const run = (text: string) => direct.transaction(text, []);
    const started = this.groupClock();
    let replayed = false;
    const open = (members: number) =>
      !replayed &&
      this.pending.length > 0 &&
      members < GROUP_MAX &&
      (members === 0 || this.groupClock() - started < GROUP_BUDGET_MS);
    const done: Array<{ item: PendingTx; tx: StoreTx; result: unknown }> = [];
    const failed: Array<{ item: PendingTx; err: unknown }> = [];
    let begun = false;
    try {
      while (open(done.length + failed.length)) {
        if (!begun) {
          run('begin');
          direct.writes.start();
          begun = true;
        }
        const item = this.pending.shift() as PendingTx;
        const mark = direct.writes.length;
        let failure: { err: unknown } | undefined;
        try {
          const tx = this.newTx(conn);
          done.push({ item, tx, result: await this.runIn(tx, item.fn) });
        } catch (err) {
          failed.push({ item, err });
          failure = { err };
        }
        if (!direct.inTransaction()) {
          // SQLite ended the transaction (I/O error, disk full, RAISE(ROLLBACK)), perhaps under a
          // member that caught the error and went on: its later writes were refused (write-log.ts).
          if (done.length > 0) throw new Error("SQLite ended the group's transaction", { cause: failure?.err });
          begun = false;
          continue;
        }
        if (!failure || direct.writes.length === mark) continue;
        const version = this.dataVersion?.();
        run('rollback');
        direct.writes.truncate(mark);
        begun = done.length > 0;
        if (begun) {
          this.replay(run, direct, version);
          replayed = true;
        }
      }
      if (begun) run(done.length > 0 ? 'commit' : 'rollback');
    } catch (err) {
      // BEGIN, a replay or COMMIT failed, or SQLite ended the transaction: none of the group is committed.
      if (direct.inTransaction()) rollbackQuietly(run);
      if (done.length + failed.length === 0) this.pending.shift()?.reject(err);
      for (const { item } of done) item.reject(err);
      for (const f of failed) f.item.reject(f.err);
      return;
    } finally {
      direct.writes.stop();
    }
    if (done.length > 0) this.counted(done.length);
    for (const { item, tx, result } of done) {
      tx.committed();
      if (tx.changes.length > 0) this.emit(tx.changes);
      item.resolve(result);
    }
    for (const f of failed) f.item.reject(f.err);
  }

  /**
   * After the ROLLBACK: BEGIN and the writes of the members that succeeded, again. They were
   * computed from what the group's transaction read (`version`: its data_version); if another
   * connection committed since (a file not held exclusively), that state is gone, and so is the
   * group.
   */
  private replay(run: (text: string) => unknown, direct: SqliteConnection, version: number | undefined): void {
    run('begin');
    direct.writes.replay();
    if (this.dataVersion && this.dataVersion() !== version) {
      throw new Error('another connection wrote the database while a failed transaction was undone');
    }
  }

  private counted(transactions: number): void {
    try {
      this.onGroupCommit?.(transactions);
    } catch {
      // Counting must not turn a committed write into a reported failure.
    }
  }

  private emit(changes: RunChange[]): void {
    for (const l of this.pipeline.listeners) {
      try {
        l.committed?.(changes);
      } catch {
        // A listener failure must not turn a committed write into a reported failure.
      }
    }
  }

  /**
   * Delete terminal runs completed before `cutoff`, with everything of theirs (events,
   * interrupts, task records, replies, push configs and their secrets, deliveries), in batches;
   * not a child run whose parent has not ended.
   */
  async purgeTerminalBefore(cutoff: Date, batch = 500): Promise<number> {
    const iso = cutoff.toISOString();
    let total = 0;
    for (;;) {
      const ids = (
        await this.db
          .selectFrom('runs')
          .select('run_id')
          .where('status', 'in', TERMINAL)
          .where('completed_at', 'is not', null)
          .where('completed_at', '<', iso)
          // A child whose parent has not ended is kept: the parent still reads its outcome.
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('runs as parent')
                  .select('parent.run_id')
                  .whereRef('parent.run_id', '=', 'runs.parent_run_id')
                  .where('parent.status', 'not in', TERMINAL),
              ),
            ),
          )
          .limit(batch)
          .execute()
      ).map((r) => r.run_id);
      if (ids.length === 0) return total;
      await this.db.transaction().execute(async (trx) => {
        const secrets = await trx
          .selectFrom('push_configs')
          .select(['token_secret', 'credentials_secret'])
          .where('task_id', 'in', ids)
          .execute();
        const secretIds = secrets.flatMap((s) => [s.token_secret, s.credentials_secret]).filter((x) => x !== null);
        if (secretIds.length > 0) await trx.deleteFrom('secrets').where('secret_id', 'in', secretIds).execute();
        for (const table of ['push_outbox', 'push_configs', 'a2a_messages', 'a2a_tasks'] as const) {
          await trx.deleteFrom(table).where('task_id', 'in', ids).execute();
        }
        for (const table of [
          'event_batches',
          'run_values',
          'interrupts',
          'peer_waits',
          'notifications',
          'decision_links',
          'runs',
        ] as const) {
          await trx.deleteFrom(table).where('run_id', 'in', ids).execute();
        }
      });
      total += ids.length;
      for (const l of this.pipeline.listeners) l.purged?.(ids);
      // Let the transactions asked for meanwhile run before the next batch: on SQLite the purge's
      // statements never leave the event loop's turn, so without this a group waiting on
      // setImmediate (and every request) would wait for the whole purge.
      await nextTurn();
    }
  }

  /** Cheap liveness probe of the database connection. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async close(): Promise<void> {
    await this.destroyFn();
  }
}
