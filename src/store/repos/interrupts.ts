// Interrupts: what an open gate asks, its votes and exchanges, and how it was resolved.
// The statements of the approval path (open, insert, resolve) are fixed SQL (statements.ts).
import type { InterruptsTable } from '../db.js';
import type { InterruptKind, InterruptRecord } from '../model.js';
import { interruptRows } from '../rows.js';
import { statement, statementPerCount } from '../statements.js';
import { Repo } from './repo.js';

const COLUMNS = interruptRows.columns;
const INSERT = statement(
  `insert into "interrupts" (${COLUMNS.map((c) => `"${c}"`).join(', ')}) values (${COLUMNS.map(() => '?').join(', ')})`,
);
/** Oldest first: several may be open at once in a forked run, and "the" open one is the oldest. */
const OPEN = statement(
  `select * from "interrupts" where "run_id" = ? and "status" = 'open' order by "created_at", "interrupt_id"`,
);
const OPEN_AT = statement(`select * from "interrupts" where "run_id" = ? and "status" = 'open' and "node_id" = ?`);
const LATEST = statement(
  'select * from "interrupts" where "run_id" = ? and "node_id" = ?' +
    ' order by "created_at" desc, "interrupt_id" desc limit 1',
);
/**
 * What a list shows of the open interrupts of some runs: the fields of `data` a summary names, as
 * JSON text extracted by the database — `data` holds the whole draft to approve (megabytes), none
 * of which a list shows. PostgreSQL parses each `data` once (jsonb_to_record), SQLite per field
 * (its parse is cached within the statement).
 */
const openHeadsOf = (fields: string, from: string) =>
  statementPerCount(
    (n) =>
      `select "i"."run_id", "i"."node_id", "i"."kind", ${fields} from ${from}` +
      ` where "i"."run_id" in (${Array(n).fill('?').join(', ')}) and "i"."status" = 'open'` +
      // Oldest first, as OPEN: a run's list starts with "the" open one.
      ' order by "i"."created_at", "i"."interrupt_id"',
  );
const OPEN_HEADS = {
  sqlite: openHeadsOf(
    `("i"."data" -> '$.title') as "title", ("i"."data" -> '$.approversList') as "approvers",` +
      ` ("i"."data" -> '$.approverGroupRefs') as "group_refs", ("i"."data" -> '$.approverRoleRefs') as "role_refs",` +
      ` ("i"."data" -> '$.expiresAt') as "expires_at"`,
    '"interrupts" as "i"',
  ),
  postgres: openHeadsOf(
    `"d"."title"::text as "title", "d"."approversList"::text as "approvers",` +
      ` "d"."approverGroupRefs"::text as "group_refs", "d"."approverRoleRefs"::text as "role_refs",` +
      ` "d"."expiresAt"::text as "expires_at"`,
    `"interrupts" as "i", jsonb_to_record("i"."data"::jsonb) as "d"("title" jsonb, "approversList" jsonb,` +
      ` "approverGroupRefs" jsonb, "approverRoleRefs" jsonb, "expiresAt" jsonb)`,
  ),
};

/** An open interrupt as lists show it (GET /v1/runs): what it is, where, and its summary fields. */
export interface OpenInterruptHead {
  kind: InterruptKind;
  nodeId: string;
  title?: unknown;
  approversList?: unknown;
  approverGroupRefs?: unknown;
  approverRoleRefs?: unknown;
  expiresAt?: unknown;
}

interface OpenHeadRow {
  run_id: string;
  node_id: string;
  kind: string;
  title: string | null;
  approvers: string | null;
  group_refs: string | null;
  role_refs: string | null;
  expires_at: string | null;
}
const BY_RUN = statement('select * from "interrupts" where "run_id" = ? order by "created_at"');
/** The columns a decision changes; the record's identity never changes, and what it asks (`data`)
 * only when a deadline escalates the gate. */
const UPDATED = ['status', 'data', 'votes', 'exchanges', 'resolution', 'resolved_by', 'resolved_at'] as const;
const DECIDED = UPDATED.filter((c) => c !== 'data');
const updateOf = (columns: readonly (keyof InterruptsTable & string)[]) =>
  statement(
    `update "interrupts" set ${columns.map((c) => `"${c}" = ?`).join(', ')} where "interrupt_id" = ? and "status" = ?`,
  );
