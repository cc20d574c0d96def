// A minimal SSE client for the stream scenarios: one node:http request per subscription (its own
// socket, no keep-alive pool), eventsource-parser for the framing, and a receipt time per event
// taken when the chunk carrying it arrives — before anything else is done with it — as epoch
// milliseconds with sub-ms precision (performance.timeOrigin + performance.now()), so it can be
// compared with the server's commit timestamps (same host clock).
import { request, type ClientRequest } from 'node:http';
import { createParser } from 'eventsource-parser';
import { nowMs } from './clock.js';

export interface SseEvent {
  /** The SSE `id:` field, if any. */
  id?: string;
  event?: string;
  data: string;
  /** Receipt time of the chunk that completed this event (epoch ms). */
  at: number;
}

export type SseEnd =
  /** The server ended the response. */
  | 'server'
  /** close() was called. */
  | 'client'
  /** Socket error, HTTP status ≠ 200, wrong content type, or timeout. */
  | 'error';

export interface SseOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** JSON-serialized request body (POST). */
  body?: unknown;
  /** Give up (end 'error') if the server has not ended the stream by then. 0 = never. */
  timeoutMs?: number;
  /** Called for every event as it is parsed (after `at` is taken). */
  onEvent?(event: SseEvent, sub: SseSubscription): void;
}

export interface SseSubscription {
  /** When the request was handed to the socket layer (epoch ms). */
  readonly requestedAt: number;
  /** Receipt time of the first event, if any. */
  firstAt?: number;
  /** HTTP status of the response (0 until headers arrive). */
  status: number;
  readonly events: SseEvent[];
  /** Why the stream ended (undefined while open). */
  end?: SseEnd;
  /** When it ended (epoch ms). */
  endedAt?: number;
  /** The stream was ended by its own timeout (timeoutMs), not by the server or close(). */
  timedOut?: boolean;
  error?: string;
  /** Resolves once the stream has ended, whichever way. */
  readonly done: Promise<SseEnd>;
  /** Close from the client side (destroys the socket). */
  close(): void;
}

/** Open one SSE stream. Never rejects: failures end the subscription with end = 'error'. */
export function openSse(opts: SseOptions): SseSubscription {
  let finish!: (end: SseEnd) => void;
  const done = new Promise<SseEnd>((resolve) => (finish = resolve));
  const events: SseEvent[] = [];
  let chunkAt = 0;
  let req: ClientRequest | undefined;
  let timer: NodeJS.Timeout | undefined;
  const sub: SseSubscription = {
    requestedAt: 0,
    status: 0,
    events,
    done,
    close: () => end('client'),
  };
  const end = (how: SseEnd, error?: string): void => {
    if (sub.end !== undefined) return;
    sub.end = how;
    sub.endedAt = nowMs();
    if (error !== undefined) sub.error = error;
    clearTimeout(timer);
    req?.destroy();
    finish(how);
  };
  const parser = createParser({
    onEvent: (msg) => {
      const ev: SseEvent = { data: msg.data, at: chunkAt };
      if (msg.id !== undefined) ev.id = msg.id;
      if (msg.event !== undefined) ev.event = msg.event;
      events.push(ev);
      sub.firstAt ??= chunkAt;
      opts.onEvent?.(ev, sub);
    },
  });
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = { accept: 'text/event-stream', ...opts.headers };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  req = request(
    opts.url,
    { method: opts.method ?? (payload === undefined ? 'GET' : 'POST'), agent: false, headers },
    (res) => {
      sub.status = res.statusCode ?? 0;
      const type = String(res.headers['content-type'] ?? '');
      if (sub.status !== 200 || !type.startsWith('text/event-stream')) {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => end('error', `HTTP ${sub.status} ${type}: ${text.slice(0, 200)}`));
        res.on('error', (err) => end('error', err.message));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        chunkAt = nowMs();
        parser.feed(chunk);
      });
      res.on('end', () => end('server'));
      res.on('error', (err) => end('error', err.message));
      res.on('close', () =>
        end(
          res.complete ? 'server' : 'error',
          res.complete ? undefined : 'connection closed before the end of the stream',
        ),
      );
    },
  );
  req.on('error', (err) => end('error', err.message));
  if (opts.timeoutMs) {
    timer = setTimeout(() => {
      sub.timedOut = true;
      end('error', `no end of stream within ${Math.round(opts.timeoutMs ?? 0)} ms`);
    }, opts.timeoutMs);
    timer.unref();
  }
  (sub as { requestedAt: number }).requestedAt = nowMs();
  req.end(payload);
  return sub;
}

/** A counting semaphore: at most `limit` holders at a time. */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}

  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.active--;
  }
}
