// The A2A surface: the agent card, the JSON-RPC endpoint, the A2ATaskState host read and (behind
// HANDOFF_TEST_SEAMS=1) the RFC 0100 conformance seams.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { buildA2ADiscoveryBlock, buildAgentCard } from '../../a2a/card.js';
import { toA2AError } from '../../a2a/errors.js';
import {
  errorResponse,
  parseEnvelope,
  parseJson,
  successResponse,
  successText,
  validateParams,
} from '../../a2a/jsonrpc.js';
import type { A2AService } from '../../a2a/service.js';
import type { A2AStreams, OpenedStream } from '../../a2a/stream.js';
import type { MessageSendParams, TaskIdParams } from '../../a2a/types.js';
import { invalidParams } from '../../a2a/errors.js';
import { parseLastEventId, SseStream, streamRegistry } from '../sse.js';
import { toTaskState } from '../../a2a/projection.js';
import type { Config } from '../../config.js';
import type { Engine } from '../../engine/engine.js';
import type { WorkflowRegistry } from '../../engine/workflow/loader.js';
import { type Static, Type } from '@sinclair/typebox';
import type { A2ATaskState } from '../../a2a/types.js';
import { checkPushUrl, type EgressPolicy } from '../../egress/address.js';
import type { DeliveryRecord } from '../../store/model.js';
import { HttpError } from '../errors.js';
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
  app.get('/.well-known/agent-card.json', async (req) => card(req));
  app.get('/v1/a2a/agent.json', async (req) => card(req));

  const readRecord = async (req: FastifyRequest<{ Params: { taskId: string } }>) =>
    stateRecord(deps, req.caller.tenantId, req.params.taskId);
  app.get<{ Params: { taskId: string } }>('/v1/a2a/tasks/:taskId', readRecord);
  taskListRoute(app, deps);
  deliveryRoutes(app, deps);

  // JSON-RPC: parse the body ourselves so malformed JSON is a JSON-RPC -32700, not a REST 400.
  void app.register(async (rpc) => {
    rpc.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    // Whatever the declared type, the answer is JSON-RPC (a missing Content-Type is a client slip).
    rpc.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    const open = streamRegistry(rpc);
    rpc.post('/v1/a2a', async (req, reply) => {
      const parsed = parseRequest(String(req.body ?? ''));
      if ('error' in parsed) return reply.header('Content-Type', 'application/json').send(parsed);
      if (STREAMING.has(parsed.method)) return streamRpc(deps, open, req, reply, parsed);
      void reply.header('Content-Type', 'application/json');
      return callRpc(deps.service, req.caller, parsed);
    });
  });

  if (deps.config.testSeams) seamRoutes(app, deps, readRecord);
}

const STREAMING = new Set(['message/stream', 'tasks/resubscribe']);

interface RpcCall {
  id: string | number | null;
  method: string;
  params: unknown;
}

/** Parse and validate a JSON-RPC request; a failure is already the error response to send. */
function parseRequest(text: string): RpcCall | ReturnType<typeof errorResponse> {
  const json = parseJson(text);
  if (!json.ok) return errorResponse(null, json.error);
  const env = parseEnvelope(json.value);
  if (!env.ok) return errorResponse(env.id, env.error);
  const invalid = validateParams(env.method, env.params);
  if (invalid) return errorResponse(env.id, invalid);
  return { id: env.id, method: env.method, params: env.params };
}

async function callRpc(service: A2AService, caller: FastifyRequest['caller'], call: RpcCall) {
  try {
    return successText(call.id, await service.call(caller, call.method, call.params));
  } catch (err) {
    return errorResponse(call.id, toA2AError(err));
  }
}

/** message/stream and tasks/resubscribe: errors before the first event are plain JSON-RPC errors;
 * after it, an `error` event. Each event's SSE id is the run event sequence. */
async function streamRpc(
  deps: A2ARouteDeps,
  registry: Set<SseStream>,
  req: FastifyRequest,
  reply: FastifyReply,
  call: RpcCall,
) {
  let opened: OpenedStream;
  try {
    opened = await openStream(deps, req, call);
  } catch (err) {
    return reply.header('Content-Type', 'application/json').send(errorResponse(call.id, toA2AError(err)));
  }
  const sse = new SseStream(req, reply, deps.config.sse, registry);
  try {
    if (opened.first) sse.send(successResponse(call.id, opened.first.result), idOf(opened.first.id));
    for await (const item of deps.streams.updates(opened, sse.signal)) {
      if (!(await sse.ready())) break;
      sse.send(successResponse(call.id, item.result), idOf(item.id));
    }
  } catch (err) {
    sse.send(errorResponse(call.id, toA2AError(err)), { event: 'error' });
  }
  sse.close();
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
async function stateRecord(deps: A2ARouteDeps, tenantId: string, taskId: string): Promise<A2ATaskState> {
  const rec = await deps.engine.store.tasks.get(taskId, tenantId);
  if (!rec) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
  const configs = await deps.engine.store.pushConfigs.list(taskId);
  const main = configs.find((c) => c.configId === taskId) ?? configs[0];
  const fingerprint = main?.tokenFingerprint ? { tokenFingerprint: main.tokenFingerprint } : {};
  return toTaskState(rec, main && { url: main.url, ...fingerprint });
}

/** The caller's tasks as A2ATaskState records, most recently changed first. */
function taskListRoute(app: FastifyInstance, deps: A2ARouteDeps): void {
  const Query = Type.Object(
    {
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
      cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
      state: Type.Optional(Type.String({ minLength: 1 })),
      contextId: Type.Optional(Type.String({ minLength: 1 })),
    },
    { additionalProperties: false },
  );
  app.get<{ Querystring: Static<typeof Query> }>('/v1/a2a/tasks', { schema: { querystring: Query } }, async (req) => {
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
  const Query = Type.Object(
    {
      taskId: Type.Optional(Type.String({ minLength: 1 })),
      state: Type.Optional(Type.Union(['pending', 'delivered', 'dead', 'cancelled'].map((s) => Type.Literal(s)))),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    },
    { additionalProperties: false },
  );
  app.get<{ Querystring: Static<typeof Query> }>(
    '/v1/a2a/deliveries',
    { schema: { querystring: Query } },
    async (req) => {
      const deliveries = await deps.engine.store.outbox.list(req.caller.tenantId, req.query);
      return { deliveries: deliveries.map(deliveryView) };
    },
  );
  app.post<{ Params: { id: string } }>('/v1/a2a/deliveries/:id/retry', async (req) => {
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

function deliveryView(r: DeliveryRecord) {
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

/** RFC 0100 conformance seams (spec/openwop.md §6.5): they drive the real code path. */
function seamRoutes(
  app: FastifyInstance,
  deps: A2ARouteDeps,
  readRecord: (req: FastifyRequest<{ Params: { taskId: string } }>) => Promise<unknown>,
): void {
  app.get<{ Params: { taskId: string } }>('/v1/host/sample/a2a/tasks/:taskId', readRecord);
  app.post<{ Body: { scenario?: string } }>('/v1/host/sample/a2a/tasks/start', async (req, reply) => {
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
  app.post<{ Body: { taskId?: unknown; url?: unknown } }>('/v1/host/sample/a2a/tasks/push-config', async (req) => {
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
      if ((err as { code?: number }).code === -32001) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
      throw err;
    }
    return stateRecord(deps, req.caller.tenantId, taskId);
  });
}
