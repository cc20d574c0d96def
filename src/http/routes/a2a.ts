// The A2A surface: the agent card, the JSON-RPC endpoint, the A2ATaskState host read and (behind
// HANDOFF_TEST_SEAMS=1) the RFC 0100 conformance seams.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_CARD_PATH, buildA2ADiscoveryBlock, buildAgentCard } from '../../a2a/card.js';
import { type A2AError, TRY_LATER, toA2AError, tryLater } from '../../a2a/errors.js';
import {
  errorResponse,
  type JsonRpcId,
  paramsProblem,
  parseEnvelope,
  parseJson,
  successResponse,
  successText,
  tooDeep,
  validateParams,
} from '../../a2a/jsonrpc.js';
import type { A2AService } from '../../a2a/service.js';
import { type A2AStreams, type OpenedStream, trimmedTask } from '../../a2a/stream.js';
import type { MessageSendParams, Task, TaskIdParams } from '../../a2a/types.js';
import { invalidParams } from '../../a2a/errors.js';
import {
  parseLastEventId,
  type SseHub,
  type SseSlot,
  type SseStream,
  STREAMS_RETRY_AFTER_S,
  tooManyStreams,
} from '../sse.js';
import { JSON_MEDIA_TYPES } from '../json-body.js';
import { ACTIVE_RUNS_RETRY_AFTER_S, activeRunsRefusal } from '../quotas.js';
import { toTaskState } from '../../a2a/projection.js';
import type { Config } from '../../config.js';
import type { Engine } from '../../engine/engine.js';
import type { WorkflowRegistry } from '../../engine/workflow/loader.js';
import { type Static, Type } from '@sinclair/typebox';
import {
  A2ATaskList,
  A2ATaskState,
  AgentCard,
  DeliveryList,
  DeliveryQuery,
  JsonRpcErrorResponse,
  JsonRpcRequest,
  JsonRpcSuccessResponse,
  PushDelivery,
  SeamPushBody,
  SeamStartBody,
  TaskListQuery,
} from '../a2a-schemas.js';
import { BAD_MEDIA_TYPE, CROSS_SITE, failure, ref, TOO_LARGE, typed, UNAUTHORIZED, withHeaders } from '../schemas.js';
import type { A2ATaskState as A2ATaskStateRecord } from '../../a2a/types.js';
import { checkPushUrl, type EgressPolicy } from '../../egress/address.js';
import type { DeliveryRecord } from '../../store/model.js';
import { errorHandler, HttpError } from '../errors.js';
import { VERSION } from '../../version.js';

export interface A2ARouteDeps {
  config: Config;
  engine: Engine;
  workflows: WorkflowRegistry;
  service: A2AService;
  streams: A2AStreams;
  /** The egress policy push registrations are checked against (seam). */
  pushPolicy: EgressPolicy;
  pushWorker?: { kick(): void };
  /** The host's SSE streams (shared with the REST event stream). */
  sse: SseHub;
}

/** The features this host really serves; the card and the discovery block both read these. */
export const A2A_FEATURES = { streaming: true, pushNotifications: true } as const;

export function baseUrl(config: Config, req: FastifyRequest): string {
  if (config.publicUrl) return config.publicUrl;
  return `${req.protocol}://${req.host}`;
}

export function discoveryBlock(config: Config, req: FastifyRequest) {
  return buildA2ADiscoveryBlock({ baseUrl: baseUrl(config, req), ...A2A_FEATURES });
}

