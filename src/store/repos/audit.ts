// The audit log: an append-only, hash-chained record of every act of a person or an operator
// (decisions, cancels, push-config changes, retries by hand) and of the deadlines that acted for
// them (escalations, timeouts). One chain per tenant: entry n holds the hash of entry n-1, and its
// own hash is the SHA-256 of the RFC 8785 form of everything it says (jcs.ts), so an entry edited
// or deleted afterwards breaks the chain at that entry (`verify`).
//
// Entries are written by the transaction of the act they record, last, just before COMMIT
// (StoreTx.recordAudit queues, flush appends): the append takes the tenant's chain head row —
// `audit_heads`, locked by an upsert until COMMIT on PostgreSQL — so concurrent instances append
// one after another, and it is the last lock the transaction takes (no lock cycle through it). The
// head also records the last sequence, so a deleted last entry is found too.
import { type SqlBool, sql } from 'kysely';
import type { AuditEntriesTable } from '../db.js';
import { decodeCursor, encodeCursor } from '../cursor.js';
import { jcsSha256 } from '../jcs.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

/** An act to record, as its transaction states it; the store adds sequence, time and hashes. */
export interface NewAuditEntry {
  tenantId: string;
  principal: string;
  /** Where the act came from: rest, a2a, console, cli, link; deadline for the host's own. */
  surface: string;
  /** What was done: approve, reject, refine, edit, answer, ask, cancel, push-config.set, … */
  act: string;
  runId?: string;
  nodeId?: string;
  /** The decision's resume value, or the act's parameters (never a secret). */
  values: Record<string, unknown>;
  /** `sha256:<hex>` of the RFC 8785 form of the artifact or questions decided on. */
  subjectHash?: string;
}

export interface AuditEntry extends NewAuditEntry {
  /** 1, 2, … within the tenant's chain. */
  seq: number;
  /** ISO 8601, when the act's transaction appended it. */
  time: string;
  /** The hash of the tenant's entry before (`null` for its first). */
  prevHash: string | null;
  /** Lowercase hex SHA-256 of the entry's RFC 8785 form, prevHash included (`entryHash`). */
  hash: string;
}

/** What `verify` finds: every chain holds, or the first entry that breaks one. */
export type AuditVerdict =
  | { ok: true; entries: number; tenants: number }
  | { ok: false; entries: number; tenantId: string; seq: number; reason: string };

export interface AuditQuery {
  /** Absent: every tenant (an admin key). */
  tenantId?: string;
  runId?: string;
  /** Entries at or after this ISO 8601 time. */
  since?: string;
  /** After this page cursor (`nextCursor` of the page before). */
  after?: string;
  limit: number;
}

/** The hash of an entry: every field but the hash itself, in RFC 8785 form. */
export function entryHash(e: Omit<AuditEntry, 'hash'>): string {
  return jcsSha256({
    seq: e.seq,
    time: e.time,
    tenantId: e.tenantId,
    principal: e.principal,
    surface: e.surface,
    act: e.act,
    runId: e.runId ?? null,
    nodeId: e.nodeId ?? null,
    values: e.values,
    subjectHash: e.subjectHash ?? null,
    prevHash: e.prevHash,
  });
}

