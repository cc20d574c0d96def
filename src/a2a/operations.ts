// The A2A operations over the neutral model (model.ts), whatever the protocol version or binding
// that carried the request: a handler takes a neutral request and answers neutral objects; the
// endpoint decodes and encodes with the codec of the request's version (codec/).
//
//   const ops = new A2AOperations(service, store, { cache });
//   const wire = await ops.dispatch(caller, CODECS['1.0'], 'get', req);   // the encoded result
//
// The run-facing work (start, resume, wait, the projection) stays in service.ts, which speaks the
// stored form of messages and Tasks (the 0.3 shapes the event log has always held); this module
// is where that form meets the neutral one.
import type { Caller } from '../engine/engine.js';
import { EngineError } from '../engine/errors.js';
import { BytePage } from '../byte-page.js';
import { checkPushUrl } from '../egress/address.js';
import { deleteConfig, putConfig, view } from '../push/configs.js';
import { encodeCursor, decodeCursor } from '../store/cursor.js';
import { isTerminal, isWaiting, type PushConfigRecord, type TaskRecord } from '../store/model.js';
import type { Store } from '../store/store.js';
import { listTasksResponseText, v1_0 } from './codec/v1_0.js';
import { decodeTask, encodeStoredMessage } from './codec/v0_3.js';
import type { WireCodec } from './codec/codec.js';
import {
  A2AError,
  contentTypeNotSupported,
  extendedCardNotConfigured,
  invalidParams,
  pushNotSupported,
  pushUrlRefused,
  TASK_NOT_FOUND,
  taskNotCancelable,
  taskNotFound,
  unsupportedOperation,
} from './errors.js';
import { RawJson } from './jsonrpc.js';
import type * as N from './model.js';
import { encodePageToken } from './page-token.js';
import type { A2AService, PushSupport, StoredSendParams } from './service.js';
import type { TaskCache } from './task-cache.js';
import type { ProtocolVersion } from './versions.js';

/** The default of HANDOFF_LIST_MAX_BYTES (config.ts), for an A2AOperations built without it. */
const LIST_MAX_BYTES = 4 * 1024 * 1024;

/** The default page of ListTaskPushNotificationConfigs (1.0); 0.3 lists all (they are capped). */
const PUSH_LIST_DEFAULT = 100;

export class A2AOperations {
  constructor(
    private readonly service: A2AService,
    private readonly store: Store,
    private readonly opts: { cache?: TaskCache; push?: PushSupport; listMaxBytes?: number } = {},
  ) {}

  /** Run a non-streaming operation and encode its result for `codec`'s version. */
  async dispatch<O extends N.Operation>(
    caller: Caller,
    codec: WireCodec,
    op: O,
    req: N.RequestOf[O],
  ): Promise<unknown> {
    checkTenant(caller, (req as { tenant?: string }).tenant);
    const r = req as never;
    switch (op) {
      case 'send':
        return codec.encodeSendResult(await this.send(caller, r, codec.version));
      case 'get':
        return this.getEncoded(caller, codec, r);
      case 'list':
        return this.list(caller, r);
      case 'cancel':
        return codec.encodeTask(await this.cancel(caller, r));
      case 'push.create':
        return codec.encodePushConfig(await this.pushCreate(caller, r, codec.version));
      case 'push.get':
        return codec.encodePushConfig(await this.pushGet(caller, r));
      case 'push.list': {
        const page = await this.pushList(caller, r, codec.version === '0.3');
        return codec.encodePushConfigList(page.configs, page.nextPageToken);
      }
      case 'push.delete':
        await this.pushDelete(caller, r);
        return null;
      case 'card.extended':
        // 1.0: the card does not declare extendedAgentCard, so the operation is unsupported (-32004).
        if (codec.version === '0.3') throw extendedCardNotConfigured();
        throw unsupportedOperation('this agent declares no extended agent card (capabilities.extendedAgentCard)');
      default:
        // stream and subscribe are served as SSE by the endpoints, never as one reply.
        throw unsupportedOperation(`${op} must be requested as a stream`);
    }
  }

  // ------------------------------------------------------------------ messages and tasks

  async send(caller: Caller, req: N.SendRequest, version: ProtocolVersion): Promise<N.SendResult> {
    checkOutputModes(req.configuration.acceptedOutputModes);
    const task = await this.service.send(caller, toStoredSend(req, version));
    return { kind: 'task', task: decodeTask(task) };
  }

  /** GetTask: from the cache when the encoded Task is held (per version and history length). */
  private async getEncoded(caller: Caller, codec: WireCodec, req: N.GetTaskRequest): Promise<unknown> {
    const cache = this.opts.cache;
    const read = async () => codec.encodeTask(decodeTask(await this.service.task(caller, req.id, req.historyLength)));
    if (!cache) return read();
    const held = cache.get(req.id, caller.tenantId, req.historyLength, codec.version);
    if (held !== undefined) return new RawJson(held);
    const ticket = cache.begin(req.id);
    try {
      const text = JSON.stringify(await read());
      cache.put(ticket, caller.tenantId, req.historyLength, text, codec.version);
      return new RawJson(text);
    } finally {
      cache.end(ticket);
    }
  }