export function a2aRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  const card = (req: FastifyRequest) =>
    buildAgentCard({
      baseUrl: baseUrl(deps.config, req),
      name: 'Handoff',
      description: 'Durable, human-in-the-loop OpenWOP workflow runs as A2A tasks',
      version: VERSION,
      skills: deps.workflows
        .list()
        .filter((w) => w.public !== false)
        .map((w) => ({ id: w.id, name: w.name, description: w.description ?? w.name })),
      ...A2A_FEATURES,
      requireAuth: deps.config.apiKeys.size > 0,
    });
  const api = typed(app);
  const cardSchema = (operationId: string, summary: string) => ({
    operationId,
    tags: ['a2a'],
    summary,
    response: { 200: ref(AgentCard, 'The agent card.') },
  });
  api.get(
    AGENT_CARD_PATH,
    { config: { public: true }, schema: cardSchema('getAgentCard', 'A2A agent card (well-known location)') },
    async (req) => card(req),
  );
  api.get(
    '/v1/a2a/agent.json',
    { config: { public: true }, schema: cardSchema('getAgentCardV1', 'A2A agent card (OpenWOP location)') },
    async (req) => card(req),
  );

  const readRecord = async (req: FastifyRequest<{ Params: { taskId: string } }>) =>
    stateRecord(deps, req.caller.tenantId, req.params.taskId);
  api.get(
    '/v1/a2a/tasks/:taskId',
    {
      schema: {
        operationId: 'getA2ATaskState',
        tags: ['a2a'],
        summary: 'Durable A2A task state (RFC 0100)',
        description: 'The persisted A2ATaskState projection of a run (taskId equals runId).',
        params: TaskParams,
        response: {
          200: ref(A2ATaskState, 'The task state.'),
          401: UNAUTHORIZED,
          404: failure('No such task for this tenant (`not_found`).'),
        },
      },
    },
    readRecord,
  );
  taskListRoute(app, deps);
  deliveryRoutes(app, deps);

  // JSON-RPC: parse the body ourselves so malformed JSON is a JSON-RPC -32700, not a REST 400.
  // Only the JSON media types: a text/plain or form body (what a page may send cross-site without
  // a preflight) is 415 like on every REST write route, before anything is read.
  void app.register(async (plugin) => {
    const rpc = typed(plugin);
    rpc.removeAllContentTypeParsers();
    // The body schema documents the request; the handler parses and checks it (a malformed request
    // is a JSON-RPC error on HTTP 200, not a 400), so nothing is validated before it.
    rpc.setValidatorCompiler(() => () => true);
    rpc.addContentTypeParser(JSON_MEDIA_TYPES, { parseAs: 'string' }, (_req, body, done) => done(null, body));
    // A quota refusal of this route (HANDOFF_TENANT_RATE) is answered in JSON-RPC, on HTTP 429.
    rpc.setErrorHandler((err: Error, req, reply) => {
      if (!(err instanceof HttpError && err.statusCode === 429)) return errorHandler(err, req, reply);
      const after = Number(err.details?.retryAfterSeconds ?? 1);
      void reply.status(429).send(errorResponse(null, tryLater(err.message, after)));
    });
    rpc.post('/v1/a2a', { schema: RPC_SCHEMA }, async (req, reply) => {
      // The raw text (the content-type parser above), not the parsed request the schema describes.
      const parsed = parseRequest(String((req.body as unknown) ?? ''), deps.config.jsonMaxDepth);
      if ('error' in parsed) return reply.header('Content-Type', 'application/json').send(parsed);
      void reply.header('Content-Type', 'application/json');
      if (startsRun(parsed)) {
        const refusal = await activeRunsRefusal(deps.engine.store, deps.config, req.caller.tenantId);
        if (refusal) return refuse(reply, 429, ACTIVE_RUNS_RETRY_AFTER_S, parsed.id, refusal);
      }
      if (STREAMING.has(parsed.method)) return streamRpc(deps, req, reply, parsed);
      return callRpc(deps.service, req, parsed);
    });
  });

  if (deps.config.testSeams) seamRoutes(app, deps, readRecord);
}

const STREAMING = new Set(['message/stream', 'tasks/resubscribe']);

const TaskParams = Type.Object({ taskId: Type.String() });

/** A quota or capacity refusal of the JSON-RPC endpoint: HTTP 429/503, Retry-After, error -32029. */
const rpcTryLater = (why: string) =>
  withHeaders(
    ref(
      JsonRpcErrorResponse,
      `${why}: a JSON-RPC error ${TRY_LATER} with \`data.retryAfterSeconds\` (A2A has no code for it).`,
    ),
    { 'Retry-After': { description: 'Seconds to wait before trying again.' } },
  );

