// The JSON-RPC binding of A2A 0.3 and 1.0 at POST /v1/a2a: the envelope, the version and method,
// the codec of that version to decode the params and encode the answer (or the error, in that
// version's form), the handler through the A2ABinding; the streaming methods answer SSE.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { CODECS } from '../../../a2a/codec/index.js';
import type { WireCodec } from '../../../a2a/codec/codec.js';
import { TRY_LATER } from '../../../a2a/codec/error-forms.js';
import { type A2AError, tryLater } from '../../../a2a/errors.js';
import {
  errorResponse,
  type JsonRpcId,
  paramsProblem,
  parseEnvelope,
  parseJson,
  successResponse,
  successText,
  tooDeep,
} from '../../../a2a/jsonrpc.js';
import type { Operation, RequestOf } from '../../../a2a/model.js';
import { jsonRpcMethod, requestedVersion } from '../../../a2a/versions.js';
import { JsonRpcErrorResponse, JsonRpcRequest, JsonRpcSuccessResponse } from '../../a2a-schemas.js';
import { errorHandler, HttpError } from '../../errors.js';
import { JSON_MEDIA_TYPES } from '../../json-body.js';
import { TooManyActiveRuns } from '../../quotas.js';
import { BAD_MEDIA_TYPE, CROSS_SITE, ref, TOO_LARGE, typed, UNAUTHORIZED, withHeaders } from '../../schemas.js';
import { type SseSlot, STREAMS_RETRY_AFTER_S, tooManyStreams } from '../../sse.js';
import type { A2ARouteDeps } from './index.js';
import { versionAsked } from './index.js';
import { isStreaming, openStream, pumpStream, sseError, startsRun, wireError } from './streams.js';

export function jsonRpcRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
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
        try {
          await deps.quota.admit(req, reply);
        } catch (err) {
          if (!(err instanceof TooManyActiveRuns)) throw err;
          return refuse(reply, 429, Number(err.details?.retryAfterSeconds), call.id, err.message);
        }
      }
      if (call.operation === 'stream' || call.operation === 'subscribe') return streamRpc(deps, req, reply, call);
      try {
        return successText(call.id, await deps.binding.call(req.caller, call.codec, call.operation, call.request));
      } catch (err) {
        return rpcError(call.id, call.codec, wireError(req, err));
      }
    });
  });
}

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

/** A quota or capacity refusal: the HTTP status and Retry-After, and the JSON-RPC error saying why. */
function refuse(reply: FastifyReply, status: 429 | 503, retryAfterS: number, id: JsonRpcId, message: string) {
  return reply
    .status(status)
    .header('Retry-After', String(retryAfterS))
    .header('Content-Type', 'application/json')
    .send(errorResponse(id, tryLater(message, retryAfterS)));
}

/** message/stream, tasks/resubscribe, SendStreamingMessage, SubscribeToTask: errors before the
 * first event are plain JSON-RPC errors; after it, an `error` event. Each event's SSE id is the
 * run event sequence. */
async function streamRpc(deps: A2ARouteDeps, req: FastifyRequest, reply: FastifyReply, call: RpcCall) {
  // The place is held before the task is started or resumed: a refusal has no side effect.
  const slot: SseSlot | undefined = deps.sse.reserve();
  if (!slot) return refuse(reply, 503, STREAMS_RETRY_AFTER_S, call.id, tooManyStreams(deps.sse));
  let opened: Awaited<ReturnType<typeof openStream>>;
  try {
    opened = await openStream(deps, req, call.codec, call.operation, call.request);
  } catch (err) {
    slot.release();
    return sseError(reply, rpcError(call.id, call.codec, wireError(req, err)));
  }
  await pumpStream(slot.open(reply), opened, {
    codec: call.codec,
    frame: (wire) => successResponse(call.id, wire),
    error: (err) => rpcError(call.id, call.codec, wireError(req, err)),
  });
}