const UPDATE = {
  all: { statement: updateOf(UPDATED), columns: UPDATED },
  decided: { statement: updateOf(DECIDED), columns: DECIDED },
};

/**
 * The UPDATE of `rec` and its parameters. `data` (the gate's question, the largest column) is
 * written only when it is not the very object of `was`, the record as read.
 */
function updateOfRecord(rec: InterruptRecord, expectStatus: string, was?: InterruptRecord) {
  const { statement: query, columns } = was !== undefined && rec.data === was.data ? UPDATE.decided : UPDATE.all;
  return { query, params: [...columns.map((c) => interruptRows.column(rec, c)), rec.interruptId, expectStatus] };
}
const CANCEL_OPEN = statement(
  `update "interrupts" set "status" = 'cancelled', "resolved_at" = ? where "run_id" = ? and "status" = 'open'`,
);
const CANCEL_OPEN_AT = statement(
  `update "interrupts" set "status" = 'cancelled', "resolved_at" = ?` +
    ` where "run_id" = ? and "status" = 'open' and "node_id" = ?`,
);

/**
 * PostgreSQL: open interrupts a transaction read with their run locked and unchanged since its
 * snapshot (the reply's read, task-records.ts), by the transaction's handle: interrupt id → run id.
 * Every write of an interrupt commits with a new version of its run, under that run's lock
 * (engine.ts, resolution.ts, cancel.ts), so until this transaction ends the interrupt stays as
 * read: its update need not wait for its row count, and goes out with the next statement.
 */
const lockedOpen = new WeakMap<object, Map<string, string>>();

/** The transaction `db` read `rec` open, its run locked and unchanged since the snapshot. */
export function readOpenLocked(db: object, rec: InterruptRecord): void {
  let map = lockedOpen.get(db);
  if (!map) {
    map = new Map();
    lockedOpen.set(db, map);
  }
  map.set(rec.interruptId, rec.runId);
}

export class Interrupts extends Repo {
  /** The open interrupt of a run (of one node, when given). */
  async getOpen(runId: string, nodeId?: string): Promise<InterruptRecord | undefined> {
    const row =
      nodeId === undefined
        ? await this.first<InterruptsTable>(OPEN, [runId])
        : await this.first<InterruptsTable>(OPEN_AT, [runId, nodeId]);
    return row && interruptRows.fromRow(row);
  }

  /** The newest interrupt of a node, open or not. */
  async getLatest(runId: string, nodeId: string): Promise<InterruptRecord | undefined> {
    const row = await this.first<InterruptsTable>(LATEST, [runId, nodeId]);
    return row && interruptRows.fromRow(row);
  }

  /** Every open interrupt of a run, oldest first (a forked run may have several). */
  async listOpen(runId: string): Promise<InterruptRecord[]> {
    return (await this.all<InterruptsTable>(OPEN, [runId])).map(interruptRows.fromRow);
  }

  /**
   * The open interrupts of these runs as lists show them, oldest first, by run id (one query, none
   * of `data` but its summary).
   */
  async openHeads(runIds: readonly string[]): Promise<Map<string, OpenInterruptHead[]>> {
    const byRun = new Map<string, OpenInterruptHead[]>();
    if (runIds.length === 0) return byRun;
    const rows = await this.all<OpenHeadRow>(OPEN_HEADS[this.dialect](runIds.length), runIds);
    const parsed = (json: string | null): unknown => (json === null ? undefined : JSON.parse(json));
    for (const r of rows) {
      const head: OpenInterruptHead = {
        kind: r.kind as InterruptKind,
        nodeId: r.node_id,
        title: parsed(r.title),
        approversList: parsed(r.approvers),
        approverGroupRefs: parsed(r.group_refs),
        approverRoleRefs: parsed(r.role_refs),
        expiresAt: parsed(r.expires_at),
      };
      const list = byRun.get(r.run_id);
      if (list) list.push(head);
      else byRun.set(r.run_id, [head]);
    }
    return byRun;
  }