const RPC_SCHEMA = {
  operationId: 'a2aJsonRpc',
  tags: ['a2a'],
  summary: 'A2A v0.3 JSON-RPC endpoint',
  description:
    'One JSON-RPC 2.0 request per call. Every JSON-RPC outcome, including the -32xxx errors (parse error, invalid ' +
    'request, unknown method, invalid params, task not found, …), is answered with **HTTP 200** and a JSON-RPC ' +
    'error object. HTTP errors are only those of the transport: authentication, body size, media type. ' +
    '`message/stream` and `tasks/resubscribe` answer `text/event-stream`: each `data:` is one JSON-RPC response, ' +
    'each `id:` the run event sequence; `tasks/resubscribe` resumes after `Last-Event-ID` (header or ' +
    '`params.metadata.lastEventId`).',
  body: ref(JsonRpcRequest),
  response: {
    200: Type.Unsafe<string | JsonRpcResponse>({
      description: 'A JSON-RPC response: a result, or an error object (HTTP status 200 either way).',
      content: {
        'application/json': {
          schema: { oneOf: [{ $ref: JsonRpcSuccessResponse.$id }, { $ref: JsonRpcErrorResponse.$id }] },
        },
        'text/event-stream': { schema: { type: 'string', description: 'SSE frames of JSON-RPC responses.' } },
      },
    }),
    401: UNAUTHORIZED,
    403: CROSS_SITE,
    413: TOO_LARGE,
    415: BAD_MEDIA_TYPE,
    429: rpcTryLater(
      'The tenant is over a quota (HANDOFF_TENANT_RATE; HANDOFF_TENANT_MAX_ACTIVE_RUNS for a message that starts a task)',
    ),
    503: rpcTryLater('A streaming method when the host already serves HANDOFF_SSE_MAX_STREAMS streams'),
  },
};

type JsonRpcResponse = ReturnType<typeof errorResponse>;

interface RpcCall {
  id: string | number | null;
  method: string;
  params: unknown;
}

/**
 * Parse and validate a JSON-RPC request; a failure is already the error response to send. The
 * depth limit comes first, before anything walks the value.
 */
function parseRequest(text: string, maxDepth: number): RpcCall | ReturnType<typeof errorResponse> {
  const json = parseJson(text);
  if (!json.ok) return errorResponse(null, json.error);
  const deep = tooDeep(json.value, maxDepth);
  if (deep) return errorResponse(deep.id, deep.error);
  const env = parseEnvelope(json.value);
  if (!env.ok) return errorResponse(env.id, env.error);
  const bad = paramsProblem(env.method, env.params, maxDepth) ?? validateParams(env.method, env.params);
  if (bad) return errorResponse(env.id, bad);
  return { id: env.id, method: env.method, params: env.params };
}

/** message/send and message/stream without a taskId start a run (HANDOFF_TENANT_MAX_ACTIVE_RUNS). */
const startsRun = (call: RpcCall): boolean =>
  (call.method === 'message/send' || call.method === 'message/stream') &&
  (call.params as MessageSendParams).message.taskId === undefined;

/** A quota or capacity refusal: the HTTP status and Retry-After, and the JSON-RPC error saying why. */
function refuse(reply: FastifyReply, status: 429 | 503, retryAfterS: number, id: JsonRpcId, message: string) {
  return reply
    .status(status)
    .header('Retry-After', String(retryAfterS))
    .header('Content-Type', 'application/json')
    .send(errorResponse(id, tryLater(message, retryAfterS)));
}

/** An internal failure is answered generically and logged once, with the request id (req.log). */
function wireError(req: FastifyRequest, err: unknown): A2AError {
  const wire = toA2AError(err);
  if (wire.code === -32603) req.log.error({ err }, 'request failed');
  return wire;
}

async function callRpc(service: A2AService, req: FastifyRequest, call: RpcCall) {
  try {
    return successText(call.id, await service.call(req.caller, call.method, call.params));
  } catch (err) {
    return errorResponse(call.id, wireError(req, err));
  }
}

/** message/stream and tasks/resubscribe: errors before the first event are plain JSON-RPC errors;
 * after it, an `error` event. Each event's SSE id is the run event sequence. */
async function streamRpc(deps: A2ARouteDeps, req: FastifyRequest, reply: FastifyReply, call: RpcCall) {
  // The place is held before the task is started or resumed: a refusal has no side effect.
  const slot: SseSlot | undefined = deps.sse.reserve();
  if (!slot) return refuse(reply, 503, STREAMS_RETRY_AFTER_S, call.id, tooManyStreams(deps.sse));
  let opened: OpenedStream;
  try {
    opened = await openStream(deps, req, call);
  } catch (err) {
    slot.release();
    return reply.send(errorResponse(call.id, wireError(req, err)));
  }
  const sse = slot.open(reply);
  try {
    sendFirst(sse, call.id, opened);
    for await (const item of deps.streams.updates(opened, sse.signal)) {
      if (!(await sse.ready())) break;
      sse.send(successResponse(call.id, item.result), idOf(item.id));
    }
  } catch (err) {
    sse.send(errorResponse(call.id, wireError(req, err)), { event: 'error' });
  }
  sse.close();
}

/**
 * The first frame is the whole Task; one too large for the per-stream cap goes trimmed. The Task
 * is let go once sent: a stream lives for hours, and a thousand of them must not hold a thousand
 * Tasks.
 */
