// Push notification configs of a task: several per task, (task, config id) unique. Token and
// credentials are references into `secrets`, never the values.
import type { PushConfigsTable } from '../db.js';
import type { PushConfigRecord } from '../model.js';
import { pushConfigFromRow, pushConfigToRow } from '../rows.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

// Runs in every A2A transition (the push step reads the task's configs): fixed SQL.
const LIST_CONFIGS = statement('select * from "push_configs" where "task_id" = ? order by "created_at", "config_id"');

export class PushConfigs extends Repo {
  async insert(rec: PushConfigRecord): Promise<void> {
    await this.db.insertInto('push_configs').values(pushConfigToRow(rec)).execute();
  }

  async get(taskId: string, configId: string): Promise<PushConfigRecord | undefined> {
    const row = await this.db
      .selectFrom('push_configs')
      .selectAll()
      .where('task_id', '=', taskId)
      .where('config_id', '=', configId)
      .executeTakeFirst();
    return row && pushConfigFromRow(row);
  }

  /** A task's configs, oldest first. */
  async list(taskId: string): Promise<PushConfigRecord[]> {
    const { rows } = await this.db.executeQuery(LIST_CONFIGS.with<PushConfigsTable>(this.dialect, [taskId]));
    return rows.map(pushConfigFromRow);
  }

  async delete(taskId: string, configId: string): Promise<void> {
    await this.db.deleteFrom('push_configs').where('task_id', '=', taskId).where('config_id', '=', configId).execute();
  }

  /** Forget a config's secret references (its secrets were deleted). */
  async clearSecrets(taskId: string, configId: string): Promise<void> {
    await this.db
      .updateTable('push_configs')
      .set({ token_secret: null, credentials_secret: null })
      .where('task_id', '=', taskId)
      .where('config_id', '=', configId)
      .execute();
  }
}
