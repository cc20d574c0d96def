// The durable store: one implementation over Kysely for SQLite and PostgreSQL.
//
// Contract (what callers may rely on):
// - `transaction(fn)` runs `fn` in ONE database transaction. Everything written through the
//   `StoreTx` it receives commits together or not at all. After a successful commit, the
//   store calls every `onCommit` listener with the run changes of that transaction — never
//   before, never for a rolled-back transaction.
// - `commitRun` appends events with gap-free sequences and bumps `version`; it throws
//   `ConflictError` if the run changed since `before` was read (optimistic concurrency).
// - Transition hooks run inside the transaction of every run insert/commit, so derived
//   records (the A2A task projection, the push outbox) are written atomically with the run.
import { CompiledQuery, type Kysely, type Transaction, sql } from 'kysely';
import type { Database, EventsTable, RunsTable } from './db.js';
import { ConflictError } from './errors.js';
import type { IdempotencyRecord, InterruptRecord, NewEvent, RunEvent, RunRecord, RunStatus } from './model.js';
import { eventFromRow, interruptFromRow, interruptToRow, runFromRow, runToRow } from './rows.js';
import { type Statement, statement, statementPerCount } from './statements.js';

export type Dialect = 'sqlite' | 'postgres';

/** A run change as committed: the new snapshot and the events appended with it. */
export interface RunChange {
  before?: RunRecord;
  run: RunRecord;
  events: RunEvent[];
}

export type TransitionHook = (tx: StoreTx, change: RunChange) => Promise<void>;
export type CommitListener = (changes: RunChange[]) => void;

/** Fields of a run the engine may change in one commit. */
export type RunPatch = Partial<
  Pick<
    RunRecord,
    'status' | 'state' | 'cursor' | 'error' | 'wakeAt' | 'leaseOwner' | 'leaseExpiresAt' | 'completedAt' | 'metadata'
  >
>;

export type NewRun = Omit<RunRecord, 'nextSeq' | 'version' | 'updatedAt' | 'leaseOwner' | 'leaseExpiresAt'> & {
  leaseOwner?: string;
  leaseExpiresAt?: number;
};

const RUNNABLE: RunStatus[] = ['pending', 'running', 'cancelling'];

/** Number new events from `firstSeq`, all stamped `at`. */
function numberEvents(runId: string, firstSeq: number, events: NewEvent[], at: string): RunEvent[] {
  return events.map(
    (e, i): RunEvent => ({
      runId,
      sequence: firstSeq + i,
      type: e.type,
      ...(e.nodeId !== undefined ? { nodeId: e.nodeId } : {}),
      payload: e.payload ?? {},
      timestamp: at,
    }),
  );
}

/** The record exactly as reading its row back would give it (JSON round trip, absent optionals). */
function normalize(run: RunRecord): RunRecord {
  return runFromRow(runToRow(run));
}

