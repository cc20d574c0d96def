// What the JSON-RPC (0.3 and 1.0) and HTTP+JSON (1.0) bindings share: one non-streaming
// operation, already decoded into its neutral request by the version's codec, is answered by the
// handler and encoded for that version — the second and last shape conversion of the request.
//
//   const binding = new A2ABinding(handler, taskCache);
//   const wire = await binding.call(caller, CODECS['1.0'], 'get', req);   // the encoded result
//
// The routes (src/http/routes/a2a/) add what only their transport knows: the JSON-RPC envelope,
// the HTTP status, SSE for the streaming operations.
import type { Caller } from '../engine/engine.js';
import { listTasksResponseText } from './codec/v1_0.js';
import type { WireCodec } from './codec/codec.js';
import { unsupportedOperation } from './errors.js';
import type { A2AHandler, CallContext, TaskPage } from './handler.js';
import { RawJson } from './jsonrpc.js';
import type * as N from './model.js';
import type { TaskCache } from './task-cache.js';

export class A2ABinding {
  constructor(
    readonly handler: A2AHandler,
    private readonly cache?: TaskCache,
  ) {}

  /** Run a non-streaming operation and encode its result for `codec`'s version. */
  async call<O extends N.Operation>(caller: Caller, codec: WireCodec, op: O, req: N.RequestOf[O]): Promise<unknown> {
    const ctx: CallContext = { caller, version: codec.version };
    const h = this.handler;
    const r = req as never;
    switch (op) {
      case 'send':
        return codec.encodeSendResult(await h.send(ctx, r));
      case 'get':
        return this.get(ctx, codec, r);
      case 'list':
        return listText(codec, await h.list(ctx, r));
      case 'cancel':
        return codec.encodeTask(await h.cancel(ctx, r));
      case 'push.create':
        return codec.encodePushConfig(await h.setPushConfig(ctx, r));
      case 'push.get':
        return codec.encodePushConfig(await h.getPushConfig(ctx, r));
      case 'push.list': {
        const page = await h.listPushConfigs(ctx, r);
        return codec.encodePushConfigList(page.configs, page.nextPageToken);
      }
      case 'push.delete':
        await h.deletePushConfig(ctx, r);
        return null;
      case 'card.extended':
        return h.extendedCard(ctx, r);
      default:
        // stream and subscribe are served as SSE by the endpoints, never as one reply.
        throw unsupportedOperation(`${op} must be requested as a stream`);
    }
  }

  /** GetTask: from the cache when the encoded Task is held (per version and history length). */
  private async get(ctx: CallContext, codec: WireCodec, req: N.GetTaskRequest): Promise<unknown> {
    const cache = this.cache;
    const read = async () => codec.encodeTask(await this.handler.get(ctx, req));
    if (!cache) return read();
    const { tenantId } = ctx.caller;
    const held = cache.get(req.id, tenantId, req.historyLength, codec.version);
    if (held !== undefined) return new RawJson(held);
    const ticket = cache.begin(req.id);
    try {
      const text = JSON.stringify(await read());
      cache.put(ticket, tenantId, req.historyLength, text, codec.version);
      return new RawJson(text);
    } finally {
      cache.end(ticket);
    }
  }
}

/** ListTasksResponse as JSON text (ListTasks is 1.0 only). */
function listText(codec: WireCodec, page: TaskPage): RawJson {
  const tasks = `[${page.tasks.map((t) => JSON.stringify(codec.encodeTask(t))).join(',')}]`;
  return new RawJson(
    listTasksResponseText({
      tasks,
      nextPageToken: page.nextPageToken,
      pageSize: page.pageSize,
      totalSize: page.totalSize,
    }),
  );
}
