// The A2A surface: the agent card, the JSON-RPC endpoint, the A2ATaskState host read and (behind
// HANDOFF_TEST_SEAMS=1) the RFC 0100 conformance seams.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AGENT_CARD_PATH, type AgentCardOptions, buildA2ADiscoveryBlock } from '../../a2a/card.js';
import { type CardSigner, servedCard } from '../../a2a/card-signing.js';
import { agentCardFor } from '../../a2a/card-v1.js';
import { cardSchemes, type OidcVerifier } from '../oidc.js';
import { CODECS } from '../../a2a/codec/index.js';
import type { WireCodec } from '../../a2a/codec/codec.js';
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
} from '../../a2a/jsonrpc.js';
import type { Operation, RequestOf, SendRequest, TaskIdRequest } from '../../a2a/model.js';
import type { A2AOperations } from '../../a2a/operations.js';
import type { A2AService } from '../../a2a/service.js';
import { type A2AStreams, encodeItem, type OpenedStream, type StreamItem, trimmedTask } from '../../a2a/stream.js';
import type { Task } from '../../a2a/types.js';
import { cardVersion, jsonRpcMethod, requestedVersion, VERSION_HEADER } from '../../a2a/versions.js';
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
  AgentCardV1,
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
import {
  BAD_MEDIA_TYPE,
  CROSS_SITE,
  empty,
  failure,
  ref,
  TOO_LARGE,
  typed,
  UNAUTHORIZED,
  withHeaders,
} from '../schemas.js';
import { matchesEtag, strongEtag } from '../etag.js';
import type { A2ATaskState as A2ATaskStateRecord } from '../../a2a/types.js';
import { checkPushUrl, type EgressPolicy } from '../../egress/address.js';
import { BytePage } from '../../byte-page.js';
import type { DeliveryRecord } from '../../store/model.js';
import { taskListCursor } from '../../store/repos/task-records.js';
import { errorHandler, HttpError } from '../errors.js';
import { VERSION } from '../../version.js';