  async cancel(caller: Caller, req: N.TaskIdRequest): Promise<N.TaskView> {
    await this.service.visibleTask(caller, req.id);
    try {
      await this.service.engine.cancelRun(caller, req.id, 'canceled over A2A', 'a2a');
    } catch (err) {
      if (err instanceof EngineError && err.code === 'run_terminal') throw taskNotCancelable(req.id);
      if (err instanceof EngineError && err.code === 'not_found') throw taskNotFound(req.id);
      throw err;
    }
    // A run being executed passes through `cancelling`; the canceled Task is what the caller asked for.
    await this.service.waitFor(caller, req.id, (r) => isTerminal(r.status));
    return decodeTask(await this.service.task(caller, req.id));
  }

  /**
   * ListTasks: the caller's tenant only (the store is asked for nothing else), newest status
   * first, by keyset so a task created meanwhile never shifts a page. `totalSize` counts every
   * task matching the filters. Items are light — history only with `historyLength`, artifacts only
   * with `includeArtifacts` — and a page ends early, with its token, before its tasks would pass
   * `listMaxBytes` of JSON (a larger task comes alone). Answered as JSON text: each task is
   * serialized once, as the page is filled.
   */
  async list(caller: Caller, req: N.ListTasksRequest): Promise<RawJson> {
    const filter = {
      ...(req.contextId !== undefined ? { contextId: req.contextId } : {}),
      ...(req.state !== undefined ? { state: req.state } : {}),
      ...(req.statusTimestampAfter !== undefined ? { since: req.statusTimestampAfter } : {}),
    };
    const after = req.after && { updatedAt: req.after.timestamp, taskId: req.after.taskId };
    const [page, totalSize] = await Promise.all([
      this.store.tasks.pageWithRuns(caller.tenantId, filter, req.pageSize, after),
      this.store.tasks.count(caller.tenantId, filter),
    ]);
    const ask = { historyLength: req.historyLength ?? 0, artifacts: req.includeArtifacts };
    const shown = new BytePage(this.opts.listMaxBytes ?? LIST_MAX_BYTES);
    let last: TaskRecord | undefined;
    // One task at a time, its open interrupt (the draft to approve: megabytes) read as it comes:
    // what a page reads is bounded by its bytes too.
    for (const { rec, run } of page.tasks) {
      const open = isWaiting(run.status) ? await this.store.interrupts.getOpen(run.runId) : undefined;
      const view = decodeTask(await this.service.listedTask(rec, run, open, ask));
      if (!req.includeArtifacts) delete view.artifacts;
      else view.artifacts ??= [];
      if (!shown.add(JSON.stringify(v1_0.encodeTask(view)))) break;
      last = rec;
    }
    const more = page.more || shown.items.length < page.tasks.length;
    return new RawJson(
      listTasksResponseText({
        tasks: shown.json(),
        nextPageToken: more && last ? encodePageToken({ timestamp: last.updatedAt, taskId: last.taskId }) : '',
        pageSize: req.pageSize,
        totalSize,
      }),
    );
  }

  // ------------------------------------------------------------------ push notification configs

  private pushSupport(): PushSupport {
    if (!this.opts.push) throw pushNotSupported();
    return this.opts.push;
  }

  /** Register a config in `version`: the pushes it causes speak that version. */
  async pushCreate(caller: Caller, req: N.PushCreateRequest, version: ProtocolVersion = '0.3'): Promise<N.PushConfig> {
    const { vault, policy, maxConfigsPerTask } = this.pushSupport();
    const verdict = checkPushUrl(req.config.url, policy);
    if (!verdict.ok) throw pushUrlRefused(verdict, version, false);
    await this.service.visibleTask(caller, req.taskId);
    // A finished task will push nothing more: its caller secrets are not kept at all.
    const run = await this.service.engine.getRun(caller, req.taskId);
    const input = { ...(isTerminal(run.status) ? withoutSecrets(req.config) : req.config), protocolVersion: version };
    const saved = await this.store.transaction((tx) =>
      putConfig(tx, vault, req.taskId, caller.tenantId, input, maxConfigsPerTask, caller),
    );
    return publicConfig(req.taskId, saved);
  }

  /**
   * A config by id. Without an id, with "default" or with the task id, a task that has exactly
   * one config answers with it (what a `set` without an id registered, whatever id it got).
   */
  async pushGet(caller: Caller, req: N.PushGetRequest): Promise<N.PushConfig> {
    this.pushSupport();
    await this.service.visibleTask(caller, req.taskId);
    const configs = await this.tenantConfigs(caller, req.taskId);
    const id = req.id ?? req.taskId;
    const exact = configs.find((c) => c.configId === id);
    const only = configs.length === 1 && (id === req.taskId || id === 'default') ? configs[0] : undefined;
    const found = exact ?? only;
    if (!found) {
      throw new A2AError(
        TASK_NOT_FOUND,
        `Push notification config not found: ${JSON.stringify(id)} for task ${req.taskId}`,
        undefined,
        { taskId: req.taskId, configId: id },
      );
    }
    return publicConfig(req.taskId, view(found));
  }

