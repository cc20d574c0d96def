// The suite's HTTP client over undici `request` (not fetch, whose "bad port" list would make a
// host on e.g. port 6000 unreachable, and which follows redirects): JSON requests, JSON-RPC
// calls, and JSON-RPC SSE streams read frame by frame. Every request is bounded; every answer
// carries a printable request line for evidence. The API key is sent only when a call asks for it
// and is never printed.
//
//   const http = new HostHttp({ apiKey, timeoutMs: 20_000 });
//   const r = await http.request('POST', url, { body: { scenario: 'paused-at-approval' }, auth: true });
//   r.status; r.json; r.request;        // "POST http://…/tasks/start {"scenario":…} [Bearer]"
//   const s = await http.stream(rpcUrl, 'tasks/resubscribe', { id }, { auth: true, deadlineMs: 60_000 });
//   const e = await s.next(5_000);      // an SseEvent, or { end } / { timeout }
//   s.close();                          // drops the connection
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { type Dispatcher, request as undiciRequest } from 'undici';
import { SseParser } from './sse.js';

/** A request that got no HTTP answer (refused, reset, timed out). */
export class RequestError extends Error {
  constructor(
    readonly request: string,
    override readonly cause: unknown,
  ) {
    super(`${request} → no answer: ${describeError(cause)}`);
  }
}

export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const code = (cause as { code?: string } | undefined)?.code ?? (err as { code?: string }).code;
  if (err.name === 'TimeoutError') return 'timed out';
  const inner = cause instanceof Error && cause.message !== err.message ? `: ${cause.message}` : '';
  const text = `${err.message}${inner}`;
  return code && !text.includes(code) ? `${code} ${text}` : text;
}

export interface HttpAnswer {
  /** Printable request line (for evidence). */
  request: string;
  status: number;
  contentType: string;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

export interface CallOptions {
  body?: unknown;
  /** Send `Authorization: Bearer <apiKey>` (when a key was given). */
  auth?: boolean;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  /** `data` parsed as JSON, undefined when it is not JSON. */
  json: unknown;
}

export type StreamRead = SseEvent | { end: true; error?: string } | { timeout: true };

export const isEnd = (r: StreamRead): r is { end: true; error?: string } => 'end' in r;
export const isTimeout = (r: StreamRead): r is { timeout: true } => 'timeout' in r;

const BODY_EXCERPT = 200;

export class HostHttp {
  constructor(private readonly opts: { apiKey?: string; timeoutMs: number }) {}

  /** The printable form of a request: method, URL, a body excerpt, and [Bearer] if a key went. */
  describe(method: string, url: string, body?: unknown, auth?: boolean): string {
    let line = `${method} ${url}`;
    if (body !== undefined) {
      const text = JSON.stringify(body);
      line += ` ${text.length > BODY_EXCERPT ? `${text.slice(0, BODY_EXCERPT)}…` : text}`;
    }
    if (auth && this.opts.apiKey) line += ' [Bearer]';
    return line;
  }

