// One store transaction as its work sees it: the run writes (the only way a run's snapshot and
// log change) and the repositories of every other table, all bound to the same transaction.
//
//   await store.transaction(async (tx) => {
//     const run = await tx.getRun(id, { forUpdate: true });
//     await tx.interrupts.insert(…);
//     await tx.commitRun(run, { status: 'waiting-approval' }, [{ type: 'interrupt.requested', … }]);
//   });
import type { Kysely } from 'kysely';
import type { Database, RunsTable } from './db.js';
import { ConflictError } from './errors.js';
import { isTerminal, type NewEvent, type RunEvent, type RunRecord } from './model.js';
import { runRows } from './rows.js';
import { sentAhead } from './pg-driver.js';
import { Events } from './repos/events.js';
import { TxInterrupts } from './repos/interrupts.js';
import { TxPushConfigs } from './repos/push-configs.js';
import { TxTaskRecords } from './repos/task-records.js';
import type { Dialect } from './repos/repo.js';
import { ACTIVE_CHILDREN, GET_RUN } from './repos/runs.js';
import { normalized } from './json-value.js';
import { carryHolding, encodeRecorded, type NewValue, noteLarge, notedSoFar, ValueWriter } from './recorded.js';
import { holdsRecorded, RunValues } from './repos/run-values.js';
import { Tables } from './repos/tables.js';
import type { NewAuditEntry } from './repos/audit.js';
import { type SqliteDirect, type Statement, type StatementResult, statement } from './statements.js';

/** A run change as committed: the new snapshot and the events appended with it. */
export interface RunChange {
  before?: RunRecord;
  run: RunRecord;
  events: RunEvent[];
}

/** One step of the transition pipeline: runs inside the transaction of every run change. */
export interface TransitionStep {
  readonly name: string;
  run(tx: StoreTx, change: RunChange): Promise<void>;
}

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

// The statements of every state change, as fixed SQL (see statements.ts).
const RUN_COLUMNS = runRows.columns;
const GET_RUN_FOR_UPDATE = statement('select * from "runs" where "run_id" = ? for update');
const LOCK_RUN = statement('select "run_id" from "runs" where "run_id" = ? for update');
const ACTIVE_CHILD_RUNS = statement(`select * from "runs" where ${ACTIVE_CHILDREN} order by "created_at", "run_id"`);
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
/**
 * The one UPDATE of a run a transaction committed to (see `flush`): version-checked against the
 * snapshot the transaction first read, fenced by a lease owner when a commit asked. It returns
 * only the lease, which a worker renews beside the transaction; everything else is what was written.
 */
const commitStatement = (withLease: boolean, fenced: boolean): Statement =>
  statement(
    `update "runs" set ${[...COMMIT_COLUMNS, ...(withLease ? LEASE_COLUMNS : [])].map((c) => `"${c}" = ?`).join(', ')}` +
      ` where "run_id" = ? and "version" = ?${fenced ? ' and "lease_owner" = ?' : ''}` +
      ' returning "lease_owner", "lease_expires_at"',
  );
const COMMIT_RUN = [
  commitStatement(false, false),
  commitStatement(false, true),
  commitStatement(true, false),
  commitStatement(true, true),
];
/** RunPatch fields stored as JSON text: a commit normalizes them as reading them back would. */
const JSON_FIELDS = ['state', 'cursor', 'error', 'metadata'] as const;
/**
 * The JSON text of a run's JSON columns as a deferred insert encoded them, by column (each such
 * column is one word, so also its field): the row is written from that text while the record
 * still holds the value parsed from it (inputs and tags always: no commit changes them). Commits
 * encode nothing: their JSON columns are stringified once, when the row is written.
 */
type Encoded = Partial<Record<string, { value: unknown; text: string }>>;
/**
 * Records holding a caller's values as given: the one a run inserted without `defer` hands back
 * (its fields are the caller's objects), and the commits from it. Every other record the store
 * hands out is normalized (read back, or built as reading back would give it), and a commit reuses
 * the parts of it the patch still holds (applyPatch); from these it reuses nothing.
 */