export interface A2ARouteDeps {
  config: Config;
  engine: Engine;
  workflows: WorkflowRegistry;
  service: A2AService;
  /** The operations over the neutral model, for every version and binding. */
  operations: A2AOperations;
  streams: A2AStreams;
  /** The egress policy push registrations are checked against (seam). */
  pushPolicy: EgressPolicy;
  pushWorker?: { kick(): void };
  /** The host's SSE streams (shared with the REST event stream). */
  sse: SseHub;
  /** HANDOFF_OIDC_ISSUER: the card declares the provider's schemes. */
  oidc?: OidcVerifier;
  /** HANDOFF_CARD_SIGNING_KEY_FILE: every card served is signed. */
  cardSigner?: CardSigner;
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
  const cardOptions = (req: FastifyRequest): AgentCardOptions => ({
    baseUrl: baseUrl(deps.config, req),
    name: 'Handoff',
    description: 'Durable, human-in-the-loop OpenWOP workflow runs as A2A tasks',
    version: VERSION,
    skills: deps.workflows
      .list()
      .filter((w) => w.public !== false)
      .map((w) => ({ id: w.id, name: w.name, description: w.description ?? w.name })),
    ...A2A_FEATURES,
    requireAuth: deps.config.apiKeys.size > 0 || deps.config.oidc !== undefined,
  });
  // The card's shape follows the A2A-Version asked for (absent: the 0.3 card, which also lists
  // supportedInterfaces): caches must key on the header. Its ETag is of the bytes sent, so each
  // version (and each base URL) has its own (A2A 1.0 §8.6.1).
  const card = async (req: FastifyRequest, reply: FastifyReply) => {
    const asked = versionAsked(req);
    const opts = { ...cardOptions(req), ...(await cardSchemes(deps.oidc)) };
    const body = JSON.stringify(
      await servedCard(deps.cardSigner, agentCardFor(cardVersion(asked.header, asked.query), opts), opts.baseUrl),
    );
    const etag = strongEtag(body);
    void reply.headers({ Vary: 'A2A-Version', 'Cache-Control': CARD_CACHE_CONTROL, ETag: etag });
    if (matchesEtag(req.headers['if-none-match'], etag)) return reply.status(304).send();
    return reply.type('application/json; charset=utf-8').send(body);
  };
  const api = typed(app);
  const cardSchema = (operationId: string, summary: string) => ({
    operationId,
    tags: ['a2a'],
    summary,
    response: {
      200: withHeaders(
        Type.Union([ref(AgentCard), ref(AgentCardV1)], {
          description:
            'The agent card: the 0.3 card (which also lists supportedInterfaces) unless A2A-Version asks for 1.0.',
        }),
        CARD_HEADERS,
      ),
      304: withHeaders(empty('Not modified: `If-None-Match` names the card’s current ETag.'), CARD_HEADERS),
    },
  });
  api.get(
    AGENT_CARD_PATH,
    { config: { public: true }, schema: cardSchema('getAgentCard', 'A2A agent card (well-known location)') },
    card,
  );
  api.get(
    '/v1/a2a/agent.json',
    { config: { public: true }, schema: cardSchema('getAgentCardV1', 'A2A agent card (OpenWOP location)') },
    card,
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
      void reply.header('Content-Type', 'application/json');
      const parsed = parseRequest(String(req.body ?? ''), deps.config.jsonMaxDepth);
      // The version first (absent = 0.3), then the method must be one of that version's.
      const asked = versionAsked(req);
      if ('refused' in parsed) {
        return streamingMethod(parsed.method, asked) ? sseError(reply, parsed.refused) : parsed.refused;
      }
      let call: RpcCall;
      let operation: Operation | undefined;
      try {
        const method = jsonRpcMethod(parsed.method, requestedVersion(asked.header, asked.query));
        operation = method.operation;
        const codec = CODECS[method.version];
        call = { id: parsed.id, codec, operation, request: codec.decodeRequest(operation, parsed.params) };
      } catch (err) {
        // A request naming a version gets the 1.0 error form, a bare one the 0.3 form.
        const codec = asked.header || asked.query ? CODECS['1.0'] : CODECS['0.3'];
        const error = rpcError(parsed.id, codec, wireError(req, err));
        return isStreaming(operation) ? sseError(reply, error) : error;
      }
      if (startsRun(call.operation, call.request)) {
        const refusal = await activeRunsRefusal(deps.engine.store, deps.config, req.caller.tenantId);
        if (refusal) return refuse(reply, 429, ACTIVE_RUNS_RETRY_AFTER_S, call.id, refusal);
      }
      if (call.operation === 'stream' || call.operation === 'subscribe') return streamRpc(deps, req, reply, call);
      try {
        return successText(
          call.id,
          await deps.operations.dispatch(req.caller, call.codec, call.operation, call.request),
        );
      } catch (err) {
        return rpcError(call.id, call.codec, wireError(req, err));
      }
    });
  });

  if (deps.config.testSeams) seamRoutes(app, deps, readRecord);
}

/** The card changes only with the host's configuration and workflows: caches may keep it a while. */
const CARD_CACHE_CONTROL = 'public, max-age=300';
const CARD_HEADERS = {
  'Cache-Control': { description: `\`${CARD_CACHE_CONTROL}\`` },
  ETag: { description: 'A strong tag of the exact bytes of this version’s card; send it back as `If-None-Match`.' },
  Vary: { description: '`A2A-Version`: the card’s shape follows the version asked for.' },
};

/** The version a request names: the A2A-Version header, else the query parameter. */
export function versionAsked(req: FastifyRequest): { header: unknown; query: unknown } {
  return { header: req.headers['a2a-version'], query: (req.query as Record<string, unknown>)[VERSION_HEADER] };
}

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
    'The streaming methods (`message/stream`, `tasks/resubscribe`, `SendStreamingMessage`, `SubscribeToTask`) ' +
    'answer `text/event-stream`, their errors too (unknown task, invalid params: the JSON-RPC error as the one ' +
    '`event: error`): each `data:` is one JSON-RPC response, ' +
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
  id: JsonRpcId;
  codec: WireCodec;
  operation: Operation;
  request: RequestOf[Operation];
}