function sendFirst(sse: SseStream, id: JsonRpcId, opened: OpenedStream): void {
  const first = opened.first;
  if (!first) return;
  delete opened.first;
  sse.send(successResponse(id, first.result), idOf(first.id), () =>
    successResponse(id, trimmedTask(first.result as Task)),
  );
}

const idOf = (id: number | undefined) => (id === undefined || id < 0 ? {} : { id });

function openStream(deps: A2ARouteDeps, req: FastifyRequest, call: RpcCall): Promise<OpenedStream> {
  if (call.method === 'message/stream') return deps.streams.openMessage(req.caller, call.params as MessageSendParams);
  const params = call.params as TaskIdParams;
  let after: number | undefined;
  try {
    after = parseLastEventId(req.headers['last-event-id'] ?? params.metadata?.lastEventId);
  } catch (err) {
    throw invalidParams((err as Error).message);
  }
  return deps.streams.openObserver(req.caller, params.id, after);
}

/** The RFC 0100 record, with the task's default push config (id == task id, else the first). */
async function stateRecord(deps: A2ARouteDeps, tenantId: string, taskId: string): Promise<A2ATaskStateRecord> {
  const rec = await deps.engine.store.tasks.get(taskId, tenantId);
  if (!rec) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
  const configs = await deps.engine.store.pushConfigs.list(taskId);
  const main = configs.find((c) => c.configId === taskId) ?? configs[0];
  const fingerprint = main?.tokenFingerprint ? { tokenFingerprint: main.tokenFingerprint } : {};
  return toTaskState(rec, main && { url: main.url, ...fingerprint });
}

/** The caller's tasks as A2ATaskState records, most recently changed first. */
function taskListRoute(app: FastifyInstance, deps: A2ARouteDeps): void {
  const schema = {
    operationId: 'listA2ATasks',
    tags: ['a2a'],
    summary: 'The caller’s tasks (A2ATaskState records), most recently changed first',
    querystring: TaskListQuery,
    response: {
      200: ref(A2ATaskList, 'One page of tasks.'),
      400: failure('Invalid query or cursor (`validation_error`).'),
      401: UNAUTHORIZED,
    },
  };
  typed(app).get('/v1/a2a/tasks', { schema }, async (req) => {
    try {
      const page = await deps.engine.store.tasks.list(req.caller.tenantId, {
        ...req.query,
        limit: req.query.limit ?? 50,
      });
      const tasks = page.tasks.map((t) => toTaskState(t));
      return { tasks, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    } catch (err) {
      if (err instanceof RangeError) throw new HttpError(400, 'validation_error', err.message);
      throw err;
    }
  });
}

/** Operators see push deliveries of their tenant and can retry a dead-lettered one. */
function deliveryRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  const api = typed(app);
  const list = {
    operationId: 'listPushDeliveries',
    tags: ['a2a'],
    summary: 'Push deliveries of the caller’s tenant (operators)',
    description:
      'The push outbox, newest first: pending (with the next attempt time), delivered, dead-lettered, cancelled.',
    querystring: DeliveryQuery,
    response: { 200: ref(DeliveryList, 'The deliveries.'), 400: failure('Invalid query.'), 401: UNAUTHORIZED },
  };
  api.get('/v1/a2a/deliveries', { schema: list }, async (req) => {
    const deliveries = await deps.engine.store.outbox.list(req.caller.tenantId, req.query);
    return { deliveries: deliveries.map(deliveryView) };
  });
  const retry = {
    operationId: 'retryPushDelivery',
    tags: ['a2a'],
    summary: 'Retry a dead-lettered push delivery',
    params: Type.Object({ id: Type.String() }),
    response: {
      200: ref(PushDelivery, 'The delivery, pending again with its attempts reset.'),
      401: UNAUTHORIZED,
      403: CROSS_SITE,
      404: failure('No such delivery for this tenant (`not_found`).'),
      409: failure('Only dead-lettered deliveries can be retried (`delivery_not_dead`).'),
    },
  };
  api.post('/v1/a2a/deliveries/:id/retry', { schema: retry }, async (req) => {
    const row = await deps.engine.store.outbox.retryDead(req.caller.tenantId, req.params.id);
    if (row) {
      deps.pushWorker?.kick();
      return deliveryView(row);
    }
    const existing = await deps.engine.store.outbox.get(req.caller.tenantId, req.params.id);
    if (!existing) throw new HttpError(404, 'not_found', `delivery ${req.params.id} not found`);
    throw new HttpError(
      409,
      'delivery_not_dead',
      `delivery ${req.params.id} is ${existing.state}; only dead-lettered deliveries can be retried`,
    );
  });
}

