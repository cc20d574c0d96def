// The SSE side of both A2A bindings: open a send stream or a subscription through the handler,
// then pump its items, each encoded for the request's version (one conversion per item).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WireCodec } from '../../../a2a/codec/codec.js';
import { type A2AError, invalidParams, toA2AError } from '../../../a2a/errors.js';
import type { CallContext, TaskStream } from '../../../a2a/handler.js';
import type { Operation, RequestOf, SendRequest, TaskIdRequest } from '../../../a2a/model.js';
import { encodeItem, type StreamItem, trimmedItem } from '../../../a2a/stream.js';
import { parseLastEventId, type SseStream } from '../../sse.js';
import type { A2ARouteDeps } from './index.js';

export const isStreaming = (operation: Operation | undefined): boolean =>
  operation === 'stream' || operation === 'subscribe';

/** A send or stream without a taskId starts a run (HANDOFF_TENANT_MAX_ACTIVE_RUNS). */
export const startsRun = (operation: Operation, request: unknown): boolean =>
  (operation === 'send' || operation === 'stream') && (request as SendRequest).message.taskId === undefined;

/** An internal failure is answered generically and logged once, with the request id (req.log). */
export function wireError(req: FastifyRequest, err: unknown): A2AError {
  const wire = toA2AError(err);
  if (wire.kind === 'internal') req.log.error({ err }, 'request failed');
  return wire;
}

/** Open a send stream or a subscription. A resubscription's cursor is `Last-Event-ID` (or the
 * 0.3 `metadata.lastEventId`), in both versions. */
export function openStream(
  deps: Pick<A2ARouteDeps, 'binding'>,
  req: FastifyRequest,
  codec: WireCodec,
  operation: Operation,
  request: RequestOf[Operation],
): Promise<TaskStream> {
  const ctx: CallContext = { caller: req.caller, version: codec.version };
  const handler = deps.binding.handler;
  if (operation === 'stream') return handler.stream(ctx, request as SendRequest);
  const params = request as TaskIdRequest;
  let after: number | undefined;
  try {
    after = parseLastEventId(req.headers['last-event-id'] ?? params.metadata?.lastEventId);
  } catch (err) {
    throw invalidParams((err as Error).message);
  }
  return handler.subscribe(ctx, after === undefined ? params : { ...params, after });
}

/**
 * Send an opened stream to its end: the first frame (the Task), then each update as it comes
 * while the client keeps up, then close. A failure on the way is the stream's last event.
 */
export async function pumpStream(
  sse: SseStream,
  stream: TaskStream,
  encode: { frame: (wire: unknown) => unknown; error: (err: unknown) => unknown; codec: WireCodec },
): Promise<void> {
  const frame = (item: StreamItem) => encode.frame(encodeItem(encode.codec, item));
  try {
    sendFirst(sse, stream, frame);
    for await (const item of stream.updates(sse.signal)) {
      if (!(await sse.ready())) break;
      sse.send(frame(item), idOf(item.id));
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
function sendFirst(sse: SseStream, stream: TaskStream, frame: (item: StreamItem) => unknown) {
  const first = stream.first;
  if (!first) return;
  delete stream.first;
  sse.send(frame(first), idOf(first.id), () => frame(trimmedItem(first)));
}

/**
 * A JSON-RPC streaming method refused before its stream opened (unknown task, bad params): still
 * `text/event-stream`, on HTTP 200, the error the one `error` event — a streaming client reads the
 * answer as SSE and would otherwise report a content-type mismatch instead of the error. (The
 * HTTP+JSON binding answers an HTTP error instead: rest.ts.)
 */
export function sseError(reply: FastifyReply, body: unknown): FastifyReply {
  return reply
    .status(200)
    .header('Content-Type', 'text/event-stream; charset=utf-8')
    .header('Cache-Control', 'no-cache')
    .send(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
}

const idOf = (id: number | undefined) => (id === undefined || id < 0 ? {} : { id });