/**
 * Parse a JSON-RPC request; a failure is already the error response to send. The depth limit
 * comes first, before anything walks the value; the params are validated by the version's codec.
 */
function parseRequest(
  text: string,
  maxDepth: number,
): { id: JsonRpcId; method: string; params: unknown } | { refused: ReturnType<typeof errorResponse>; method?: string } {
  const json = parseJson(text);
  if (!json.ok) return { refused: errorResponse(null, json.error) };
  const deep = tooDeep(json.value, maxDepth);
  if (deep) return { refused: errorResponse(deep.id, deep.error) };
  const env = parseEnvelope(json.value);
  if (!env.ok) return { refused: errorResponse(env.id, env.error) };
  const bad = paramsProblem(env.method, env.params, maxDepth);
  if (bad) return { refused: errorResponse(env.id, bad), method: env.method };
  return { id: env.id, method: env.method, params: env.params };
}

/** Whether `method` names a streaming method of the version asked for (whose errors are SSE). */
function streamingMethod(method: string | undefined, asked: ReturnType<typeof versionAsked>): boolean {
  if (method === undefined) return false;
  try {
    return isStreaming(jsonRpcMethod(method, requestedVersion(asked.header, asked.query)).operation);
  } catch {
    return false;
  }
}

const rpcError = (id: JsonRpcId, codec: WireCodec, err: A2AError) => ({
  jsonrpc: '2.0' as const,
  id,
  error: codec.encodeError(err),
});

/** A send or stream without a taskId starts a run (HANDOFF_TENANT_MAX_ACTIVE_RUNS). */
export const startsRun = (operation: Operation, request: unknown): boolean =>
  (operation === 'send' || operation === 'stream') && (request as SendRequest).message.taskId === undefined;

/** A quota or capacity refusal: the HTTP status and Retry-After, and the JSON-RPC error saying why. */
function refuse(reply: FastifyReply, status: 429 | 503, retryAfterS: number, id: JsonRpcId, message: string) {
  return reply
    .status(status)
    .header('Retry-After', String(retryAfterS))
    .header('Content-Type', 'application/json')
    .send(errorResponse(id, tryLater(message, retryAfterS)));
}

/** An internal failure is answered generically and logged once, with the request id (req.log). */
export function wireError(req: FastifyRequest, err: unknown): A2AError {
  const wire = toA2AError(err);
  if (wire.code === -32603) req.log.error({ err }, 'request failed');
  return wire;
}

/** message/stream, tasks/resubscribe, SendStreamingMessage, SubscribeToTask: errors before the
 * first event are plain JSON-RPC errors; after it, an `error` event. Each event's SSE id is the
 * run event sequence. */
async function streamRpc(deps: A2ARouteDeps, req: FastifyRequest, reply: FastifyReply, call: RpcCall) {
  // The place is held before the task is started or resumed: a refusal has no side effect.
  const slot: SseSlot | undefined = deps.sse.reserve();
  if (!slot) return refuse(reply, 503, STREAMS_RETRY_AFTER_S, call.id, tooManyStreams(deps.sse));
  let opened: OpenedStream;
  try {
    opened = await openStream(deps, req, call.codec, call.operation, call.request);
  } catch (err) {
    slot.release();
    return sseError(reply, rpcError(call.id, call.codec, wireError(req, err)));
  }
  await pumpStream(slot.open(reply), opened, deps.streams, {
    frame: (result) => successResponse(call.id, encodeItem(call.codec, result)),
    error: (err) => rpcError(call.id, call.codec, wireError(req, err)),
  });
}

/**
 * Send an opened stream to its end: the first frame (the Task), then each update as it comes
 * while the client keeps up, then close. A failure on the way is the stream's last event.
 */
