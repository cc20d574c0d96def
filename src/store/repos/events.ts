// The run event log: per-run sequences, gap-free from 0, appended only by run commits (tx.ts).
//
// Stored one row per commit (`event_batches`): the events a transaction appended to one run, as
// one JSON array, keyed by the run and the sequence of its first event. A commit writes one row
// and one key, not one of each per event (an approval reply appends nine); readers page by
// sequence as before, and get each event with its run, sequence and timestamp restored.
import type { EventBatchesTable } from '../db.js';
import { MAX_EVENT_SEQUENCE, type RunEvent, type RunEventType } from '../model.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

/**
 * The batches holding events after `afterSeq`, in order: the search starts at the batch holding
 * `afterSeq + 1` (the last one that begins at or before it), a seek on the key, not a walk of the
 * run's whole log.
 */
export const LIST_BATCHES = statement(
  'select * from "event_batches" where "run_id" = ? and "first_seq" >= coalesce((select max("first_seq") from' +
    ' "event_batches" where "run_id" = ? and "first_seq" <= ?), 0) and "last_seq" > ? order by "first_seq" limit ?',
);
const ALL_BATCHES = statement('select * from "event_batches" where "run_id" = ? order by "first_seq"');
const BATCHES_BEFORE = statement(
  'select * from "event_batches" where "run_id" = ? and "first_seq" < ? order by "first_seq"',
);
const INSERT_BATCH = statement(
  'insert into "event_batches" ("run_id", "first_seq", "last_seq", "created_at", "events") values (?, ?, ?, ?, ?)',
);

/** One event as a batch keeps it: its run, sequence and (usually) timestamp are the row's. */
interface StoredEvent {
  type: RunEventType;
  nodeId?: string | null;
  /** Only where it differs from the row's `created_at` (commits of one transaction a moment apart). */
  timestamp?: string;
  payload: Record<string, unknown>;
}

export class Events extends Repo {
  /** Events with sequence > afterSeq, in order, at most `limit`. */
  async list(runId: string, afterSeq = -1, limit = 1000): Promise<RunEvent[]> {
    // Nothing follows the largest sequence (and `afterSeq + 1` would not fit PostgreSQL's integer).
    if (afterSeq >= MAX_EVENT_SEQUENCE) return [];
    // Each batch holds at least one event, so `limit` batches hold at least `limit` events.
    const params = [runId, runId, afterSeq + 1, afterSeq, limit];
    const { rows } = await this.exec<EventBatchesTable>(LIST_BATCHES, params);
    const out: RunEvent[] = [];
    for (const row of rows) unpack(row, (e) => e.sequence > afterSeq && out.length < limit && out.push(e));
    return out;
  }

  /**
   * Events of any of `types`, in sequence order; with `beforeSeq`, only those before it (a caller
   * that holds the rest, as the transaction that appended them does, reads only the older batches).
   */
  async listOfTypes(runId: string, types: readonly string[], beforeSeq?: number): Promise<RunEvent[]> {
    if (types.length === 0) return [];
    const { rows } =
      beforeSeq === undefined
        ? await this.exec<EventBatchesTable>(ALL_BATCHES, [runId])
        : await this.exec<EventBatchesTable>(BATCHES_BEFORE, [runId, beforeSeq]);
    const out: RunEvent[] = [];
    const end = beforeSeq ?? Number.POSITIVE_INFINITY;
    for (const row of rows) unpack(row, (e) => e.sequence < end && out.push(e), types);
    return out;
  }

  /** Append one run's already numbered events, consecutive from the first (one row). */
  async append(events: RunEvent[]): Promise<void> {
    const first = events[0];
    if (!first) return;
    const row = [first.runId, first.sequence, first.sequence + events.length - 1, first.timestamp, pack(events)];
    await this.sendAhead(INSERT_BATCH, row);
  }
}

/** The JSON text of a batch: each event without what the row holds (run, sequence, usual time). */
function pack(events: RunEvent[]): string {
  const at = (events[0] as RunEvent).timestamp;
  const stored: StoredEvent[] = [];
  // Literals of a fixed shape each: one JSON.stringify of them all is faster than one per event.
  for (const e of events) {
    if (e.timestamp !== at) stored.push({ type: e.type, nodeId: e.nodeId, timestamp: e.timestamp, payload: e.payload });
    else if (e.nodeId !== undefined) stored.push({ type: e.type, nodeId: e.nodeId, payload: e.payload });
    else stored.push({ type: e.type, payload: e.payload });
  }
  return JSON.stringify(stored);
}

/** Each event of a batch row (only those of `types`, when given), as the RunEvent it was appended as. */
function unpack(row: EventBatchesTable, take: (e: RunEvent) => unknown, types?: readonly string[]): void {
  const stored = JSON.parse(row.events) as StoredEvent[];
  const runId = row.run_id;
  const first = Number(row.first_seq);
  for (let i = 0; i < stored.length; i++) {
    const s = stored[i] as StoredEvent;
    if (types && !types.includes(s.type)) continue;
    const timestamp = s.timestamp ?? row.created_at;
    // Two literals, not a conditional spread (slow on Node 20: src/engine/spread.ts); same key order.
    take(
      s.nodeId !== undefined && s.nodeId !== null
        ? { runId, sequence: first + i, type: s.type, nodeId: s.nodeId, payload: s.payload, timestamp }
        : { runId, sequence: first + i, type: s.type, payload: s.payload, timestamp },
    );
  }
}
