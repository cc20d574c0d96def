// A server span per request, when tracing is on (src/telemetry/). It continues the caller's trace:
// the `traceparent` header, else the `metadata.openwop.traceparent` of the A2A message in the body.
// A2A operations are named as the draft OpenTelemetry conventions for A2A name them (the 1.0
// method: SendMessage, GetTask, …) with `a2a.*` attributes; other routes `<METHOD> <route>`.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { A2A_RPC_PATH } from '../a2a/v0_3/card.js';
import { A2A_REST_PATH, REST_ROUTES } from '../a2a/codec/rest.js';
import { methodName, neutralMethodName } from '../a2a/versions.js';
import {
  type Attributes,
  contextOf,
  failSpanWith,
  receivedTraceContext,
  type Span,
  SpanKind,
  startSpan,
  withActiveSpan,
} from '../telemetry/tracing.js';

const spans = new WeakMap<FastifyRequest, Span>();

/** Register the hooks. Called only when tracing is on: otherwise no request pays for them. */
export function traceRequests(app: FastifyInstance): void {
  // After the body is parsed (an A2A message may carry the trace context), before validation.
  app.addHook('preValidation', (req, _reply, done) => {
    const parent = contextOf(callerTrace(req));
    const { name, attributes } = describe(req);
    const span = startSpan(name, { kind: SpanKind.SERVER, attributes, parent });
    if (!span) return done();
    spans.set(req, span);
    withActiveSpan(parent, span, done);
  });
  app.addHook('onResponse', (req, reply, done) => {
    const span = spans.get(req);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) failSpanWith(span, String(reply.statusCode));
      span.end();
    }
    done();
  });
}

/** The trace context the caller sent: the header first, then the A2A message's metadata. */
function callerTrace(req: FastifyRequest) {
  const header = receivedTraceContext(req.headers.traceparent, req.headers.tracestate);
  if (header) return header;
  const openwop = messageOf(req)?.metadata?.openwop;
  return openwop && typeof openwop === 'object'
    ? receivedTraceContext(
        (openwop as Record<string, unknown>).traceparent,
        (openwop as Record<string, unknown>).tracestate,
      )
    : undefined;
}

interface MessageLike {
  taskId?: unknown;
  contextId?: unknown;
  messageId?: unknown;
  metadata?: { openwop?: unknown };
}

/** The A2A message of a JSON-RPC or HTTP+JSON send, if the body holds one. */
function messageOf(req: FastifyRequest): MessageLike | undefined {
  const body = bodyOf(req) as { params?: { message?: unknown }; message?: unknown } | undefined;
  const msg = body?.params?.message ?? body?.message;
  return msg && typeof msg === 'object' ? (msg as MessageLike) : undefined;
}

// The JSON-RPC route reads its body as text (a malformed one is a JSON-RPC error, answered by the
// handler). With tracing on, the span needs the method and the message's trace context first: the
// text is parsed once more here, at most this many characters of it.
const MAX_PEEK = 256 * 1024;
const peeked = new WeakMap<FastifyRequest, unknown>();

function bodyOf(req: FastifyRequest): unknown {
  if (typeof req.body !== 'string') return req.body;
  if (peeked.has(req)) return peeked.get(req);
  let value: unknown;
  try {
    value = req.body.length <= MAX_PEEK ? JSON.parse(req.body) : undefined;
  } catch {
    value = undefined; // the handler answers it
  }
  peeked.set(req, value);
  return value;
}

function describe(req: FastifyRequest): { name: string; attributes: Attributes } {
  const route = req.routeOptions.url ?? 'unknown';
  const attributes: Attributes = { 'http.request.method': req.method, 'http.route': route };
  const tenant = (req as { caller?: { tenantId?: string } }).caller?.tenantId;
  const method = a2aMethod(req, route);
  if (!method) return { name: `${req.method} ${route}`, attributes };
  attributes['a2a.method.name'] = method;
  if (tenant) attributes['a2a.tenant'] = tenant;
  const msg = messageOf(req);
  const taskId = str(msg?.taskId) ?? str((req.params as Record<string, unknown>)?.id) ?? paramsId(req);
  if (taskId) attributes['a2a.task.id'] = taskId;
  const contextId = str(msg?.contextId);
  if (contextId) attributes['a2a.context.id'] = contextId;
  const messageId = str(msg?.messageId);
  if (messageId) attributes['a2a.message.id'] = messageId;
  return { name: method, attributes };
}

/** The A2A 1.0 method a request calls, if it is an A2A request. */
function a2aMethod(req: FastifyRequest, route: string): string | undefined {
  if (route === A2A_RPC_PATH && req.method === 'POST') {
    const m = (bodyOf(req) as { method?: unknown } | undefined)?.method;
    return typeof m === 'string' ? neutralMethodName(m) : undefined;
  }
  if (!route.startsWith(A2A_REST_PATH)) return undefined;
  const r = REST_ROUTES.find((x) => A2A_REST_PATH + x.path === route && x.method === req.method);
  return r && methodName('1.0', r.operation);
}

function paramsId(req: FastifyRequest): string | undefined {
  return str((bodyOf(req) as { params?: { id?: unknown } } | undefined)?.params?.id);
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