const asGiven = new WeakSet<RunRecord>();

type Lease = Pick<RunsTable, 'lease_owner' | 'lease_expires_at'>;

/** A run this transaction committed to: its row and new events are written once, by `flush`. */
interface HeldRun {
  /** The version the transaction's first commit expected (checked by the one UPDATE). */
  readonly firstVersion: number;
  /** The lease owner the database must still show (a fenced commit's). */
  owner?: string;
  /** Whether any commit changed the lease columns (then they are written too). */
  withLease: boolean;
  run: RunRecord;
  events: RunEvent[];
}

/** Number new events from `firstSeq`, all stamped `at`. */
function numberEvents(runId: string, firstSeq: number, events: NewEvent[], at: string): RunEvent[] {
  // Two literals, not a conditional spread (slow on Node 20: src/engine/spread.ts); same key order.
  return events.map(
    (e, i): RunEvent =>
      e.nodeId !== undefined
        ? { runId, sequence: firstSeq + i, type: e.type, nodeId: e.nodeId, payload: e.payload ?? {}, timestamp: at }
        : { runId, sequence: firstSeq + i, type: e.type, payload: e.payload ?? {}, timestamp: at },
  );
}

/**
 * The record exactly as reading its row back would give it (JSON round trip, absent optionals),
 * and the text of its JSON columns.
 */
function normalize(run: RunRecord): { run: RunRecord; encoded: Encoded } {
  const row = runRows.toRow(run);
  const read = runRows.fromRow(row);
  const encoded: Encoded = {};
  for (const c of runRows.json) {
    const text = row[c];
    if (typeof text === 'string') encoded[c] = { value: read[c as keyof RunRecord], text };
  }
  return { run: read, encoded };
}

/**
 * `before` (a record the store handed out) with `patch` applied, as reading the row back would
 * give it: only the patched fields need normalizing (undefined and null removed; JSON fields as
 * their JSON round trip would give them, reusing the parts of `before` the patch still holds: see
 * `normalized`). No JSON text is made here: the row is written once, at the end of the
 * transaction, from the record then.
 */
function applyPatch(before: RunRecord, patch: RunPatch, bookkeeping: Partial<RunRecord>): RunRecord {
  // Object.assign, not a spread: on Node 20 a spread of a record this size with keys after it
  // leaves V8's fast clone path and costs microseconds per commit.
  const merged: Record<string, unknown> = Object.assign<
    Record<string, unknown>,
    RunRecord,
    RunPatch,
    Partial<RunRecord>
  >({}, before, patch, bookkeeping);
  const given = asGiven.has(before);
  for (const [field, value] of Object.entries(patch)) {
    if (value === undefined || value === null) {
      delete merged[field];
    } else if ((JSON_FIELDS as readonly string[]).includes(field)) {
      const prev = before[field as keyof RunRecord];
      if (field === 'state' || field === 'error') {
        // Long texts made by the round trip are kept for the write (src/store/recorded.ts).
        const notes = notedSoFar();
        merged[field] = normalized(value, given ? undefined : prev, noteLarge);
        carryHolding(prev, merged[field], notedSoFar() !== notes);
      } else {
        merged[field] = normalized(value, given ? undefined : prev);
      }
    }
  }
  const run = merged as unknown as RunRecord;
  if (given) asGiven.add(run);
  return run;
}

/**
 * The values of `columns` of `run` as written, taking a JSON column's text from `encoded` when
 * there. The state and the error may hold large parts: those go on `parts`, to be stored first,
 * and the columns refer to them (src/store/recorded.ts).
 */
function columnValues(
  run: RunRecord,
  columns: readonly (keyof RunsTable & string)[],
  writer: ValueWriter,
  parts: NewValue[],
  encoded?: Encoded,
): unknown[] {
  return columns.map((c) => {
    const known = encoded?.[c];
    const text = known && known.value === run[c as keyof RunRecord] ? known.text : undefined;
    if (c === 'state' || c === 'error') {
      const value = run[c];
      return value === undefined ? null : encodeRecorded(value, run.runId, writer, parts, text);
    }
    return text ?? runRows.column(run, c);
  });
}