const fromRow = (r: AuditEntriesTable): AuditEntry => {
  const e: AuditEntry = {
    seq: Number(r.seq),
    time: r.time,
    tenantId: r.tenant_id,
    principal: r.principal,
    surface: r.surface,
    act: r.act,
    values: JSON.parse(r.values) as Record<string, unknown>,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
  if (r.run_id !== null) e.runId = r.run_id;
  if (r.node_id !== null) e.nodeId = r.node_id;
  if (r.subject_hash !== null) e.subjectHash = r.subject_hash;
  return e;
};

const LOCK_HEAD = statement(
  'insert into "audit_heads" ("tenant_id", "seq", "hash") values (?, 0, null) on conflict ("tenant_id")' +
    ' do update set "seq" = "audit_heads"."seq" returning "seq", "hash"',
);
const INSERT_ENTRY = statement(
  'insert into "audit_entries" ("tenant_id", "seq", "time", "principal", "surface", "act", "run_id", "node_id",' +
    ' "values", "subject_hash", "prev_hash", "hash") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
);
const SET_HEAD = statement('update "audit_heads" set "seq" = ?, "hash" = ? where "tenant_id" = ?');

/** How many entries `verify` reads at a time. */
const VERIFY_PAGE = 1000;

export class AuditLog extends Repo {
  /**
   * Append `entries` to their tenants' chains, in order (a tenant's in the order given). Only in a
   * transaction, and last in it: StoreTx.flush calls this with what `recordAudit` queued.
   */
  async append(entries: readonly NewAuditEntry[]): Promise<void> {
    const tenants = [...new Set(entries.map((e) => e.tenantId))].sort();
    const time = this.now().toISOString();
    for (const tenantId of tenants) {
      let head = await this.lockHead(tenantId);
      for (const e of entries) {
        if (e.tenantId !== tenantId) continue;
        // As reading the row back gives it (a JSON round trip), so `verify` hashes the same values.
        const text = JSON.stringify(e.values);
        const values = JSON.parse(text) as Record<string, unknown>;
        const entry = { ...e, values, seq: head.seq + 1, time, prevHash: head.hash };
        const hash = entryHash(entry);
        // No result is read: on PostgreSQL it goes out with the transaction's next statement.
        await this.sendAhead(INSERT_ENTRY, [
          tenantId,
          entry.seq,
          time,
          e.principal,
          e.surface,
          e.act,
          e.runId ?? null,
          e.nodeId ?? null,
          text,
          e.subjectHash ?? null,
          head.hash,
          hash,
        ]);
        head = { seq: entry.seq, hash };
      }
      await this.sendAhead(SET_HEAD, [head.seq, head.hash, tenantId]);
    }
  }

  /**
   * The tenant's chain head, made if new, in one statement: the upsert's no-op update locks the
   * row until COMMIT on PostgreSQL (a concurrent append waits, then reads the head it left), so one
   * appender at a time per tenant.
   */
  private async lockHead(tenantId: string): Promise<{ seq: number; hash: string | null }> {
    const row = await this.first<{ seq: number | string; hash: string | null }>(LOCK_HEAD, [tenantId]);
    if (!row) throw new Error(`the audit chain head of tenant ${tenantId} could not be read`);
    return { seq: Number(row.seq), hash: row.hash };
  }

  /**
   * A page of entries, oldest first by (time, tenant, sequence); `nextCursor` when more follow.
   * A cursor that is not one this store gave is a RangeError (nothing is read).
   */
  async list(q: AuditQuery): Promise<{ entries: AuditEntry[]; nextCursor?: string }> {
    const after = q.after === undefined ? undefined : decodeCursor(q.after, 3);
    if (q.after !== undefined && (!after || !/^\d+$/.test(after[2] ?? ''))) {
      throw new RangeError('the audit page cursor is not one this host gave');
    }
    let query = this.db.selectFrom('audit_entries').selectAll();
    if (q.tenantId !== undefined) query = query.where('tenant_id', '=', q.tenantId);
    if (q.runId !== undefined) query = query.where('run_id', '=', q.runId);
    if (q.since !== undefined) query = query.where('time', '>=', q.since);
    if (after) {
      const [time, tenant, seq] = after as [string, string, string];
      query = query.where(sql<SqlBool>`("time", "tenant_id", "seq") > (${time}, ${tenant}, ${Number(seq)})`);
    }
    const rows = await query
      .orderBy('time')
      .orderBy('tenant_id')
      .orderBy('seq')
      .limit(q.limit + 1)
      .execute();
    const entries = rows.slice(0, q.limit).map(fromRow);
    const last = entries.at(-1);
    return rows.length > q.limit && last
      ? { entries, nextCursor: encodeCursor([last.time, last.tenantId, String(last.seq)]) }
      : { entries };
  }

  /**
   * Check every tenant's chain: sequences 1, 2, … without a gap up to the head's, each entry's
   * hash recomputed from what it says, each `prevHash` the hash before. The first entry that
   * fails is named (a missing one by the sequence it should have had).
   */
  async verify(): Promise<AuditVerdict> {
    const heads = await this.db.selectFrom('audit_heads').selectAll().orderBy('tenant_id').execute();
    const known = new Map(heads.map((h) => [h.tenant_id, { seq: Number(h.seq), hash: h.hash }]));
    const listed = await this.db.selectFrom('audit_entries').select('tenant_id').distinct().execute();
    for (const { tenant_id } of listed) if (!known.has(tenant_id)) known.set(tenant_id, { seq: -1, hash: null });
    let count = 0;
    for (const [tenantId, head] of [...known].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const broken = await this.verifyChain(tenantId, head, (n) => (count += n));
      if (broken) return { ok: false, entries: count, tenantId, ...broken };
    }
    return { ok: true, entries: count, tenants: known.size };
  }

  private async verifyChain(
    tenantId: string,
    head: { seq: number; hash: string | null },
    counted: (n: number) => void,
  ): Promise<{ seq: number; reason: string } | undefined> {
    if (head.seq < 0) return { seq: 1, reason: 'the tenant has entries but no chain head' };
    let prev: { seq: number; hash: string | null } = { seq: 0, hash: null };
    for (;;) {
      const rows = await this.db
        .selectFrom('audit_entries')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('seq', '>', prev.seq)
        .orderBy('seq')
        .limit(VERIFY_PAGE)
        .execute();
      for (const row of rows) {
        const e = fromRow(row);
        if (e.seq !== prev.seq + 1) return { seq: prev.seq + 1, reason: `entry ${prev.seq + 1} is missing` };
        if (e.prevHash !== prev.hash) return { seq: e.seq, reason: 'its prevHash is not the hash of the entry before' };
        const { hash, ...rest } = e;
        if (entryHash(rest) !== hash) return { seq: e.seq, reason: 'its hash does not match what it records' };
        prev = { seq: e.seq, hash };
      }
      counted(rows.length);
      if (rows.length < VERIFY_PAGE) break;
    }
    if (prev.seq < head.seq)
      return { seq: prev.seq + 1, reason: `entry ${prev.seq + 1} is missing (the chain head is at ${head.seq})` };
    if (prev.seq > head.seq || prev.hash !== head.hash) {
      return { seq: prev.seq, reason: 'the chain head does not match the last entry' };
    }
    return undefined;
  }
}