/** A transaction waiting for its group commit. */
interface PendingTx {
  fn: (tx: StoreTx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Most transactions one SQLite commit carries, and how long its members may run in all. */
const GROUP_MAX = 64;
const GROUP_BUDGET_MS = 3;
const SAVEPOINT = CompiledQuery.raw('savepoint handoff_group');
const RELEASE = CompiledQuery.raw('release handoff_group');
const ROLLBACK_TO = CompiledQuery.raw('rollback to handoff_group');

// The statements of every state change and task read, as fixed SQL (see statements.ts).
const RUN_COLUMNS = [
  'run_id',
  'tenant_id',
  'principal_id',
  'workflow_id',
  'status',
  'inputs',
  'state',
  'cursor',
  'error',
  'tags',
  'metadata',
  'next_seq',
  'version',
  'lease_owner',
  'lease_expires_at',
  'wake_at',
  'created_at',
  'updated_at',
  'completed_at',
] as const satisfies ReadonlyArray<keyof RunsTable>;
// Every column of runs is written on insert: a column added to RunsTable must be added here.
const allRunColumns: [Exclude<keyof RunsTable, (typeof RUN_COLUMNS)[number]>] extends [never] ? true : never = true;
void allRunColumns;
const GET_RUN = statement('select * from "runs" where "run_id" = ?');
const GET_RUN_FOR_UPDATE = statement('select * from "runs" where "run_id" = ? for update');
const INSERT_RUN = statement(
  `insert into "runs" (${RUN_COLUMNS.map((c) => `"${c}"`).join(', ')}) values (${RUN_COLUMNS.map(() => '?').join(', ')})`,
);
/** What a commit may change (RunPatch) plus the bookkeeping; identity, inputs and tags never change. */
const COMMIT_COLUMNS = [
  'status',
  'state',
  'cursor',
  'error',
  'metadata',
  'next_seq',
  'version',
  'wake_at',
  'completed_at',
  'updated_at',
] as const;
const LEASE_COLUMNS = ['lease_owner', 'lease_expires_at'] as const;
const commitStatement = (withLease: boolean, fenced: boolean): Statement =>
  statement(
    `update "runs" set ${[...COMMIT_COLUMNS, ...(withLease ? LEASE_COLUMNS : [])].map((c) => `"${c}" = ?`).join(', ')}` +
      ` where "run_id" = ? and "version" = ?${fenced ? ' and "lease_owner" = ?' : ''} returning *`,
  );
const COMMIT_RUN = [
  commitStatement(false, false),
  commitStatement(false, true),
  commitStatement(true, false),
  commitStatement(true, true),
];
const INSERT_EVENTS = statementPerCount(
  (n) =>
    `insert into "events" ("run_id", "seq", "type", "node_id", "payload", "created_at") values ${Array(n).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`,
);
const LIST_EVENTS = statement('select * from "events" where "run_id" = ? and "seq" > ? order by "seq" limit ?');
const EVENTS_OF_TYPES = statementPerCount(
  (n) => `select * from "events" where "run_id" = ? and "type" in (${Array(n).fill('?').join(', ')}) order by "seq"`,
);

export class StoreTx {
  readonly changes: RunChange[] = [];
  /** Runs inserted with `defer` whose rows are still only here; written by `flush()`. */
  private readonly deferred = new Map<string, { run: RunRecord; events: RunEvent[] }>();
  constructor(
    readonly db: Transaction<Database>,
    private readonly hooks: TransitionHook[],
    private readonly now: () => Date,
    readonly dialect: Dialect,
  ) {}

  /**
   * Read a run inside the transaction. `forUpdate` locks the row on PostgreSQL until commit, so a
   * busy worker's next commit waits for this transaction instead of making it retry forever
   * (SQLite transactions are serialized anyway).
   */
  async getRun(runId: string, opts: { forUpdate?: boolean } = {}): Promise<RunRecord | undefined> {
    const pending = this.deferred.get(runId);
    if (pending) return pending.run;
    const query = opts.forUpdate && this.dialect === 'postgres' ? GET_RUN_FOR_UPDATE : GET_RUN;
    const { rows } = await this.db.executeQuery(query.with<RunsTable>(this.dialect, [runId]));
    return rows[0] && runFromRow(rows[0]);
  }

  /**
   * Insert a new run with its first events (sequence 0…). With `defer`, the row and events stay
   * in memory until `flush()` (which `Store.transaction` calls before committing), and commits to
   * the run in between only change that copy: a run created and advanced in one transaction is
   * written once, in its final state, and the transition hooks see one change from nothing to it.
   */
  async insertRun(run: NewRun, events: NewEvent[], opts: { defer?: boolean } = {}): Promise<RunChange> {
    const at = this.now().toISOString();
    const full: RunRecord = { ...run, nextSeq: events.length, version: 1, updatedAt: at };
    if (opts.defer) {
      const pending = { run: normalize(full), events: numberEvents(run.runId, 0, events, at) };
      this.deferred.set(run.runId, pending);
      return { run: pending.run, events: pending.events };
    }
    return this.writeNewRun(full, numberEvents(run.runId, 0, events, at));
  }

  /** Insert a run's row and its events as they are, then run the transition hooks. */
  private async writeNewRun(run: RunRecord, events: RunEvent[]): Promise<RunChange> {
    const row = runToRow(run);
    await this.db.executeQuery(
      INSERT_RUN.with(
        this.dialect,
        RUN_COLUMNS.map((c) => row[c]),
      ),
    );
    await this.writeEvents(events);
    return this.record({ run, events });
  }

  /**
   * Apply `patch` to the run read as `before`, appending `events` after its last sequence.
   * Lease columns are written only when the patch names them (the worker renews its lease in the
   * background; writing `before`'s stale expiry back would shorten it). With `owner`, the commit
   * also requires that this worker still holds the lease (fencing a worker that lost it).
   */
  async commitRun(
    before: RunRecord,
    patch: RunPatch,
    events: NewEvent[],
    opts: { owner?: string } = {},
  ): Promise<RunChange> {
    const at = this.now().toISOString();
    const merged: RunRecord = {
      ...before,
      ...patch,
      nextSeq: before.nextSeq + events.length,
      version: before.version + 1,
      updatedAt: at,
    };
    const pending = this.deferred.get(before.runId);
    if (pending) {
      if (
        pending.run.version !== before.version ||
        (opts.owner !== undefined && pending.run.leaseOwner !== opts.owner)
      ) {
        throw new ConflictError(`run ${before.runId} changed concurrently`);
      }
      const appended = numberEvents(before.runId, before.nextSeq, events, at);
      pending.run = normalize(merged);
      pending.events.push(...appended);
      return { before, run: pending.run, events: appended };
    }
    const row = runToRow(merged);
    const withLease = 'leaseOwner' in patch || 'leaseExpiresAt' in patch;
    const fenced = opts.owner !== undefined;
    const params = [
      ...COMMIT_COLUMNS.map((c) => row[c]),
      ...(withLease ? LEASE_COLUMNS.map((c) => row[c]) : []),
      before.runId,
      before.version,
      ...(fenced ? [opts.owner] : []),
    ];
    const query = COMMIT_RUN[(withLease ? 2 : 0) + (fenced ? 1 : 0)] as Statement;
    const updated = (await this.db.executeQuery(query.with<RunsTable>(this.dialect, params))).rows[0];
    if (!updated) throw new ConflictError(`run ${before.runId} changed concurrently`);
    const after = runFromRow(updated);
    const appended = await this.insertEvents(before.runId, before.nextSeq, events, at);
    return this.record({ before, run: after, events: appended });
  }

  /** The whole event log so far of a run inserted with `defer` in this transaction (a copy). */
  deferredEvents(runId: string): RunEvent[] | undefined {
    const pending = this.deferred.get(runId);
    return pending && [...pending.events];
  }

  /** Write the runs inserted with `defer`, each in its final state, and run their hooks. */
  async flush(): Promise<void> {
    for (const [runId, { run, events }] of this.deferred) {
      this.deferred.delete(runId);
      await this.writeNewRun(run, events);
    }
  }

  private async insertEvents(runId: string, firstSeq: number, events: NewEvent[], at: string): Promise<RunEvent[]> {
    const out = numberEvents(runId, firstSeq, events, at);
    await this.writeEvents(out);
    return out;
  }

  private async writeEvents(out: RunEvent[]): Promise<void> {
    if (out.length === 0) return;
    const params = out.flatMap((e) => [
      e.runId,
      e.sequence,
      e.type,
      e.nodeId ?? null,
      JSON.stringify(e.payload),
      e.timestamp,
    ]);
    await this.db.executeQuery(INSERT_EVENTS(out.length).with(this.dialect, params));
  }

  private async record(change: RunChange): Promise<RunChange> {
    for (const hook of this.hooks) await hook(this, change);
    this.changes.push(change);
    return change;
  }

  async getOpenInterrupt(runId: string, nodeId?: string): Promise<InterruptRecord | undefined> {
    let q = this.db.selectFrom('interrupts').selectAll().where('run_id', '=', runId).where('status', '=', 'open');
    if (nodeId !== undefined) q = q.where('node_id', '=', nodeId);
    const row = await q.executeTakeFirst();
    return row && interruptFromRow(row);
  }

  async getLatestInterrupt(runId: string, nodeId: string): Promise<InterruptRecord | undefined> {
    const row = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', '=', runId)
      .where('node_id', '=', nodeId)
      .orderBy('created_at', 'desc')
      .orderBy('interrupt_id', 'desc')
      .executeTakeFirst();
    return row && interruptFromRow(row);
  }

  async insertInterrupt(rec: InterruptRecord): Promise<void> {
    await this.db.insertInto('interrupts').values(interruptToRow(rec)).execute();
  }

  /** Update an interrupt still in `expectStatus`; false if someone else changed it first. */
  async updateInterrupt(rec: InterruptRecord, expectStatus: InterruptRecord['status']): Promise<boolean> {
    const row = interruptToRow(rec);
    const res = await this.db
      .updateTable('interrupts')
      .set({
        status: row.status,
        votes: row.votes,
        exchanges: row.exchanges,
        resolution: row.resolution,
        resolved_by: row.resolved_by,
        resolved_at: row.resolved_at,
      })
      .where('interrupt_id', '=', rec.interruptId)
      .where('status', '=', expectStatus)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async cancelOpenInterrupts(runId: string): Promise<void> {
    await this.db
      .updateTable('interrupts')
      .set({ status: 'cancelled', resolved_at: this.now().toISOString() })
      .where('run_id', '=', runId)
      .where('status', '=', 'open')
      .execute();
  }

  async getIdempotency(tenantId: string, scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.db
      .selectFrom('idempotency')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      tenantId: row.tenant_id,
      scope: row.scope,
      key: row.key,
      bodyHash: row.body_hash,
      statusCode: row.status_code,
      response: JSON.parse(row.response),
      createdAt: row.created_at,
    };
  }

  /** Insert an idempotency record; the primary key makes a concurrent duplicate fail the tx. */
  async putIdempotency(rec: Omit<IdempotencyRecord, 'createdAt'>): Promise<void> {
    await this.db
      .insertInto('idempotency')
      .values({
        tenant_id: rec.tenantId,
        scope: rec.scope,
        key: rec.key,
        body_hash: rec.bodyHash,
        status_code: rec.statusCode,
        response: JSON.stringify(rec.response),
        created_at: this.now().toISOString(),
      })
      .execute();
  }
}

export interface StoreOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  now?: () => Date;
  /** Closes the underlying driver (pool / file). */
  destroy: () => Promise<void>;
  /** SQLite's `data_version`: changes when another connection (process) commits to the file. */
  dataVersion?: () => number;
}

export class Store {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  private readonly hooks: TransitionHook[] = [];
  private readonly listeners: CommitListener[] = [];
  private readonly now: () => Date;
  private readonly destroyFn: () => Promise<void>;