export class StoreTx extends Tables {
  readonly changes: RunChange[] = [];
  #tasks?: TxTaskRecords;
  #pushConfigs?: TxPushConfigs;
  #interrupts?: TxInterrupts;
  private readonly events: Events;
  #values?: RunValues;
  /** The large parts this transaction stores (src/store/recorded.ts). */
  private readonly writer = new ValueWriter();
  /** Runs inserted by this transaction (nothing of theirs existed before it). */
  private readonly created = new Set<string>();
  /** Runs inserted with `defer` whose rows are still only here; written by `flush()`. */
  private readonly deferred = new Map<string, { run: RunRecord; events: RunEvent[]; encoded: Encoded }>();
  /** Runs committed to in this transaction; their one UPDATE and one INSERT of events wait for `flush()`. */
  private readonly held = new Map<string, HeldRun>();
  /** The acts this transaction records in the audit log, appended last by `flush()`. */
  private readonly audited: NewAuditEntry[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly steps: readonly TransitionStep[],
    private readonly now: () => Date,
    readonly dialect: Dialect,
    /** SQLite: the connection, which this transaction holds (statements.ts). */
    private readonly direct?: SqliteDirect,
  ) {
    super(db, dialect, now, direct);
    this.events = new Events(db, dialect, now, direct);
  }

  /** The parts of runs stored by reference, made on first use (most transactions have none). */
  private get values(): RunValues {
    this.#values ??= new RunValues(...this.repoArgs);
    return this.#values;
  }

  // This transaction's views of the tables it may change, each made on first use (Tables).
  override get tasks(): TxTaskRecords {
    this.#tasks ??= new TxTaskRecords(...this.repoArgs);
    return this.#tasks;
  }

  override get pushConfigs(): TxPushConfigs {
    this.#pushConfigs ??= new TxPushConfigs(this.db, this.dialect, this.now, this.createdHere, this.direct);
    return this.#pushConfigs;
  }

  override get interrupts(): TxInterrupts {
    this.#interrupts ??= new TxInterrupts(this.db, this.dialect, this.now, this.createdHere, this.direct);
    return this.#interrupts;
  }

  private readonly createdHere = (runId: string): boolean => this.created.has(runId);

  /** Run a fixed statement in this transaction (straight on the SQLite connection there). */
  private async exec<R>(query: Statement, params: readonly unknown[]): Promise<StatementResult<R>> {
    return this.direct?.<R>(query.text, params) ?? this.db.executeQuery(query.with<R>(this.dialect, params));
  }

  /**
   * Read a run inside the transaction. `forUpdate` locks the row on PostgreSQL until commit, so a
   * busy worker's next commit waits for this transaction instead of making it retry forever
   * (SQLite transactions are serialized anyway).
   */
  async getRun(runId: string, opts: { forUpdate?: boolean } = {}): Promise<RunRecord | undefined> {
    const pending = this.deferred.get(runId) ?? this.held.get(runId);
    if (pending) return pending.run;
    const query = opts.forUpdate && this.dialect === 'postgres' ? GET_RUN_FOR_UPDATE : GET_RUN;
    const { rows } = await this.exec<RunsTable>(query, [runId]);
    const run = rows[0] && runRows.fromRow(rows[0]);
    return run && holdsRecorded(run) ? this.values.read(run) : run;
  }

  /**
   * The children of `parentRunId` that have not ended, oldest first, as this transaction sees them
   * (its own commits to them included). On PostgreSQL the parent's row is locked first: a child is
   * started under that lock (Engine.startChildren), so one being started now is committed before
   * this reads, and seen. The children are not locked: a commit to one is version-checked like any.
   */
  async childRuns(parentRunId: string): Promise<RunRecord[]> {
    if (this.dialect === 'postgres') await this.exec(LOCK_RUN, [parentRunId]);
    const { rows } = await this.exec<RunsTable>(ACTIVE_CHILD_RUNS, [parentRunId]);
    const listed = new Set(rows.map((r) => r.run_id));
    const runs: RunRecord[] = [];
    for (const row of rows) {
      const held = (this.deferred.get(row.run_id) ?? this.held.get(row.run_id))?.run;
      const read = held ?? runRows.fromRow(row);
      // A child committed to is written whole again: its parts stored by reference are read in.
      runs.push(held || !holdsRecorded(read) ? read : await this.values.read(read));
    }
    // Inserted by this transaction and not written yet: not in the table.
    for (const { run } of this.deferred.values())
      if (run.parentRunId === parentRunId && !listed.has(run.runId)) runs.push(run);
    return runs.filter((r) => !isTerminal(r.status));
  }

