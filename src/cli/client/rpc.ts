// A small A2A JSON-RPC client (docs/protocol/a2a.md#v03-transport, #v03-streaming; 1.0 adds only the
// A2A-Version header, passed in `headers`, and its own method names): POST one request to the agent's
// endpoint; a plain call answers `application/json`, a streaming one (`message/stream`,
// `tasks/resubscribe`) `text/event-stream` whose every `data:` is a JSON-RPC response.
//
//   const rpc = new JsonRpcClient(endpoint, conn);
//   const task = await rpc.call<Task>('tasks/get', { id });          // RpcError on {error}
//   const stream = await rpc.stream('tasks/resubscribe', { id }, { lastEventId: '7' });
//   for await (const item of stream) item.id, item.result            // or throws RpcError
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import {
  authHeaders,
  type Connection,
  describeBody,
  HttpStatusError,
  readText,
  send,
  toNetworkError,
  tryJson,
} from './http.js';
import { sseEvents } from './sse.js';

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** The agent answered with a JSON-RPC error object. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;
  readonly data?: unknown;
  constructor(error: JsonRpcErrorObject) {
    super(error.message);
    this.code = error.code;
    if (error.data !== undefined) this.data = error.data;
  }
}

/** The agent answered something that is not a JSON-RPC response to our request. */
export class InvalidResponseError extends Error {
  override readonly name = 'InvalidResponseError';
}

export interface StreamItem {
  /** The SSE `id:` of the event (Handoff: the run event sequence), when the server sent one. */
  id?: string;
  result: unknown;
}

export interface StreamOptions {
  /** Sent as `Last-Event-ID`: resume after this event. */
  lastEventId?: string;
  signal?: AbortSignal;
  /** Longest silence tolerated on the stream (Handoff sends a keepalive every 15 s). */
  idleTimeoutMs?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function rpcErrorOf(v: unknown): JsonRpcErrorObject | undefined {
  if (!isObject(v) || !isObject(v.error)) return undefined;
  const { code, message, data } = v.error;
  if (typeof code !== 'number') return undefined;
  return { code, message: typeof message === 'string' ? message : 'error', ...(data !== undefined ? { data } : {}) };
}

export class JsonRpcClient {
  constructor(
    readonly endpoint: string,
    private readonly conn: Connection,
    /** Sent with every request (the A2A version: `A2A-Version: 1.0`). */
    private readonly headers: Record<string, string> = {},
  ) {}

  private body(id: string, method: string, params: unknown): string {
    return JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
  }

  /** One call; resolves with `result`, rejects with RpcError / HttpStatusError / NetworkError. */
  async call<T = unknown>(method: string, params?: unknown): Promise<T> {
    const id = `handoff-${randomUUID()}`;
    const res = await send(this.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...this.headers,
        ...authHeaders(this.conn),
      },
      body: this.body(id, method, params),
      headersTimeoutMs: this.conn.timeoutMs,
      bodyTimeoutMs: this.conn.timeoutMs,
    });
    const json = await this.jsonAnswer(res);
    if (!isObject(json) || json.jsonrpc !== '2.0' || !('result' in json)) {
      throw new InvalidResponseError(`${this.endpoint} did not answer ${method} with a JSON-RPC response`);
    }
    if (json.id !== id)
      throw new InvalidResponseError(
        `${this.endpoint} answered ${method} with id ${JSON.stringify(json.id)}, not ${id}`,
      );
    return json.result as T;
  }

  /**
   * The JSON body of a non-streaming answer. A JSON-RPC error is thrown as RpcError whatever the
   * status (the SDK answers a parse error with 400); any other non-200 as HttpStatusError.
   */
  private async jsonAnswer(res: Dispatcher.ResponseData): Promise<unknown> {
    const text = await readText(this.endpoint, res);
    const json = tryJson(text);
    const err = rpcErrorOf(json);
    if (err) throw new RpcError(err);
    if (res.statusCode !== 200) {
      const why = describeBody(text);
      throw new HttpStatusError(
        res.statusCode,
        this.endpoint,
        `HTTP ${res.statusCode} from ${this.endpoint}${why ? `: ${why}` : ''}`,
        json,
      );
    }
    return json;
  }

  /**
   * A streaming call. Errors answered as plain JSON reject here; errors inside the stream (an
   * `error` event or an error response, which is how Handoff answers a refused streaming method)
   * are thrown by the iterator as RpcError. A plain JSON `result`
   * (a server that does not stream) is yielded as a single item.
   */
  async stream(method: string, params: unknown, opts: StreamOptions = {}): Promise<AsyncGenerator<StreamItem>> {
    const id = `handoff-${randomUUID()}`;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...this.headers,
      ...authHeaders(this.conn),
    };
    if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
    const res = await send(this.endpoint, {
      method: 'POST',
      headers,
      body: this.body(id, method, params),
      headersTimeoutMs: this.conn.timeoutMs,
      bodyTimeoutMs: opts.idleTimeoutMs ?? 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode === 200 && type.startsWith('text/event-stream')) return this.items(res.body, id);
    const json = await this.jsonAnswer(res);
    if (isObject(json) && 'result' in json) {
      const single = json.result;
      return (async function* () {
        yield { result: single };
      })();
    }
    throw new InvalidResponseError(`${this.endpoint} did not answer ${method} with an event stream`);
  }

  private async *items(body: AsyncIterable<Buffer>, id: string): AsyncGenerator<StreamItem> {
    try {
      for await (const ev of sseEvents(body)) {
        const json = tryJson(ev.data);
        const err = rpcErrorOf(json);
        if (err) throw new RpcError(err);
        if (!isObject(json) || !('result' in json)) {
          if (ev.event === 'error') throw new InvalidResponseError(`stream error: ${describeBody(ev.data)}`);
          continue;
        }
        if (json.id !== undefined && json.id !== id) {
          throw new InvalidResponseError(`stream event for request ${JSON.stringify(json.id)}, not ${id}`);
        }
        yield ev.id !== undefined ? { id: ev.id, result: json.result } : { result: json.result };
      }
    } catch (err) {
      if (err instanceof RpcError || err instanceof InvalidResponseError) throw err;
      throw toNetworkError(this.endpoint, err);
    }
  }
}