  constructor(opts: StoreOptions) {
    this.db = opts.db;
    this.dialect = opts.dialect;
    this.now = opts.now ?? (() => new Date());
    this.destroyFn = opts.destroy;
    this.dataVersion = opts.dataVersion;
  }

  /**
   * Where defined, this process's own commits are all announced to `onCommit` and `onPurge`
   * listeners, and the returned number changes when anything else writes the database — what a
   * read cache needs to stay exact. Undefined on PostgreSQL (other instances write the same rows).
   */
  readonly dataVersion: (() => number) | undefined;

  /** Register a hook run inside every transaction that inserts or changes a run. */
  addTransitionHook(hook: TransitionHook): void {
    this.hooks.push(hook);
  }

  /** Register a listener called after every successful commit that changed runs. */
  onCommit(listener: CommitListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /**
   * Run `fn` in one transaction (see the contract above). On SQLite, transactions requested in
   * the same turn of the event loop share one database commit (group commit): each runs in its
   * own savepoint, so one that fails is rolled back alone, and none resolves before the shared
   * COMMIT has succeeded. One writer at a time is all SQLite allows anyway; sharing the commit
   * spreads its cost (the WAL write, and the fsync with synchronous=FULL) over the group.
   */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (this.dialect !== 'sqlite') return this.transactionAlone(fn);
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ fn, resolve, reject } as PendingTx);
      if (!this.draining) {
        this.draining = true;
        // Let this turn's other requests queue up first: they join the same commit.
        setImmediate(() => void this.drainGroups());
      }
    });
  }

  private readonly pending: PendingTx[] = [];
  private draining = false;

  private async transactionAlone<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    let tx: StoreTx | undefined;
    const result = await this.db.transaction().execute(async (trx) => {
      tx = new StoreTx(trx, this.hooks, this.now, this.dialect);
      return this.runIn(tx, fn);
    });
    if (tx && tx.changes.length > 0) this.emit(tx.changes);
    return result;
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
   * Commit the transactions at the head of the queue together. A group closes at GROUP_MAX
   * members or once its members have run for GROUP_BUDGET_MS: the first member's caller waits
   * for the last one's work, so a group of long transactions (worker steps) stays short.
   */
  private async commitGroup(): Promise<void> {
    if (this.pending.length === 1) {
      const only = this.pending.shift() as PendingTx;
      return this.transactionAlone(only.fn).then(only.resolve, only.reject);
    }
    const started = performance.now();
    const open = (members: number) =>
      this.pending.length > 0 &&
      members < GROUP_MAX &&
      (members === 0 || performance.now() - started < GROUP_BUDGET_MS);
    const done: Array<{ item: PendingTx; tx: StoreTx; result: unknown }> = [];
    const failed: Array<{ item: PendingTx; err: unknown }> = [];
    try {
      await this.db.transaction().execute(async (trx) => {
        while (open(done.length + failed.length)) {
          const item = this.pending.shift() as PendingTx;
          const tx = new StoreTx(trx, this.hooks, this.now, this.dialect);
          await trx.executeQuery(SAVEPOINT);
          try {
            const result = await this.runIn(tx, item.fn);
            await trx.executeQuery(RELEASE);
            done.push({ item, tx, result });
          } catch (err) {
            // Undo this one alone. If SQLite already rolled the whole transaction back (I/O
            // error, disk full), this throws and the whole group fails below: none committed.
            failed.push({ item, err });
            await trx.executeQuery(ROLLBACK_TO);
            await trx.executeQuery(RELEASE);
          }
        }
      });
    } catch (err) {
      // The group's transaction failed (BEGIN or COMMIT): none of it is committed.
      if (done.length + failed.length === 0) this.pending.shift()?.reject(err);
      for (const { item } of done) item.reject(err);
      for (const f of failed) f.item.reject(f.err);
      return;
    }
    for (const { item, tx, result } of done) {
      if (tx.changes.length > 0) this.emit(tx.changes);
      item.resolve(result);
    }
    for (const f of failed) f.item.reject(f.err);
  }

  private emit(changes: RunChange[]): void {
    for (const l of this.listeners) {
      try {
        l(changes);
      } catch {
        // A listener failure must not turn a committed write into a reported failure.
      }
    }
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    const { rows } = await this.db.executeQuery(GET_RUN.with<RunsTable>(this.dialect, [runId]));
    return rows[0] && runFromRow(rows[0]);
  }

  /** Events with sequence > afterSeq, in order, at most `limit`. */
  async listEvents(runId: string, afterSeq = -1, limit = 1000): Promise<RunEvent[]> {
    const { rows } = await this.db.executeQuery(LIST_EVENTS.with<EventsTable>(this.dialect, [runId, afterSeq, limit]));
    return rows.map(eventFromRow);
  }

  async listEventsOfType(runId: string, type: string): Promise<RunEvent[]> {
    return this.listEventsOfTypes(runId, [type]);
  }

  /** Events of any of `types`, in sequence order (one read for several kinds). */
  async listEventsOfTypes(runId: string, types: string[]): Promise<RunEvent[]> {
    if (types.length === 0) return [];
    const { rows } = await this.db.executeQuery(
      EVENTS_OF_TYPES(types.length).with<EventsTable>(this.dialect, [runId, ...types]),
    );
    return rows.map(eventFromRow);
  }

  async listInterrupts(runId: string): Promise<InterruptRecord[]> {
    const rows = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('created_at')
      .execute();
    return rows.map(interruptFromRow);
  }

  async getOpenInterrupt(runId: string): Promise<InterruptRecord | undefined> {
    const row = await this.db
      .selectFrom('interrupts')
      .selectAll()
      .where('run_id', '=', runId)
      .where('status', '=', 'open')
      .executeTakeFirst();
    return row && interruptFromRow(row);
  }

  /**
   * Lease up to `limit` runs that want a worker now: runnable status, timer due, and no live
   * lease. Atomic on both dialects (a single UPDATE; SKIP LOCKED on PostgreSQL).
   */
  async claimRuns(owner: string, leaseMs: number, limit: number): Promise<RunRecord[]> {
    const now = this.now().getTime();
    let candidates = this.db
      .selectFrom('runs')
      .select('run_id')
      .where('status', 'in', RUNNABLE)
      .where((eb) => eb.or([eb('wake_at', 'is', null), eb('wake_at', '<=', now)]))
      .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', now)]))
      .orderBy('updated_at')
      .limit(limit);
    if (this.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
    const rows = await this.db
      .updateTable('runs')
      .set({ lease_owner: owner, lease_expires_at: now + leaseMs })
      .where('run_id', 'in', candidates)
      .returningAll()
      .execute();
    return rows.map(runFromRow);
  }

  /** Extend a lease this owner still holds; false if it was lost. */
  async renewLease(runId: string, owner: string, leaseMs: number): Promise<boolean> {
    const res = await this.db
      .updateTable('runs')
      .set({ lease_expires_at: this.now().getTime() + leaseMs })
      .where('run_id', '=', runId)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async releaseLease(runId: string, owner: string): Promise<void> {
    await this.db
      .updateTable('runs')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('run_id', '=', runId)
      .where('lease_owner', '=', owner)
      .execute();
  }

  async releaseAllLeases(owner: string): Promise<number> {
    const res = await this.db
      .updateTable('runs')
      .set({ lease_owner: null, lease_expires_at: null })
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /**
   * When the worker should next look for work: the earliest moment a runnable run becomes
   * claimable — its timer is due AND any lease on it has expired (a run leased by someone else
   * is not claimable before its lease ends, so waking for its timer alone would busy-loop).
   */
  async nextWakeAt(): Promise<number | undefined> {
    const later =
      this.dialect === 'postgres'
        ? sql<number>`greatest(coalesce(wake_at, 0), coalesce(lease_expires_at, 0))`
        : sql<number>`max(coalesce(wake_at, 0), coalesce(lease_expires_at, 0))`;
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.min(later).as('next'))
      .where('status', 'in', RUNNABLE)
      .where((eb) => eb.or([eb('wake_at', 'is not', null), eb('lease_expires_at', 'is not', null)]))
      .executeTakeFirst();
    return row?.next == null ? undefined : Number(row.next);
  }

  /** Delete terminal runs completed before `cutoff`, with everything of theirs. */
  async purgeTerminalBefore(cutoff: Date, batch = 500): Promise<number> {
    const iso = cutoff.toISOString();
    let total = 0;
    for (;;) {
      const ids = (
        await this.db
          .selectFrom('runs')
          .select('run_id')
          .where('status', 'in', ['completed', 'failed', 'cancelled'])
          .where('completed_at', 'is not', null)
          .where('completed_at', '<', iso)
          .limit(batch)
          .execute()
      ).map((r) => r.run_id);
      if (ids.length === 0) return total;
      await this.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('events').where('run_id', 'in', ids).execute();
        await trx.deleteFrom('interrupts').where('run_id', 'in', ids).execute();
        for (const purge of this.purgeHooks) await purge(trx, ids);
        await trx.deleteFrom('runs').where('run_id', 'in', ids).execute();
      });
      total += ids.length;
      for (const l of this.purgeListeners) l(ids);
    }
  }

  private readonly purgeListeners: Array<(runIds: string[]) => void> = [];

  /** Register a listener called after runs were purged (their deletion committed). */
  onPurge(listener: (runIds: string[]) => void): void {
    this.purgeListeners.push(listener);
  }

  private readonly purgeHooks: Array<(trx: Transaction<Database>, runIds: string[]) => Promise<void>> = [];

  /** Let tables added by higher layers (A2A records, push configs) be purged with their run. */
  addPurgeHook(hook: (trx: Transaction<Database>, runIds: string[]) => Promise<void>): void {
    this.purgeHooks.push(hook);
  }

  async purgeIdempotencyBefore(cutoff: Date): Promise<void> {
    await this.db.deleteFrom('idempotency').where('created_at', '<', cutoff.toISOString()).execute();
  }

  async countRuns(): Promise<number> {
    const row = await this.db
      .selectFrom('runs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Cheap liveness probe of the database connection. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async close(): Promise<void> {
    await this.destroyFn();
  }
}
