// The parts of runs' JSON stored by reference (`run_values`, src/store/recorded.ts): written once,
// before the rows that refer to them, and read back into the records the store hands out.
import type { RunValuesTable } from '../db.js';
import type { RunRecord } from '../model.js';
import { isEnvelope, type NewValue, readRefs } from '../recorded.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

const GET_VALUE = statement('select "value" from "run_values" where "run_id" = ? and "hash" = ? order by "slice"');
// The same part may be found again (a later commit that still holds it): the first rows stay.
const INSERT_VALUE = statement(
  'insert into "run_values" ("run_id", "hash", "slice", "value", "created_at") values (?, ?, ?, ?, ?)' +
    ' on conflict do nothing',
);

/** Whether a run as read holds parts stored by reference (then `RunValues.read` reads them in). */
export const holdsRecorded = (run: RunRecord): boolean => isEnvelope(run.state) || isEnvelope(run.error);

export class RunValues extends Repo {
  /** The JSON text of one of a run's parts, if stored. */
  async text(runId: string, hash: string): Promise<string | undefined> {
    const rows = await this.all<Pick<RunValuesTable, 'value'>>(GET_VALUE, [runId, hash]);
    return rows.length === 0 ? undefined : rows.map((r) => r.value).join('');
  }

  /** `run` as committed: its state and error with their stored parts read back in (in place). */
  async read(run: RunRecord): Promise<RunRecord> {
    const fetch = (hash: string) => this.text(run.runId, hash);
    if (isEnvelope(run.state)) run.state = (await readRefs(run.state, run.runId, fetch)) as RunRecord['state'];
    if (isEnvelope(run.error)) run.error = (await readRefs(run.error, run.runId, fetch)) as RunRecord['error'];
    return run;
  }

  /**
   * Store new parts, each in slices (in a transaction: before the rows that refer to them). Each
   * slice is sent on its own, not ahead with the transaction's next statement: what a driver
   * buffers is then one slice, not the whole part.
   */
  async store(values: NewValue[]): Promise<void> {
    const at = this.now().toISOString();
    for (const v of values) {
      let n = 0;
      for (const slice of v.slices()) await this.write(INSERT_VALUE, [v.runId, v.hash, n++, slice, at]);
    }
  }
}