function deliveryView(r: DeliveryRecord): Static<typeof PushDelivery> {
  return {
    deliveryId: r.deliveryId,
    taskId: r.taskId,
    configId: r.configId,
    state: r.state,
    final: r.final,
    attempts: r.attempts,
    nextAttemptAt: r.state === 'pending' ? new Date(r.nextAttemptAt).toISOString() : null,
    lastStatus: r.lastStatus ?? null,
    lastError: r.lastError ?? null,
    createdAt: r.createdAt,
    deliveredAt: r.deliveredAt ?? null,
  };
}

/** RFC 0100 conformance seams (docs/protocol/openwop.md#conformance-seams): they drive the real code path. */
function seamRoutes(
  app: FastifyInstance,
  deps: A2ARouteDeps,
  readRecord: (req: FastifyRequest<{ Params: { taskId: string } }>) => Promise<A2ATaskStateRecord>,
): void {
  const api = typed(app);
  const WRITE_ERRORS = { 401: UNAUTHORIZED, 403: CROSS_SITE, 413: TOO_LARGE, 415: BAD_MEDIA_TYPE };
  const seam = (operationId: string, summary: string) => ({ operationId, tags: ['seams'], summary });
  const state = {
    ...seam('seamGetTaskState', 'The A2ATaskState record (the suite’s read)'),
    params: TaskParams,
    response: { 200: ref(A2ATaskState, 'The task state.'), 401: UNAUTHORIZED, 404: failure('No such task.') },
  };
  api.get('/v1/host/sample/a2a/tasks/:taskId', { schema: state }, readRecord);
  const start = {
    ...seam('seamStartTask', 'Start a task paused at an approval'),
    body: SeamStartBody,
    response: {
      201: Type.Object({ taskId: Type.String() }, { description: 'The task, waiting for approval.' }),
      400: failure('`scenario` is not `paused-at-approval` (`validation_error`).'),
      ...WRITE_ERRORS,
    },
  };
  // Like cancel, a bare POST is allowed (and answered by the handler's own check).
  const bare = {
    preValidation: async (req: FastifyRequest) => {
      req.body ??= {};
    },
  };
  api.post('/v1/host/sample/a2a/tasks/start', { schema: start, ...bare }, async (req, reply) => {
    if (req.body?.scenario !== 'paused-at-approval') {
      throw new HttpError(400, 'validation_error', "scenario must be 'paused-at-approval'");
    }
    const { run } = await deps.engine.startRun(req.caller, {
      workflowId: 'approval',
      inputs: { prompt: 'conformance' },
    });
    // Return only once the run really is waiting for approval (the suite reads at once).
    await deps.service.waitFor(req.caller, run.runId, (r) => r.status !== 'pending' && r.status !== 'running');
    return reply.status(201).send({ taskId: run.runId });
  });
  // Guard first (a denied URL is 400 before any task lookup), then the task, then the same
  // registration as tasks/pushNotificationConfig/set.
  const push = {
    ...seam('seamSetPushConfig', 'Register a push config through the egress guard'),
    body: SeamPushBody,
    response: {
      200: ref(A2ATaskState, 'The task state with its push config.'),
      400: failure('Not strings, or a URL the egress guard denies (`validation_error`, `a2a_push_egress_denied`).'),
      ...WRITE_ERRORS,
      404: failure('No such task.'),
    },
  };
  api.post('/v1/host/sample/a2a/tasks/push-config', { schema: push, ...bare }, async (req) => {
    const { taskId, url } = req.body ?? {};
    if (typeof url !== 'string' || typeof taskId !== 'string')
      throw new HttpError(400, 'validation_error', 'taskId and url must be strings');
    const verdict = checkPushUrl(url, deps.pushPolicy);
    if (!verdict.ok)
      throw new HttpError(400, 'a2a_push_egress_denied', verdict.reason, { arm: verdict.arm, code: verdict.code });
    try {
      await deps.service.call(req.caller, 'tasks/pushNotificationConfig/set', {
        taskId,
        pushNotificationConfig: { url },
      });
    } catch (err) {
      const wire = toA2AError(err);
      if (wire.code === -32001) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
      if (wire.code === -32602) throw new HttpError(400, 'validation_error', wire.message);
      throw err;
    }
    return stateRecord(deps, req.caller.tenantId, taskId);
  });
}
