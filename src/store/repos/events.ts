// The run event log: per-run sequences, gap-free from 0, appended only by run commits (tx.ts).
import type { EventsTable } from '../db.js';
import type { RunEvent } from '../model.js';
import { eventRows } from '../rows.js';
import { statement, statementPerCount } from '../statements.js';
import { Repo } from './repo.js';

const LIST_EVENTS = statement('select * from "events" where "run_id" = ? and "seq" > ? order by "seq" limit ?');
const EVENTS_OF_TYPES = statementPerCount(
  (n) => `select * from "events" where "run_id" = ? and "type" in (${Array(n).fill('?').join(', ')}) order by "seq"`,
);
const INSERT_EVENTS = statementPerCount(
  (n) =>
    `insert into "events" (${eventRows.columns.map((c) => `"${c}"`).join(', ')}) values ` +
    Array(n)
      .fill(`(${eventRows.columns.map(() => '?').join(', ')})`)
      .join(', '),
);

export class Events extends Repo {
  /** Events with sequence > afterSeq, in order, at most `limit`. */
  async list(runId: string, afterSeq = -1, limit = 1000): Promise<RunEvent[]> {
    const { rows } = await this.exec<EventsTable>(LIST_EVENTS, [runId, afterSeq, limit]);
    return rows.map(eventRows.fromRow);
  }

  /** Events of any of `types`, in sequence order (one read for several kinds). */
  async listOfTypes(runId: string, types: readonly string[]): Promise<RunEvent[]> {
    if (types.length === 0) return [];
    return (await this.exec<EventsTable>(EVENTS_OF_TYPES(types.length), [runId, ...types])).rows.map(eventRows.fromRow);
  }

  /** Append already numbered events (one statement). */
  async append(events: RunEvent[]): Promise<void> {
    if (events.length === 0) return;
    const params: unknown[] = [];
    for (const e of events) params.push(...eventRows.values(e));
    await this.sendAhead(INSERT_EVENTS(events.length), params);
  }
}
