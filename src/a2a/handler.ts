// The A2A handler: one method per operation, over the neutral model (model.ts), whatever the
// protocol version or binding that carried the request. The bindings (JSON-RPC 0.3 and 1.0,
// HTTP+JSON 1.0: binding.ts and src/http/routes/a2a/) decode a request into the neutral one,
// call a method, and encode its answer or error; each method's comment states its error contract
// in semantic errors (errors.ts), which only the bindings map to wire codes (codec/error-forms.ts).
//
//   const handler: A2AHandler = new TaskHandler(service, streams, store, { cache, push });
//   const task = await handler.get({ caller, version: '1.0' }, { id });
//
// The run-facing work (start, resume, wait, the projection) is the service's (service.ts).
import type { Caller } from '../engine/engine.js';
import { EngineError } from '../engine/errors.js';
import { BytePage } from '../byte-page.js';
import { checkPushUrl } from '../egress/address.js';
import { deleteConfig, putConfig, view } from '../push/configs.js';
import { encodeCursor, decodeCursor } from '../store/cursor.js';
import { isTerminal, isWaiting, type PushConfigRecord, type TaskRecord } from '../store/model.js';
import type { Store } from '../store/store.js';
import { agentCardFor } from './card-v1.js';
import { v1_0 } from './codec/v1_0.js';
import type { AgentCardOptions } from './v0_3/card.js';
import {
  contentTypeNotSupported,
  extendedCardNotConfigured,
  invalidParams,
  pushConfigNotFound,
  pushNotSupported,
  pushUrlRefused,
  taskNotCancelable,
  taskNotFound,
  unsupportedOperation,
} from './errors.js';
import type * as N from './model.js';
import { encodePageToken } from './page-token.js';
import type { A2AService, PushSupport } from './service.js';
import type { A2AStreams, OpenedStream, StreamItem } from './stream.js';
import type { ProtocolVersion } from './versions.js';

/** Who asks, and in which protocol version (what a push config registered now will speak). */
export interface CallContext {
  caller: Caller;
  version: ProtocolVersion;
}

