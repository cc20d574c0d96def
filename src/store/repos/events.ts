// The run event log: per-run sequences, gap-free from 0, appended only by run commits (tx.ts).
//
// Stored one row per commit (`event_batches`): the events a transaction appended to one run, as
// one JSON array, keyed by the run and the sequence of its first event. A commit writes one row
// and one key, not one of each per event (an approval reply appends nine); readers page by
// sequence as before, and get each event with its run, sequence and timestamp restored. A batch
// that holds a large part (a call's answer) holds a reference to it instead (src/store/recorded.ts);
// one of 512 characters or more is stored deflated (src/store/log-codec.ts).
import type { EventBatchesTable } from '../db.js';
import { MAX_EVENT_SEQUENCE, type RunEvent, type RunEventType } from '../model.js';
import { decodeLog, encodeLog } from '../log-codec.js';
import { encodeRecorded, isEnvelope, type NewValue, readRefs, type ValueWriter } from '../recorded.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';
import { RunValues } from './run-values.js';

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
  #values?: RunValues;

  /** Events with sequence > afterSeq, in order, at most `limit`. */
  async list(runId: string, afterSeq = -1, limit = 1000): Promise<RunEvent[]> {
    // Nothing follows the largest sequence (and `afterSeq + 1` would not fit PostgreSQL's integer).
    if (afterSeq >= MAX_EVENT_SEQUENCE) return [];
    // Each batch holds at least one event, so `limit` batches hold at least `limit` events.
    const params = [runId, runId, afterSeq + 1, afterSeq, limit];
    const { rows } = await this.exec<EventBatchesTable>(LIST_BATCHES, params);
    const out: RunEvent[] = [];
    const take = (e: RunEvent) => e.sequence > afterSeq && out.length < limit && out.push(e);
    for (const row of rows) {
      const batch: unknown = JSON.parse(decodeLog(row.events));
      const stored = Array.isArray(batch)
        ? (batch as StoredEvent[])
        : await this.whole(row, batch, (_, i) => Number(row.first_seq) + i > afterSeq);
      unpack(row, stored, take);
    }
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
    const take = (e: RunEvent) => e.sequence < end && out.push(e);
    for (const row of rows) {
      const batch: unknown = JSON.parse(decodeLog(row.events));
      const stored = Array.isArray(batch)
        ? (batch as StoredEvent[])
        : await this.whole(row, batch, (s, i) => Number(row.first_seq) + i < end && types.includes(s.type));
      unpack(row, stored, take, types);
    }
    return out;
  }

  /**
   * Append one run's already numbered events, consecutive from the first (one row), and before it
   * the large parts they hold that `writer`'s transaction has not stored yet.
   */
  async append(events: RunEvent[], writer: ValueWriter): Promise<void> {
    const first = events[0];
    if (!first) return;
    const parts: NewValue[] = [];
    const text = pack(events, writer, parts);
    if (parts.length > 0) await this.values.store(parts);
    const stored = encodeLog(text, this.dialect);
    const row = [first.runId, first.sequence, first.sequence + events.length - 1, first.timestamp, stored];
    await this.sendAhead(INSERT_BATCH, row);
  }

  private get values(): RunValues {
    this.#values ??= new RunValues(this.db, this.dialect, this.now, this.direct);
    return this.#values;
  }

  /** The events of a batch stored with references, those `wanted` (by event and index) read in whole. */
  private async whole(
    row: EventBatchesTable,
    batch: unknown,
    wanted: (s: StoredEvent, i: number) => boolean,
  ): Promise<StoredEvent[]> {
    if (!isEnvelope(batch)) throw new Error(`run ${row.run_id}: event batch ${row.first_seq} is not a batch`);
    const stored = batch.value as StoredEvent[];
    const fetch = (hash: string) => this.values.text(row.run_id, hash);
    const index = (path: Array<string | number>) => path[0] as number;
    await readRefs(batch, row.run_id, fetch, (path) => wanted(stored[index(path)] as StoredEvent, index(path)));
    return stored;
  }
}

/**
 * The JSON text of a batch: each event without what the row holds (run, sequence, usual time);
 * its large parts go on `parts` (src/store/recorded.ts).
 */
function pack(events: RunEvent[], writer: ValueWriter, parts: NewValue[]): string {
  const at = (events[0] as RunEvent).timestamp;
  const stored: StoredEvent[] = [];
  // Literals of a fixed shape each: one JSON.stringify of them all is faster than one per event.
  for (const e of events) {
    if (e.timestamp !== at) stored.push({ type: e.type, nodeId: e.nodeId, timestamp: e.timestamp, payload: e.payload });
    else if (e.nodeId !== undefined) stored.push({ type: e.type, nodeId: e.nodeId, payload: e.payload });
    else stored.push({ type: e.type, payload: e.payload });
  }
  return encodeRecorded(stored, (events[0] as RunEvent).runId, writer, parts);
}

/** Each event of a batch (only those of `types`, when given), as the RunEvent it was appended as. */
function unpack(
  row: EventBatchesTable,
  stored: StoredEvent[],
  take: (e: RunEvent) => unknown,
  types?: readonly string[],
): void {
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