  /**
   * Insert a new run with its first events (sequence 0…). With `defer`, the row and events stay
   * in memory until `flush()` (which `Store.transaction` calls before committing), and commits to
   * the run in between only change that copy: a run created and advanced in one transaction is
   * written once, in its final state, and the transition steps see one change from nothing to it.
   */
  async insertRun(run: NewRun, events: NewEvent[], opts: { defer?: boolean } = {}): Promise<RunChange> {
    const at = this.now().toISOString();
    this.created.add(run.runId);
    // Object.assign, not spreads: see applyPatch.
    const full: RunRecord = Object.assign<Record<string, unknown>, NewRun, Partial<RunRecord>>({}, run, {
      nextSeq: events.length,
      version: 1,
      updatedAt: at,
    }) as RunRecord;
    if (opts.defer) {
      const { run: normalized, encoded } = normalize(full);
      const pending = { run: normalized, encoded, events: numberEvents(run.runId, 0, events, at) };
      this.deferred.set(run.runId, pending);
      return { run: pending.run, events: pending.events };
    }
    asGiven.add(full);
    return this.writeNewRun(full, numberEvents(run.runId, 0, events, at));
  }

  /** Insert a run's row and its events as they are, then run the transition steps. */
  private async writeNewRun(run: RunRecord, events: RunEvent[], encoded?: Encoded): Promise<RunChange> {
    const parts: NewValue[] = [];
    const values = columnValues(run, RUN_COLUMNS, this.writer, parts, encoded);
    if (parts.length > 0) await this.values.store(parts);
    // No result is read: on PostgreSQL it goes out with the transaction's next awaited statement.
    if (!this.direct?.(INSERT_RUN.text, values))
      await this.db.executeQuery(sentAhead(INSERT_RUN.with(this.dialect, values)));
    await this.events.append(events, this.writer);
    return this.record({ run, events });
  }

  /**
   * Apply `patch` to the run read as `before`, appending `events` after its last sequence.
   * Lease columns are written only when the patch names them (the worker renews its lease in the
   * background; writing `before`'s stale expiry back would shorten it). With `owner`, the commit
   * also requires that this worker still holds the lease (fencing a worker that lost it).
   *
   * The record handed back is what reading the row back will give, and what the transaction
   * writes at its end. It shares with `before` the fields the patch left alone and, in the JSON
   * fields it set, the very objects of `before` it still held at the same place; all else in it
   * is new, so changing the patch's objects afterwards changes neither the record nor the row.
   * Records the store hands out are never to be changed in place: commits reuse their parts.
   */
  async commitRun(
    before: RunRecord,
    patch: RunPatch,
    events: NewEvent[],
    opts: { owner?: string } = {},
  ): Promise<RunChange> {
    const at = this.now().toISOString();
    const bookkeeping = { nextSeq: before.nextSeq + events.length, version: before.version + 1, updatedAt: at };
    const appended = numberEvents(before.runId, before.nextSeq, events, at);
    const pending = this.deferred.get(before.runId);
    if (pending) {
      if (
        pending.run.version !== before.version ||
        (opts.owner !== undefined && pending.run.leaseOwner !== opts.owner)
      ) {
        throw new ConflictError(`run ${before.runId} changed concurrently`);
      }
      // `before` is this record as normalized: only the patched fields need normalizing.
      pending.run = applyPatch(before, patch, bookkeeping);
      pending.events.push(...appended);
      return { before, run: pending.run, events: appended };
    }
    const withLease = 'leaseOwner' in patch || 'leaseExpiresAt' in patch;
    const held = this.held.get(before.runId);
    const run = applyPatch(before, patch, bookkeeping);
    if (!held) {
      this.held.set(before.runId, {
        firstVersion: before.version,
        ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
        withLease,
        run,
        events: appended,
      });
      return this.record({ before, run, events: appended });
    }
    // A later commit in the same transaction: checked against what this transaction wrote; a
    // fence on a lease this transaction has not changed is left to the one UPDATE.
    if (held.run.version !== before.version) throw new ConflictError(`run ${before.runId} changed concurrently`);
    if (opts.owner !== undefined) {
      if (held.withLease ? held.run.leaseOwner !== opts.owner : (held.owner ?? opts.owner) !== opts.owner) {
        throw new ConflictError(`run ${before.runId} changed concurrently`);
      }
      if (!held.withLease) held.owner = opts.owner;
    }
    held.withLease ||= withLease;
    held.run = run;
    held.events.push(...appended);
    return this.record({ before, run, events: appended });
  }