/** One page of ListTasks. */
export interface TaskPage {
  tasks: N.TaskView[];
  /** '' on the last page. */
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

/** An open stream of a task: its first item (the Task, when there is one to send first), then
 * the items that follow, to the stream's end. */
export interface TaskStream {
  /** Let go once sent: a stream lives for hours, and a thousand of them must not hold a thousand Tasks. */
  first?: StreamItem;
  updates(signal: AbortSignal): AsyncGenerator<StreamItem>;
}

/** A subscription: the task, and the event sequence to resume after (the binding reads it from
 * `Last-Event-ID`, or 0.3's `metadata.lastEventId`), if any. */
export interface SubscribeRequest extends N.TaskIdRequest {
  after?: number;
}

/**
 * The A2A operations. Every method checks that a request's `tenant` names the caller's own
 * (else invalid-params), and answers a task of another tenant as task-not-found.
 */
export interface A2AHandler {
  /** SendMessage / message/send: start a task, or resume one with a reply. Errors: invalid-params
   * (unknown skill, a reply the open interrupt cannot take, a refused push URL, too many configs),
   * task-not-found (a reply to no task of the caller), unsupported-operation (a reply to a finished
   * task or one not waiting), content-type-not-supported (acceptedOutputModes), push-not-supported. */
  send(ctx: CallContext, req: N.SendRequest): Promise<N.SendResult>;
  /** SendStreamingMessage / message/stream: as `send`, its errors before the stream opens. */
  stream(ctx: CallContext, req: N.SendRequest): Promise<TaskStream>;
  /** GetTask / tasks/get. Errors: task-not-found. */
  get(ctx: CallContext, req: N.GetTaskRequest): Promise<N.TaskView>;
  /** ListTasks (1.0). Errors: invalid-params (a page token not from this server). */
  list(ctx: CallContext, req: N.ListTasksRequest): Promise<TaskPage>;
  /** CancelTask / tasks/cancel: answers the canceled Task. Errors: task-not-found,
   * task-not-cancelable (already finished). */
  cancel(ctx: CallContext, req: N.TaskIdRequest): Promise<N.TaskView>;
  /** SubscribeToTask / tasks/resubscribe. Errors: task-not-found, invalid-params (a bad cursor),
   * unsupported-operation (1.0: a finished task, nothing to subscribe to). */
  subscribe(ctx: CallContext, req: SubscribeRequest): Promise<TaskStream>;
  /** Create / set a push config. Errors: push-not-supported, invalid-params (refused URL, too many
   * configs), task-not-found. */
  setPushConfig(ctx: CallContext, req: N.PushCreateRequest): Promise<N.PushConfig>;
  /** Errors: push-not-supported, task-not-found (no such task, or no such config). */
  getPushConfig(ctx: CallContext, req: N.PushGetRequest): Promise<N.PushConfig>;
  /** 0.3 lists every config; 1.0 pages them. Errors: push-not-supported, task-not-found,
   * invalid-params (a page token not from this server). */
  listPushConfigs(
    ctx: CallContext,
    req: N.PushListRequest,
  ): Promise<{ configs: N.PushConfig[]; nextPageToken: string }>;
  /** Idempotent. Errors: push-not-supported, task-not-found. */
  deletePushConfig(ctx: CallContext, req: N.PushDeleteRequest): Promise<void>;
  /** The public agent card in `version`'s shape (0.3: the card that also lists supportedInterfaces),
   * its URLs under `baseUrl`. No errors. */
  /** `extra`: what the card says that the binding learns per request (the identity provider's schemes). */
  card(version: ProtocolVersion, baseUrl: string, extra?: Partial<AgentCardOptions>): unknown;
  /** The authenticated extended card. Errors: extended-card-not-configured (0.3),
   * unsupported-operation (1.0: the card declares none). */
  extendedCard(ctx: CallContext, req: N.ExtendedCardRequest): Promise<never>;
}

/** The default of HANDOFF_LIST_MAX_BYTES (config.ts), for a handler built without it. */
const LIST_MAX_BYTES = 4 * 1024 * 1024;

/** The default page of ListTaskPushNotificationConfigs (1.0); 0.3 lists all (they are capped). */
const PUSH_LIST_DEFAULT = 100;

export class TaskHandler implements A2AHandler {
  constructor(
    private readonly service: A2AService,
    private readonly streams: A2AStreams,
    private readonly store: Store,
    private readonly opts: {
      /** What the card says (name, skills, features, auth), its URLs aside. */
      card: () => Omit<AgentCardOptions, 'baseUrl'>;
      push?: PushSupport;
      listMaxBytes?: number;
    },
  ) {}

  card(version: ProtocolVersion, baseUrl: string, extra: Partial<AgentCardOptions> = {}): unknown {
    return agentCardFor(version, { ...this.opts.card(), ...extra, baseUrl });
  }

  // ------------------------------------------------------------------ messages and tasks

  async send(ctx: CallContext, req: N.SendRequest): Promise<N.SendResult> {
    checkTenant(ctx.caller, req.tenant);
    checkOutputModes(req.configuration.acceptedOutputModes);
    return { kind: 'task', task: await this.service.send(ctx.caller, req, ctx.version) };
  }

  async stream(ctx: CallContext, req: N.SendRequest): Promise<TaskStream> {
    checkTenant(ctx.caller, req.tenant);
    checkOutputModes(req.configuration.acceptedOutputModes);
    return this.taskStream(await this.streams.openMessage(ctx.caller, req, ctx.version));
  }

  private taskStream(opened: OpenedStream): TaskStream {
    const { first } = opened;
    delete opened.first;
    const stream: TaskStream = { updates: (signal) => this.streams.updates(opened, signal) };
    if (first) stream.first = first;
    return stream;
  }

  async get(ctx: CallContext, req: N.GetTaskRequest): Promise<N.TaskView> {
    checkTenant(ctx.caller, req.tenant);
    return this.service.task(ctx.caller, req.id, req.historyLength);
  }

  async subscribe(ctx: CallContext, req: SubscribeRequest): Promise<TaskStream> {
    checkTenant(ctx.caller, req.tenant);
    return this.taskStream(await this.streams.openObserver(ctx.caller, req.id, req.after, ctx.version !== '0.3'));
  }

