// The run event log: per-run sequences, gap-free from 0, appended only by run commits (tx.ts).
import type { EventsTable } from '../db.js';
import type { RunEvent } from '../model.js';
import { eventFromRow } from '../rows.js';
import { statement, statementPerCount } from '../statements.js';
import { Repo } from './repo.js';

const LIST_EVENTS = statement('select * from "events" where "run_id" = ? and "seq" > ? order by "seq" limit ?');
const EVENTS_OF_TYPES = statementPerCount(
  (n) => `select * from "events" where "run_id" = ? and "type" in (${Array(n).fill('?').join(', ')}) order by "seq"`,
);
const INSERT_EVENTS = statementPerCount(
  (n) =>
    'insert into "events" ("run_id", "seq", "type", "node_id", "payload", "created_at") values ' +
    Array(n).fill('(?, ?, ?, ?, ?, ?)').join(', '),
);

export class Events extends Repo {
  /** Events with sequence > afterSeq, in order, at most `limit`. */
  async list(runId: string, afterSeq = -1, limit = 1000): Promise<RunEvent[]> {
    const { rows } = await this.db.executeQuery(LIST_EVENTS.with<EventsTable>(this.dialect, [runId, afterSeq, limit]));
    return rows.map(eventFromRow);
  }

  /** Events of any of `types`, in sequence order (one read for several kinds). */
  async listOfTypes(runId: string, types: readonly string[]): Promise<RunEvent[]> {
    if (types.length === 0) return [];
    const query = EVENTS_OF_TYPES(types.length).with<EventsTable>(this.dialect, [runId, ...types]);
    return (await this.db.executeQuery(query)).rows.map(eventFromRow);
  }

  /** Append already numbered events (one statement). */
  async append(events: RunEvent[]): Promise<void> {
    if (events.length === 0) return;
    const params = events.flatMap((e) => [
      e.runId,
      e.sequence,
      e.type,
      e.nodeId ?? null,
      JSON.stringify(e.payload),
      e.timestamp,
    ]);
    await this.db.executeQuery(INSERT_EVENTS(events.length).with(this.dialect, params));
  }
}
