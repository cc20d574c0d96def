// Push notification configs of a task: several per task, the id defaulting to the task id, the
// same id replacing. Token and credentials are sealed by the vault and kept by reference; the
// config record and every API view hold at most a fingerprint.
import type { PushConfigRecord } from '../store/model.js';
import type { Store, StoreTx } from '../store/store.js';
import type { Vault } from './vault.js';

export interface PushConfigInput {
  id?: string;
  /** The A2A version the config is registered in (default 0.3): its pushes speak it. */
  protocolVersion?: string;
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

/** Who changed a config, and on which surface (the audit log's principal and surface). */
export interface ConfigActor {
  principalId: string;
  /** What the client said it is (`Handoff-Surface`); else `a2a`, the only door to push configs. */
  surface?: string;
}

/** The audit log's record of a config change: what it says, never its token or credentials. */
function audited(tx: StoreTx, by: ConfigActor, act: string, rec: PushConfigRecord): void {
  const values: Record<string, unknown> = {
    configId: rec.configId,
    url: rec.url,
    protocolVersion: rec.protocolVersion,
  };
  if (rec.authSchemes) values.authSchemes = rec.authSchemes;
  if (rec.tokenFingerprint) values.tokenFingerprint = rec.tokenFingerprint;
  tx.recordAudit({
    tenantId: rec.tenantId,
    principal: by.principalId,
    surface: by.surface ?? 'a2a',
    act,
    runId: rec.taskId,
    values,
  });
}

/**
 * Insert or replace (same task and id) a config; the replaced config's secrets are deleted. A new
 * id beyond `maxPerTask` configs throws TooManyPushConfigs and writes nothing. Recorded in the
 * audit log (`push-config.set`) as `by`'s act.
 */
export async function putConfig(
  tx: StoreTx,
  vault: Vault,
  taskId: string,
  tenantId: string,
  input: PushConfigInput,
  maxPerTask: number,
  by: ConfigActor,
): Promise<PushConfigView> {
  const configId = input.id ?? taskId;
  const old = await tx.pushConfigs.get(taskId, configId);
  if (old) await removeConfig(tx, old);
  else if ((await tx.pushConfigs.count(taskId)) >= maxPerTask) throw new TooManyPushConfigs(taskId, maxPerTask);
  const seal = (plain: string | undefined) => (plain ? tx.secrets.put(vault.seal(plain)) : undefined);
  const tokenSecretId = await seal(input.token);
  const credentialsSecretId = await seal(input.authentication?.credentials);
  const rec: PushConfigRecord = {
    taskId,
    configId,
    tenantId,
    url: input.url,
    ...(input.authentication ? { authSchemes: input.authentication.schemes } : {}),
    ...(tokenSecretId ? { tokenSecretId } : {}),
    ...(credentialsSecretId ? { credentialsSecretId } : {}),
    ...(input.token ? { tokenFingerprint: vault.fingerprint(input.token) } : {}),
    createdAt: new Date().toISOString(),
    protocolVersion: input.protocolVersion ?? '0.3',
  };
  await tx.pushConfigs.insert(rec);
  audited(tx, by, 'push-config.set', rec);
  return view(rec);
}

/**
 * Delete a config, its secrets, and the deliveries it still owes (idempotent); a config deleted is
 * recorded in the audit log (`push-config.delete`) as `by`'s act.
 */
export async function deleteConfig(tx: StoreTx, taskId: string, configId: string, by: ConfigActor): Promise<void> {
  const rec = await tx.pushConfigs.get(taskId, configId);
  if (!rec) return;
  await removeConfig(tx, rec);
  audited(tx, by, 'push-config.delete', rec);
}

async function removeConfig(tx: StoreTx, rec: PushConfigRecord): Promise<void> {
  await tx.secrets.delete([rec.tokenSecretId, rec.credentialsSecretId]);
  await tx.outbox.cancelPending(rec.taskId, rec.configId);
  await tx.pushConfigs.delete(rec.taskId, rec.configId);
}

/** Discard a config's secrets once its task's final push is done (RFC 0214). */
export async function discardSecrets(store: Store, rec: PushConfigRecord): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.secrets.delete([rec.tokenSecretId, rec.credentialsSecretId]);
    await tx.pushConfigs.clearSecrets(rec.taskId, rec.configId);
  });
}

/** The config's token and credentials in clear, for the one request that carries them. */
export async function openSecrets(
  store: Store,
  vault: Vault,
  rec: PushConfigRecord,
): Promise<{ token?: string; credentials?: string }> {
  const open = async (id: string | undefined) => {
    const sealed = id ? await store.secrets.get(id) : undefined;
    return sealed === undefined ? undefined : vault.open(sealed);
  };
  const [token, credentials] = await Promise.all([open(rec.tokenSecretId), open(rec.credentialsSecretId)]);
  return { ...(token ? { token } : {}), ...(credentials ? { credentials } : {}) };
}

export function view(rec: PushConfigRecord): PushConfigView {
  const v: PushConfigView = { id: rec.configId, url: rec.url };
  if (rec.authSchemes) v.authentication = { schemes: rec.authSchemes };
  if (rec.tokenFingerprint) v.tokenFingerprint = rec.tokenFingerprint;
  return v;
}