  async listByRun(runId: string): Promise<InterruptRecord[]> {
    return (await this.all<InterruptsTable>(BY_RUN, [runId])).map(interruptRows.fromRow);
  }

  async insert(rec: InterruptRecord): Promise<void> {
    await this.insertRow(interruptRows.toRow(rec));
  }

  protected async insertRow(row: InterruptsTable): Promise<void> {
    await this.sendAhead(
      INSERT,
      COLUMNS.map((c) => row[c]),
    );
  }

  /**
   * Update an interrupt still in `expectStatus`; false if someone else changed it first. `was`,
   * the record as read, spares writing `data` back unchanged (it changes only when a deadline
   * escalates the gate: new approvers, new expiry).
   */
  async update(rec: InterruptRecord, expectStatus: InterruptRecord['status'], was?: InterruptRecord): Promise<boolean> {
    const { query, params } = updateOfRecord(rec, expectStatus, was);
    return (await this.write(query, params)) === 1;
  }

  /** Cancel the run's open interrupts, or only the one at `nodeId` (a withdrawn branch's). */
  async cancelOpen(runId: string, nodeId?: string): Promise<void> {
    const at = this.now().toISOString();
    await (nodeId === undefined
      ? this.write(CANCEL_OPEN, [at, runId])
      : this.write(CANCEL_OPEN_AT, [at, runId, nodeId]));
  }
}

/**
 * The interrupts as one transaction sees them. A run created in this transaction has no
 * interrupt but those it inserted, so its open one is known without a query (the Task of a new
 * task that waits at a gate is built from it after the commit). Any other change to such a run's
 * interrupts drops what is known, and the query answers again.
 */
export class TxInterrupts extends Interrupts {
  /** Interrupts inserted for runs created here, as reading them back would give them. */
  private readonly inserted = new Map<string, InterruptRecord[]>();
  private readonly changed = new Set<string>();

  constructor(
    db: ConstructorParameters<typeof Interrupts>[0],
    dialect: ConstructorParameters<typeof Interrupts>[1],
    now: () => Date,
    private readonly createdHere: (runId: string) => boolean,
    direct?: ConstructorParameters<typeof Interrupts>[3],
  ) {
    super(db, dialect, now, direct);
  }

  private known(runId: string): boolean {
    return this.createdHere(runId) && !this.changed.has(runId);
  }

  override async getOpen(runId: string, nodeId?: string): Promise<InterruptRecord | undefined> {
    if (!this.known(runId)) return super.getOpen(runId, nodeId);
    return this.inserted.get(runId)?.find((i) => i.status === 'open' && (nodeId === undefined || i.nodeId === nodeId));
  }

  override async insert(rec: InterruptRecord): Promise<void> {
    const row = interruptRows.toRow(rec);
    await this.insertRow(row);
    const list = this.inserted.get(rec.runId) ?? [];
    list.push(interruptRows.fromRow(row));
    this.inserted.set(rec.runId, list);
  }

  override async update(
    rec: InterruptRecord,
    expectStatus: InterruptRecord['status'],
    was?: InterruptRecord,
  ): Promise<boolean> {
    this.changed.add(rec.runId);
    // Read open under its run's lock in this transaction, and not written since: still open.
    if (expectStatus === 'open' && lockedOpen.get(this.db)?.delete(rec.interruptId)) {
      const { query, params } = updateOfRecord(rec, expectStatus, was);
      await this.sendAhead(query, params);
      return true;
    }
    return super.update(rec, expectStatus, was);
  }

  override async listOpen(runId: string): Promise<InterruptRecord[]> {
    if (!this.known(runId)) return super.listOpen(runId);
    return (this.inserted.get(runId) ?? []).filter((i) => i.status === 'open');
  }

  override async cancelOpen(runId: string, nodeId?: string): Promise<void> {
    this.changed.add(runId);
    const locked = lockedOpen.get(this.db);
    if (locked) for (const [id, run] of locked) if (run === runId) locked.delete(id);
    await super.cancelOpen(runId, nodeId);
  }
}
