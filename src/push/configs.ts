// Push notification configs of a task: several per task, the id defaulting to the task id, the
// same id replacing. Token and credentials go to the vault; the config keeps references only.
import type { Kysely } from 'kysely';
import type { Database, PushConfigsTable } from '../store/db.js';
import { statement } from '../store/statements.js';
import type { Dialect } from '../store/store.js';
import type { Vault } from './vault.js';

export interface PushConfigInput {
  id?: string;
  url: string;
  token?: string;
  authentication?: { schemes: string[]; credentials?: string };
}

/** A stored config as the API shows it: never the token or credentials. */
export interface PushConfigView {
  id: string;
  url: string;
  authentication?: { schemes: string[] };
  tokenFingerprint?: string;
}

/**
 * A task already has the most configs it may have (HANDOFF_PUSH_MAX_CONFIGS_PER_TASK): every
 * transition writes one delivery per config, so their number is a cost any caller could multiply.
 */
export class TooManyPushConfigs extends Error {
  override readonly name = 'TooManyPushConfigs';
  constructor(
    readonly taskId: string,
    readonly max: number,
  ) {
    super(
      `task ${taskId} already has ${max} push notification configs (HANDOFF_PUSH_MAX_CONFIGS_PER_TASK); delete one or replace one by its id`,
    );
  }
}

/**
 * Insert or replace (same task and id) a config; the replaced config's secrets are deleted. A new
 * id beyond `maxPerTask` configs throws TooManyPushConfigs and writes nothing.
 */
export async function putConfig(
  db: Kysely<Database>,
  vault: Vault,
  taskId: string,
  tenantId: string,
  input: PushConfigInput,
  maxPerTask: number,
): Promise<PushConfigView> {
  const configId = input.id ?? taskId;
  const old = await db
    .selectFrom('push_configs')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('config_id', '=', configId)
    .executeTakeFirst();
  if (old) await removeConfig(db, vault, old);
  else if ((await countConfigs(db, taskId)) >= maxPerTask) throw new TooManyPushConfigs(taskId, maxPerTask);
  const row: PushConfigsTable = {
    task_id: taskId,
    config_id: configId,
    tenant_id: tenantId,
    url: input.url,
    auth_schemes: input.authentication ? JSON.stringify(input.authentication.schemes) : null,
    token_secret: input.token ? await vault.put(db, input.token) : null,
    credentials_secret: input.authentication?.credentials
      ? await vault.put(db, input.authentication.credentials)
      : null,
    token_fingerprint: input.token ? vault.fingerprint(input.token) : null,
    created_at: new Date().toISOString(),
  };
  await db.insertInto('push_configs').values(row).execute();
  return view(row);
}

/** How many configs a task has. */
async function countConfigs(db: Kysely<Database>, taskId: string): Promise<number> {
  const row = await db
    .selectFrom('push_configs')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('task_id', '=', taskId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function getConfig(
  db: Kysely<Database>,
  taskId: string,
  configId: string,
): Promise<PushConfigsTable | undefined> {
  return db
    .selectFrom('push_configs')
    .selectAll()
    .where('task_id', '=', taskId)
    .where('config_id', '=', configId)
    .executeTakeFirst();
}

/** A task's configs, oldest first. Runs in every A2A transition (fixed SQL: store/statements.ts). */
export async function listConfigs(db: Kysely<Database>, taskId: string, dialect: Dialect): Promise<PushConfigsTable[]> {
  return (await db.executeQuery(LIST_CONFIGS.with<PushConfigsTable>(dialect, [taskId]))).rows;
}

const LIST_CONFIGS = statement('select * from "push_configs" where "task_id" = ? order by "created_at", "config_id"');

/** Delete a config, its secrets, and the deliveries it still owes (idempotent). */
export async function deleteConfig(
  db: Kysely<Database>,
  vault: Vault,
  taskId: string,
  configId: string,
): Promise<void> {
  const row = await getConfig(db, taskId, configId);
  if (row) await removeConfig(db, vault, row);
}

async function removeConfig(db: Kysely<Database>, vault: Vault, row: PushConfigsTable): Promise<void> {
  await vault.delete(db, [row.token_secret, row.credentials_secret]);
  await db
    .updateTable('push_outbox')
    .set({ state: 'cancelled', lease_owner: null, lease_expires_at: null })
    .where('task_id', '=', row.task_id)
    .where('config_id', '=', row.config_id)
    .where('state', '=', 'pending')
    .execute();
  await db
    .deleteFrom('push_configs')
    .where('task_id', '=', row.task_id)
    .where('config_id', '=', row.config_id)
    .execute();
}

/** Discard a config's secrets once its task's final push is done (RFC 0214). */
export async function discardSecrets(db: Kysely<Database>, vault: Vault, row: PushConfigsTable): Promise<void> {
  await vault.delete(db, [row.token_secret, row.credentials_secret]);
  await db
    .updateTable('push_configs')
    .set({ token_secret: null, credentials_secret: null })
    .where('task_id', '=', row.task_id)
    .where('config_id', '=', row.config_id)
    .execute();
}

export function view(row: PushConfigsTable): PushConfigView {
  const v: PushConfigView = { id: row.config_id, url: row.url };
  if (row.auth_schemes) v.authentication = { schemes: JSON.parse(row.auth_schemes) as string[] };
  if (row.token_fingerprint) v.tokenFingerprint = row.token_fingerprint;
  return v;
}
