// Push notification configs of a task: several per task, (task, config id) unique. Token and
// credentials are references into `secrets`, never the values.
import type { PushConfigsTable } from '../db.js';
import type { PushConfigRecord } from '../model.js';
import { pushConfigRows } from '../rows.js';
import { statement } from '../statements.js';
import { Repo } from './repo.js';

// Runs in every A2A transition (the push step reads the task's configs): fixed SQL.
const LIST_CONFIGS = statement('select * from "push_configs" where "task_id" = ? order by "created_at", "config_id"');
const BY_KEY = ' where "task_id" = ? and "config_id" = ?';
const GET_CONFIG = statement(`select * from "push_configs"${BY_KEY}`);
const DELETE_CONFIG = statement(`delete from "push_configs"${BY_KEY}`);
const COUNT_CONFIGS = statement('select count(*) as "n" from "push_configs" where "task_id" = ?');
const CLEAR_SECRETS = statement(
  `update "push_configs" set "token_secret" = null, "credentials_secret" = null${BY_KEY}`,
);

/**
 * Tasks a statement of this transaction found without configs (the reply's read counts them:
 * task-records.ts), by the transaction's handle. On SQLite a group of transactions shares one
 * handle, so every insert through it forgets the task again: what is kept stays exact.
 */
const withoutConfigs = new WeakMap<object, Set<string>>();

/** The transaction `db` read that `taskId` has no config (until one is inserted through `db`). */
export function sawNoConfigs(db: object, taskId: string): void {
  let set = withoutConfigs.get(db);
  if (!set) {
    set = new Set();
    withoutConfigs.set(db, set);
  }
  set.add(taskId);
}

export class PushConfigs extends Repo {
  async insert(rec: PushConfigRecord): Promise<void> {
    withoutConfigs.get(this.db)?.delete(rec.taskId);
    await this.db.insertInto('push_configs').values(pushConfigRows.toRow(rec)).execute();
  }

  async get(taskId: string, configId: string): Promise<PushConfigRecord | undefined> {
    const row = await this.first<PushConfigsTable>(GET_CONFIG, [taskId, configId]);
    return row && pushConfigRows.fromRow(row);
  }

  /** A task's configs, oldest first. */
  async list(taskId: string): Promise<PushConfigRecord[]> {
    return (await this.all<PushConfigsTable>(LIST_CONFIGS, [taskId])).map(pushConfigRows.fromRow);
  }

  /** How many configs a task has. */
  async count(taskId: string): Promise<number> {
    return Number((await this.first<{ n: number | string }>(COUNT_CONFIGS, [taskId]))?.n ?? 0);
  }

  async delete(taskId: string, configId: string): Promise<void> {
    await this.write(DELETE_CONFIG, [taskId, configId]);
  }

  /** Forget a config's secret references (its secrets were deleted). */
  async clearSecrets(taskId: string, configId: string): Promise<void> {
    await this.write(CLEAR_SECRETS, [taskId, configId]);
  }
}

/**
 * The configs as one transaction sees them. A task created in this transaction can have no
 * config but those registered in it, and a task the reply's read found without any has none
 * until one is registered: listing its configs (the push step, at every transition) needs no
 * query until then.
 */
export class TxPushConfigs extends PushConfigs {
  private readonly registered = new Set<string>();

  constructor(
    db: ConstructorParameters<typeof PushConfigs>[0],
    dialect: ConstructorParameters<typeof PushConfigs>[1],
    now: () => Date,
    private readonly createdHere: (taskId: string) => boolean,
    direct?: ConstructorParameters<typeof PushConfigs>[3],
  ) {
    super(db, dialect, now, direct);
  }

  override async insert(rec: PushConfigRecord): Promise<void> {
    this.registered.add(rec.taskId);
    await super.insert(rec);
  }

  /** None, known without a query: a task created here with none registered, or one read without any. */
  private knownNone(taskId: string): boolean {
    if (this.registered.has(taskId)) return false;
    return this.createdHere(taskId) || withoutConfigs.get(this.db)?.has(taskId) === true;
  }

  override async list(taskId: string): Promise<PushConfigRecord[]> {
    if (this.knownNone(taskId)) return [];
    return super.list(taskId);
  }

  override async count(taskId: string): Promise<number> {
    if (this.knownNone(taskId)) return 0;
    return super.count(taskId);
  }
}