  /**
   * Write what a transaction committed to a run: one UPDATE (version-checked against the snapshot
   * its first commit read; a run changed since makes it a ConflictError, and the transaction
   * fails whole) and one INSERT of every event it appended.
   */
  private async writeHeld(held: HeldRun): Promise<void> {
    const { run } = held;
    const fenced = held.owner !== undefined;
    const parts: NewValue[] = [];
    const params = [
      ...columnValues(run, COMMIT_COLUMNS, this.writer, parts),
      ...(held.withLease ? columnValues(run, LEASE_COLUMNS, this.writer, parts) : []),
      run.runId,
      held.firstVersion,
      ...(fenced ? [held.owner] : []),
    ];
    const query = COMMIT_RUN[(held.withLease ? 2 : 0) + (fenced ? 1 : 0)] as Statement;
    if (parts.length > 0) await this.values.store(parts);
    const lease = (await this.exec<Lease>(query, params)).rows[0];
    if (!lease) throw new ConflictError(`run ${run.runId} changed concurrently`);
    if (!held.withLease) {
      // The lease as stored now (a worker may have renewed it since the transaction read the run).
      if (lease.lease_owner === null) delete run.leaseOwner;
      else run.leaseOwner = lease.lease_owner;
      if (lease.lease_expires_at === null) delete run.leaseExpiresAt;
      else run.leaseExpiresAt = Number(lease.lease_expires_at);
    }
    await this.events.append(held.events, this.writer);
  }

  /**
   * Record an act in the audit log with this transaction: appended to the tenant's chain when the
   * transaction's work is done, just before COMMIT, so it commits with the act or not at all, and
   * the chain's lock is the last one the transaction takes (src/store/repos/audit.ts).
   */
  recordAudit(entry: NewAuditEntry): void {
    this.audited.push(entry);
  }

  /** The whole event log so far of a run inserted with `defer` in this transaction (a copy). */
  deferredEvents(runId: string): RunEvent[] | undefined {
    const pending = this.deferred.get(runId);
    return pending && [...pending.events];
  }

  /**
   * Write the runs inserted with `defer`, each in its final state, and run their steps; then the
   * runs committed to, each in its final state, and the task states changed (`Store.transaction`
   * calls this before COMMIT).
   */
  async flush(): Promise<void> {
    for (const [runId, { run, events, encoded }] of this.deferred) {
      this.deferred.delete(runId);
      await this.writeNewRun(run, events, encoded);
    }
    for (const [runId, held] of this.held) {
      this.held.delete(runId);
      await this.writeHeld(held);
    }
    await this.#tasks?.flushStates();
    if (this.audited.length > 0) await this.audit.append(this.audited.splice(0));
  }

  /** Called once the transaction committed (Store): later transactions may rely on what it stored. */
  committed(): void {
    this.writer.committed();
  }

  private async record(change: RunChange): Promise<RunChange> {
    for (const step of this.steps) await step.run(this, change);
    this.changes.push(change);
    return change;
  }
}