export async function pumpStream(
  sse: SseStream,
  opened: OpenedStream,
  streams: A2AStreams,
  encode: { frame: (result: StreamItem['result']) => unknown; error: (err: unknown) => unknown },
): Promise<void> {
  try {
    sendFirst(sse, opened, encode.frame);
    for await (const item of streams.updates(opened, sse.signal)) {
      if (!(await sse.ready())) break;
      sse.send(encode.frame(item.result), idOf(item.id));
    }
  } catch (err) {
    sse.send(encode.error(err), { event: 'error' });
  }
  sse.close();
}

/**
 * The first frame is the whole Task; one too large for the per-stream cap goes trimmed. The Task
 * is let go once sent: a stream lives for hours, and a thousand of them must not hold a thousand
 * Tasks.
 */
export function sendFirst(sse: SseStream, opened: OpenedStream, frame: (result: StreamItem['result']) => unknown) {
  const first = opened.first;
  if (!first) return;
  delete opened.first;
  sse.send(frame(first.result), idOf(first.id), () => frame(trimmedTask(first.result as Task)));
}

export const isStreaming = (operation: Operation | undefined): boolean =>
  operation === 'stream' || operation === 'subscribe';

/**
 * A JSON-RPC streaming method refused before its stream opened (unknown task, bad params): still
 * `text/event-stream`, on HTTP 200, the error the one `error` event — a streaming client reads the
 * answer as SSE and would otherwise report a content-type mismatch instead of the error. (The
 * HTTP+JSON binding answers an HTTP error instead: a2a-rest.ts.)
 */
export function sseError(reply: FastifyReply, body: unknown): FastifyReply {
  return reply
    .status(200)
    .header('Content-Type', 'text/event-stream; charset=utf-8')
    .header('Cache-Control', 'no-cache')
    .send(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
}

export const idOf = (id: number | undefined) => (id === undefined || id < 0 ? {} : { id });

/** Open a send stream or a subscription. A resubscription's cursor is `Last-Event-ID` (or the
 * 0.3 `metadata.lastEventId`), in both versions. */
export function openStream(
  deps: A2ARouteDeps,
  req: FastifyRequest,
  codec: WireCodec,
  operation: Operation,
  request: RequestOf[Operation],
): Promise<OpenedStream> {
  checkTenantOf(req, request);
  if (operation === 'stream') return deps.streams.openMessage(req.caller, request as SendRequest, codec.version);
  const params = request as TaskIdRequest;
  let after: number | undefined;
  try {
    after = parseLastEventId(req.headers['last-event-id'] ?? params.metadata?.lastEventId);
  } catch (err) {
    throw invalidParams((err as Error).message);
  }
  return deps.streams.openObserver(req.caller, params.id, after, codec.version !== '0.3');
}

/** A stream's `tenant`, like every other operation's, may only name the caller's own tenant. */
function checkTenantOf(req: FastifyRequest, request: unknown): void {
  const tenant = (request as { tenant?: string }).tenant;
  if (tenant !== undefined && tenant !== req.caller.tenantId) {
    throw invalidParams(`tenant: ${JSON.stringify(tenant)} is not the tenant of this API key`);
  }
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
      // A page ends early, before its records would pass HANDOFF_LIST_MAX_BYTES of JSON (a
      // caller's contextId may be a megabyte); the first always fits.
      const shown = new BytePage(deps.config.listMaxBytes);
      const tasks: A2ATaskStateRecord[] = [];
      for (const rec of page.tasks) {
        const state = toTaskState(rec);
        if (!shown.add(JSON.stringify(state))) break;
        tasks.push(state);
      }
      const last = page.tasks[tasks.length - 1];
      const more = page.nextCursor !== undefined || tasks.length < page.tasks.length;
      return { tasks, ...(more && last ? { nextCursor: taskListCursor(last) } : {}) };
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
      await deps.operations.pushCreate(req.caller, { taskId, config: { url } });
    } catch (err) {
      const wire = toA2AError(err);
      if (wire.code === -32001) throw new HttpError(404, 'not_found', `task ${taskId} not found`);
      if (wire.code === -32602) throw new HttpError(400, 'validation_error', wire.message);
      throw err;
    }
    return stateRecord(deps, req.caller.tenantId, taskId);
  });
}