  async extendedCard(ctx: CallContext, req: N.ExtendedCardRequest): Promise<never> {
    checkTenant(ctx.caller, req.tenant);
    // 1.0: the card does not declare extendedAgentCard, so the operation is unsupported.
    if (ctx.version === '0.3') throw extendedCardNotConfigured();
    throw unsupportedOperation('this agent declares no extended agent card (capabilities.extendedAgentCard)');
  }

  async cancel(ctx: CallContext, req: N.TaskIdRequest): Promise<N.TaskView> {
    checkTenant(ctx.caller, req.tenant);
    const { caller } = ctx;
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
    return this.service.task(caller, req.id);
  }

  /**
   * ListTasks: the caller's tenant only (the store is asked for nothing else), newest status
   * first, by keyset so a task created meanwhile never shifts a page. `totalSize` counts every
   * task matching the filters. Items are light — history only with `historyLength`, artifacts only
   * with `includeArtifacts` — and a page ends early, with its token, before its tasks would pass
   * `listMaxBytes` of JSON on the 1.0 wire, the one that has this operation (a larger task comes
   * alone).
   */
  async list(ctx: CallContext, req: N.ListTasksRequest): Promise<TaskPage> {
    checkTenant(ctx.caller, req.tenant);
    const { caller } = ctx;
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
    const tasks: N.TaskView[] = [];
    let last: TaskRecord | undefined;
    // One task at a time, its open interrupt (the draft to approve: megabytes) read as it comes:
    // what a page reads is bounded by its bytes too.
    for (const { rec, run } of page.tasks) {
      const open = isWaiting(run.status) ? await this.store.interrupts.getOpen(run.runId) : undefined;
      const view = await this.service.listedTask(rec, run, open, ask);
      if (!req.includeArtifacts) delete view.artifacts;
      else view.artifacts ??= [];
      if (!shown.add(JSON.stringify(v1_0.encodeTask(view)))) break;
      tasks.push(view);
      last = rec;
    }
    const more = page.more || tasks.length < page.tasks.length;
    return {
      tasks,
      nextPageToken: more && last ? encodePageToken({ timestamp: last.updatedAt, taskId: last.taskId }) : '',
      pageSize: req.pageSize,
      totalSize,
    };
  }

  // ------------------------------------------------------------------ push notification configs

  private pushSupport(): PushSupport {
    if (!this.opts.push) throw pushNotSupported();
    return this.opts.push;
  }

  /** Register a config in the request's version: the pushes it causes speak that version. */
  async setPushConfig(ctx: CallContext, req: N.PushCreateRequest): Promise<N.PushConfig> {
    checkTenant(ctx.caller, req.tenant);
    const { caller, version } = ctx;
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
  async getPushConfig(ctx: CallContext, req: N.PushGetRequest): Promise<N.PushConfig> {
    checkTenant(ctx.caller, req.tenant);
    const { caller } = ctx;
    this.pushSupport();
    await this.service.visibleTask(caller, req.taskId);
    const configs = await this.tenantConfigs(caller, req.taskId);
    const id = req.id ?? req.taskId;
    const exact = configs.find((c) => c.configId === id);
    const only = configs.length === 1 && (id === req.taskId || id === 'default') ? configs[0] : undefined;
    const found = exact ?? only;
    if (!found) throw pushConfigNotFound(req.taskId, id);
    return publicConfig(req.taskId, view(found));
  }

  /** The task's configs by id; 0.3 returns every one, 1.0 a page of `pageSize`. */
  async listPushConfigs(
    ctx: CallContext,
    req: N.PushListRequest,
  ): Promise<{ configs: N.PushConfig[]; nextPageToken: string }> {
    checkTenant(ctx.caller, req.tenant);
    const { caller } = ctx;
    const all = ctx.version === '0.3';
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
  async deletePushConfig(ctx: CallContext, req: N.PushDeleteRequest): Promise<void> {
    checkTenant(ctx.caller, req.tenant);
    const { caller } = ctx;
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
function checkOutputModes(accepted: string[] | undefined): void {
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