  private headers(opts: CallOptions, accept: string): Record<string, string> {
    const h: Record<string, string> = { accept, ...(opts.headers ?? {}) };
    if (opts.body !== undefined) h['content-type'] = 'application/json';
    if (opts.auth && this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    return h;
  }

  async request(method: 'GET' | 'POST', url: string, opts: CallOptions = {}): Promise<HttpAnswer> {
    const request = this.describe(method, url, opts.body, opts.auth);
    try {
      const res = await undiciRequest(url, {
        method,
        headers: this.headers(opts, 'application/json'),
        ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
        signal: AbortSignal.timeout(opts.timeoutMs ?? this.opts.timeoutMs),
      });
      const text = await res.body.text();
      return {
        request,
        status: res.statusCode,
        contentType: headerOf(res, 'content-type'),
        text,
        json: parseJson(text),
      };
    } catch (err) {
      throw new RequestError(request, err);
    }
  }

  /** A JSON-RPC 2.0 call (plain JSON answer expected). */
  rpc(url: string, method: string, params: unknown, opts: Omit<CallOptions, 'body'> = {}): Promise<HttpAnswer> {
    return this.request('POST', url, { ...opts, body: rpcBody(method, params) });
  }

  /** A streaming JSON-RPC call (message/stream, tasks/resubscribe). Resolves once headers arrive. */
  async stream(
    url: string,
    method: string,
    params: unknown,
    opts: Omit<CallOptions, 'body'> & { deadlineMs: number },
  ): Promise<RpcStream> {
    const body = rpcBody(method, params);
    const request = this.describe('POST', url, body, opts.auth);
    const controller = new AbortController();
    const deadline = setTimeout(
      () => controller.abort(new Error(`stream deadline of ${opts.deadlineMs} ms`)),
      opts.deadlineMs,
    );
    deadline.unref();
    let res: Dispatcher.ResponseData;
    // Headers must come within one request timeout even though the stream may last longer.
    const headersBy = setTimeout(
      () => controller.abort(new Error('no response headers in time')),
      opts.timeoutMs ?? this.opts.timeoutMs,
    );
    headersBy.unref();
    try {
      res = await undiciRequest(url, {
        method: 'POST',
        headers: this.headers({ ...opts, body }, 'text/event-stream'),
        body: JSON.stringify(body),
        signal: controller.signal,
        // The stream's own deadline bounds it; keepalive gaps may be long.
        bodyTimeout: 0,
      });
    } catch (err) {
      clearTimeout(deadline);
      throw new RequestError(request, controller.signal.aborted ? controller.signal.reason : err);
    } finally {
      clearTimeout(headersBy);
    }
    return new RpcStream(request, res, controller, deadline);
  }
}

function headerOf(res: Dispatcher.ResponseData, name: string): string {
  const v = res.headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

function rpcBody(method: string, params: unknown) {
  return { jsonrpc: '2.0', id: `conf-${randomUUID()}`, method, params };
}

export function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** One SSE response, read as a queue of events. A non-SSE answer is read whole (`isSse` false). */
export class RpcStream {
  readonly status: number;
  readonly contentType: string;
  readonly isSse: boolean;
  /** Every event received so far, in order. */
  readonly events: SseEvent[] = [];
  /** The body, when the answer is not an event stream. */
  text = '';
  private readonly queue: StreamRead[] = [];
  private waiter: ((r: StreamRead) => void) | undefined;
  private ended = false;
  private closedByUs = false;
  private readonly done: Promise<void>;

  constructor(
    readonly request: string,
    res: Dispatcher.ResponseData,
    private readonly controller: AbortController,
    private readonly deadline: NodeJS.Timeout,
  ) {
    this.status = res.statusCode;
    this.contentType = headerOf(res, 'content-type');
    this.isSse = this.contentType.toLowerCase().startsWith('text/event-stream');
    this.done = this.isSse ? this.pump(res.body) : this.readWhole(res);
  }

  /** Resolves once a non-SSE body has been read (immediately useful for error answers). */
  async settled(): Promise<void> {
    if (!this.isSse) await this.done;
  }

  get json(): unknown {
    return parseJson(this.text);
  }

  private async readWhole(res: Dispatcher.ResponseData): Promise<void> {
    try {
      this.text = await res.body.text();
    } catch {
      // the body could not be read; text stays empty
    }
    this.finish();
  }

  private async pump(body: Readable): Promise<void> {
    const parser = new SseParser((f) => {
      const e: SseEvent = { data: f.data, json: parseJson(f.data) };
      if (f.id !== undefined) e.id = f.id;
      if (f.event !== undefined) e.event = f.event;
      this.events.push(e);
      this.push(e);
    });
    let error: string | undefined;
    try {
      const decoder = new TextDecoder();
      for await (const chunk of body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      parser.feed(decoder.decode());
      parser.end();
    } catch (err) {
      if (this.closedByUs) error = undefined;
      else if (this.controller.signal.aborted) error = describeError(this.controller.signal.reason);
      else error = describeError(err);
    }
    this.finish(error);
  }

  private finish(error?: string): void {
    clearTimeout(this.deadline);
    if (this.ended) return;
    this.ended = true;
    this.push(error ? { end: true, error } : { end: true });
  }

  private push(r: StreamRead): void {
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(r);
    } else this.queue.push(r);
  }

  /** The next event, or the end of the stream, or a timeout after `timeoutMs`. */
  next(timeoutMs: number): Promise<StreamRead> {
    const queued = this.queue.shift();
    if (queued) {
      // Keep the end marker available to later reads.
      if (isEnd(queued)) this.queue.unshift(queued);
      return Promise.resolve(queued);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve({ timeout: true });
      }, timeoutMs);
      this.waiter = (r) => {
        clearTimeout(timer);
        if (isEnd(r)) this.queue.unshift(r);
        resolve(r);
      };
    });
  }

  /** Drop the connection (the host sees the socket go). */
  close(): void {
    this.closedByUs = true;
    this.controller.abort(new Error('closed by the suite'));
    clearTimeout(this.deadline);
  }
}
