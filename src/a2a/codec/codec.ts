// What one protocol version's JSON-RPC binding needs to speak the neutral model (../model.ts):
// requests in, results, stream items, push bodies and errors out. A handler answers with neutral
// objects; the endpoint picks the codec of the request's version.
//
//   const codec = CODECS[version];
//   const req = codec.decodeRequest('get', params);      // -32602 naming the field when malformed
//   reply(codec.encodeTask(await service.get(caller, req)));
import type { A2AError } from '../errors.js';
import type { JsonRpcErrorObject } from './error-forms.js';
import type { Metadata, Operation, PushConfig, RequestOf, SendResult, StreamEvent, TaskView } from '../model.js';
import type { ProtocolVersion } from '../versions.js';

export interface WireCodec {
  readonly version: ProtocolVersion;
  /** JSON-RPC params → the neutral request, validated; -32602 naming the first bad field. */
  decodeRequest<O extends Operation>(operation: O, params: unknown): RequestOf[O];
  /** The result of a send (0.3: the bare Task or Message; 1.0: `{task}` or `{message}`). */
  encodeSendResult(result: SendResult): unknown;
  /** The result of get and cancel. */
  encodeTask(task: TaskView): unknown;
  /** One stream item, also the body of a push. `final` is 0.3's end-of-stream flag on status
   * updates; 1.0 has none (its stream ends by closing). */
  encodeStreamEvent(event: StreamEvent, final: boolean): unknown;
  encodePushConfig(config: PushConfig): unknown;
  /** 0.3: a bare array; 1.0: `{configs, nextPageToken}`. */
  encodePushConfigList(configs: PushConfig[], nextPageToken: string): unknown;
  /** The JSON-RPC `error` member. */
  encodeError(err: A2AError): JsonRpcErrorObject;
}

/** The object without its undefined-valued keys, key order kept: optional fields stay absent
 * (a wire object is built in field order with `x: cond ? v : undefined`, then compacted). */
export function compact<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

/** A Task's fields in the order both wires write them; the codec maps status, artifacts and history
 * its own way. Compact the result (or the object it is spread into). */
export const taskFields = <S, A, M>(
  t: { id: string; contextId: string; metadata?: Metadata },
  status: S,
  artifacts: A[] | undefined,
  history: M[] | undefined,
) => ({ id: t.id, contextId: t.contextId, status, artifacts, history, metadata: t.metadata });

/** An artifact update's fields in the order both wires write them, around the mapped artifact. */
export const artifactUpdateFields = <A>(
  u: { taskId: string; contextId: string; append?: boolean; lastChunk?: boolean; metadata?: Metadata },
  artifact: A,
) => ({
  taskId: u.taskId,
  contextId: u.contextId,
  artifact,
  append: u.append,
  lastChunk: u.lastChunk,
  metadata: u.metadata,
});

/**
 * Shape conversions made through a codec: each call of a WireCodec method converts one whole
 * request, answer, stream item or error between a wire and the neutral model. Read by the test that
 * holds the paths to their budget (docs/architecture.md: a 1.0 send crosses at most two, a 0.3
 * send at most three); one increment per call.
 */
export const shapeConversions = { count: 0 };

/** The codec with each method counted in `shapeConversions`. */
export function counted(codec: WireCodec): WireCodec {
  const out = { ...codec };
  for (const [name, fn] of Object.entries(codec)) {
    if (typeof fn !== 'function') continue;
    (out as Record<string, unknown>)[name] = (...args: unknown[]) => {
      shapeConversions.count++;
      return (fn as (...a: unknown[]) => unknown)(...args);
    };
  }
  return out;
}
