// The HTTP+JSON (REST) binding of A2A 1.0, under A2A_REST_PATH (and each route under /{tenant}):
// the routes of codec/rest.ts, each decoded into the neutral request and served by the same
// operations as JSON-RPC. Bodies are `application/a2a+json`; every error is a google.rpc.Status
// with an ErrorInfo (errors.ts `restError`), including the host's own refusals (auth, quotas,
// content type), so an official client reads them as typed errors.
//
// The interface is 1.0 only: a request must say `A2A-Version: 1.0` (header or query parameter);
// none means 0.3, which this binding does not serve (-32009, HTTP 400).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CODECS } from '../../../a2a/codec/index.js';
import { A2A_ERROR_DOMAIN, type RestErrorBody, restError } from '../../../a2a/codec/error-forms.js';
import { A2A_REST_PATH, decodeRestRequest, type RestRoute, REST_ROUTES } from '../../../a2a/codec/rest.js';
import { type A2AError, isA2AError, tryLater, versionNotSupported } from '../../../a2a/errors.js';
import { RawJson } from '../../../a2a/jsonrpc.js';
import { requestedVersion, VERSION_HEADER } from '../../../a2a/versions.js';
import { A2A_JSON, restRouteSchema } from '../../a2a-rest-schemas.js';
import { HttpError, toResponse } from '../../errors.js';
import { typed } from '../../schemas.js';
import { jsonBodyParser } from '../../json-body.js';
import { TooManyActiveRuns } from '../../quotas.js';
import { STREAMS_RETRY_AFTER_S, tooManyStreams } from '../../sse.js';
import { type A2ARouteDeps, versionAsked } from './index.js';
import { isStreaming, openStream, pumpStream, startsRun, wireError } from './streams.js';

export { A2A_JSON };
const V1 = CODECS['1.0'];

export function a2aRestRoutes(app: FastifyInstance, deps: A2ARouteDeps): void {
  void app.register(
    async (rest) => {
      // The same JSON parser and limits as every route, but an empty body is no body (HTTP+JSON
      // clients send `Content-Type: application/json` on body-less POSTs).
      rest.removeAllContentTypeParsers();
      jsonBodyParser(rest, deps.config.jsonMaxDepth, { allowEmpty: true });
      // The route schemas document the binding; the codec checks each request (decodeRestRequest),
      // so that a malformed one is answered in the binding's own error shape.
      rest.setValidatorCompiler(() => () => true);
      typed(rest); // bodies go out as sent, never reshaped by a response schema
      rest.setErrorHandler((err: FastifyError | Error, req, reply) => sendError(req, reply, err));
      rest.setNotFoundHandler((req, reply) =>
        sendError(req, reply, new HttpError(404, 'not_found', `no A2A route ${req.method} ${req.url.split('?')[0]}`)),
      );
      for (const route of REST_ROUTES) {
        rest.route({
          method: route.method,
          url: route.path,
          schema: restRouteSchema(route),
          handler: (req, reply) => handle(deps, route, req, reply),
        });
      }
    },
    { prefix: A2A_REST_PATH },
  );
}

async function handle(deps: A2ARouteDeps, route: RestRoute, req: FastifyRequest, reply: FastifyReply) {
  const asked = versionAsked(req);
  if (requestedVersion(asked.header, asked.query) !== '1.0') {
    throw versionNotSupported(
      '0.3',
      ['1.0'],
      `the HTTP+JSON binding serves A2A 1.0 only; send ${VERSION_HEADER}: 1.0 (no header means 0.3)`,
    );
  }
  const input = {
    params: req.params as Record<string, string>,
    query: req.query as Record<string, unknown>,
    body: req.body,
  };
  const request = decodeRestRequest(route.operation, input);
  if (startsRun(route.operation, request)) {
    try {
      await deps.quota.admit(req, reply);
    } catch (err) {
      if (err instanceof TooManyActiveRuns) throw tryLater(err.message, Number(err.details?.retryAfterSeconds));
      throw err;
    }
  }
  if (isStreaming(route.operation)) return stream(deps, route, request, req, reply);
  const result = await deps.binding.call(req.caller, V1, route.operation, request);
  void reply.status(route.status).header('Content-Type', A2A_JSON);
  if (route.status === 204) return reply.send();
  return reply.send(result instanceof RawJson ? result.text : JSON.stringify(result));
}

/** message:stream and tasks/{id}:subscribe: one StreamResponse per SSE event (the SSE id is the run
 * event sequence, for Last-Event-ID). A refusal before the stream opens (a finished task 400, an
 * unknown one 404, bad params 400) is an HTTP error like any route's, before any stream byte (A2A
 * 1.0 §11.6); an error after the first event is an `error` event. */
async function stream(
  deps: A2ARouteDeps,
  route: RestRoute,
  request: Parameters<typeof openStream>[4],
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const slot = deps.sse.reserve();
  if (!slot) {
    void reply.header('Retry-After', String(STREAMS_RETRY_AFTER_S));
    return sendError(req, reply, new HttpError(503, 'too_many_streams', tooManyStreams(deps.sse)));
  }
  let opened: Awaited<ReturnType<typeof openStream>>;
  try {
    opened = await openStream(deps, req, V1, route.operation, request);
  } catch (err) {
    slot.release();
    throw err;
  }
  await pumpStream(slot.open(reply), opened, {
    codec: V1,
    frame: (wire) => wire,
    error: (err) => restError(wireError(req, err)).body,
  });
}

/** An error of the binding (or of the router, on the binding's paths) as a google.rpc.Status. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: FastifyError | Error) {
  const { status, body } = isA2AError(err) ? a2aFailure(req, err) : hostFailure(req, err);
  return reply.status(status).header('Content-Type', A2A_JSON).send(JSON.stringify(body));
}

function a2aFailure(req: FastifyRequest, err: A2AError): { status: number; body: RestErrorBody } {
  const { httpStatus, body } = restError(wireError(req, err));
  // A quota refusal is 429 (its Retry-After is already on the reply).
  return { status: err.kind === 'try-later' ? 429 : httpStatus, body };
}

/** google.rpc.Code of the HTTP statuses the host itself answers with. */
const GRPC_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  414: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  503: 'UNAVAILABLE',
};

/** The host's own refusals (auth, quotas, body limits, content type) in the google.rpc.Status shape. */
function hostFailure(req: FastifyRequest, err: FastifyError | Error): { status: number; body: RestErrorBody } {
  if (!(err instanceof HttpError) && !(err as FastifyError).statusCode) return a2aFailure(req, wireError(req, err));
  const { status, body } = toResponse(err);
  // A 5xx the host answers on purpose (503 at the stream cap) keeps its status; any other is internal.
  if (status >= 500 && GRPC_STATUS[status] === undefined) return a2aFailure(req, wireError(req, err));
  return {
    status,
    body: {
      error: {
        code: status,
        status: GRPC_STATUS[status] ?? 'UNKNOWN',
        message: body.message,
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: body.error.toUpperCase(),
            domain: A2A_ERROR_DOMAIN,
          },
        ],
      },
    },
  };
}