  /** The task's configs by id; `all` (0.3) returns every one, else a page of `pageSize`. */
  async pushList(
    caller: Caller,
    req: N.PushListRequest,
    all: boolean,
  ): Promise<{ configs: N.PushConfig[]; nextPageToken: string }> {
    this.pushSupport();
    await this.service.visibleTask(caller, req.taskId);
    const configs = (await this.tenantConfigs(caller, req.taskId)).sort((a, b) => cmp(a.configId, b.configId));
    const shown = configs.map((c) => publicConfig(req.taskId, view(c)));
    if (all) return { configs: shown, nextPageToken: '' };
    const afterId = req.pageToken === undefined ? undefined : pushPageToken(req.pageToken);
    const rest = afterId === undefined ? shown : shown.filter((c) => cmp(c.id, afterId) > 0);
    const size = req.pageSize ?? PUSH_LIST_DEFAULT;
    const page = rest.slice(0, size);
    const last = page.at(-1);
    return { configs: page, nextPageToken: rest.length > size && last ? encodeCursor([last.id]) : '' };
  }

  /** Idempotent: deleting a config that is not there is no error. */
  async pushDelete(caller: Caller, req: N.PushDeleteRequest): Promise<void> {
    this.pushSupport();
    await this.service.visibleTask(caller, req.taskId);
    await this.store.transaction((tx) => deleteConfig(tx, req.taskId, req.id, caller));
  }

  private async tenantConfigs(caller: Caller, taskId: string): Promise<PushConfigRecord[]> {
    return (await this.store.pushConfigs.list(taskId)).filter((c) => c.tenantId === caller.tenantId);
  }
}

// ------------------------------------------------------------------ helpers

/**
 * A 1.0 request's `tenant` (or REST `/{tenant}` segment) must be the caller's own: the API key
 * decides the tenant, the field may only confirm it. Another tenant's name finds nothing.
 */
function checkTenant(caller: Caller, tenant: string | undefined): void {
  if (tenant === undefined || tenant === caller.tenantId) return;
  throw invalidParams(`tenant: ${JSON.stringify(tenant)} is not the tenant of this API key`, {
    errors: [{ path: 'tenant', message: 'is not the tenant of this API key' }],
  });
}

/** What a task's artifacts and messages are made of (the card's defaultOutputModes). */
const OUTPUT_MODES = ['application/json', 'text/plain'];

/** A caller that accepts none of them cannot be answered: -32005 before anything starts. */
export function checkOutputModes(accepted: string[] | undefined): void {
  if (!accepted || accepted.length === 0) return;
  const fits = (range: string, mode: string) => {
    const [type, sub] = range.trim().toLowerCase().split(';')[0]?.split('/') ?? [];
    const [mType, mSub] = mode.split('/');
    return (type === '*' || type === mType) && (sub === '*' || sub === mSub);
  };
  if (accepted.some((range) => OUTPUT_MODES.some((mode) => fits(range, mode)))) return;
  throw contentTypeNotSupported(
    `acceptedOutputModes ${JSON.stringify(accepted)}: this agent answers with ${OUTPUT_MODES.join(' or ')}`,
  );
}

/** The neutral send request as the service's stored (0.3) params. */
export function toStoredSend(req: N.SendRequest, protocolVersion: ProtocolVersion): StoredSendParams {
  const c = req.configuration;
  return {
    protocolVersion,
    message: encodeStoredMessage(req.message),
    configuration: {
      blocking: c.blocking,
      ...(c.historyLength !== undefined ? { historyLength: c.historyLength } : {}),
      ...(c.acceptedOutputModes ? { acceptedOutputModes: c.acceptedOutputModes } : {}),
      ...(c.pushConfig ? { pushNotificationConfig: c.pushConfig } : {}),
    },
    ...(req.metadata ? { metadata: req.metadata } : {}),
  };
}

function withoutSecrets(c: N.PushConfigInput): N.PushConfigInput {
  const { token: _token, ...rest } = c;
  return rest.authentication ? { ...rest, authentication: { schemes: rest.authentication.schemes } } : rest;
}

/** A config as every read shows it: never the token or the credentials (A2A#1681). */
function publicConfig(taskId: string, v: { id: string; url: string; authentication?: { schemes: string[] } }) {
  return {
    id: v.id,
    taskId,
    url: v.url,
    ...(v.authentication ? { authentication: { schemes: v.authentication.schemes } } : {}),
  };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function pushPageToken(token: string): string {
  const [id] = decodeCursor(token, 1) ?? [];
  if (id === undefined) {
    throw invalidParams('pageToken: is not a page token from this server; pass nextPageToken unchanged', {
      errors: [{ path: 'pageToken', message: 'is not a page token from this server' }],
    });
  }
  return id;
}
