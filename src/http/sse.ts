// A Server-Sent Events writer on the raw response, with a bounded per-connection buffer: a client
// that stops reading is disconnected once the buffer is full (it can resume by event id; the log
// keeps everything), so a stalled client can never grow the server's memory without limit.
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface SseOptions {
  /** Bytes allowed to wait in the socket buffer before the client is dropped. */
  maxBufferedBytes?: number;
  /** Interval of `:keepalive` comments (proxies cut quiet streams). */
  keepaliveMs?: number;
  /** How long a writer waits for a full buffer to drain before dropping the client. */
  stallMs?: number;
}

export class SseStream {
  private readonly controller = new AbortController();
  private readonly keepalive: NodeJS.Timeout;
  private readonly max: number;
  private readonly stallMs: number;

  constructor(
    req: FastifyRequest,
    private readonly reply: FastifyReply,
    opts: SseOptions = {},
    private readonly registry?: Set<SseStream>,
  ) {
    registry?.add(this);
    this.max = opts.maxBufferedBytes ?? 1024 * 1024;
    this.stallMs = opts.stallMs ?? 30_000;
    reply.hijack();
    reply.raw.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    reply.raw.flushHeaders();
    // The client going away frees everything at once; it never cancels the run. (The response's
    // 'close' is the connection's end; the request's 'close' only means its body was read.)
    reply.raw.on('close', () => this.close());
    reply.raw.on('error', () => this.close());
    this.keepalive = setInterval(() => this.writeRaw(':keepalive\n\n'), opts.keepaliveMs ?? 15_000);
    this.keepalive.unref();
  }

  /** Aborted when the client disconnects, overflows, or the stream is closed. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /** One event; `data` is serialized on one line (clients keep only the last `data:` line). */
  send(data: unknown, opts: { id?: number | string; event?: string } = {}): boolean {
    let frame = '';
    if (opts.id !== undefined) frame += `id: ${opts.id}\n`;
    if (opts.event !== undefined) frame += `event: ${opts.event}\n`;
    frame += `data: ${JSON.stringify(data)}\n\n`;
    return this.writeRaw(frame);
  }

  /**
   * Backpressure for producers: resolves true once the buffer is below half the cap, false if
   * the stream closed or the client did not read for `stallMs` (it is then dropped).
   */
  async ready(): Promise<boolean> {
    const raw = this.reply.raw;
    const deadline = Date.now() + this.stallMs;
    while (!this.closed && raw.writableLength > this.max / 2) {
      if (Date.now() >= deadline) {
        // The client stopped reading: drop it (it can resume by event id).
        raw.destroy();
        this.close();
        return false;
      }
      // 'drain' comes only after a write() returned false (a buffer past the socket's
      // high-water mark); below it, look again shortly.
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          raw.off('drain', done);
          this.signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, raw.writableNeedDrain ? Math.max(1, deadline - Date.now()) : 10);
        raw.on('drain', done);
        this.signal.addEventListener('abort', done);
      });
    }
    return !this.closed;
  }

  private writeRaw(frame: string): boolean {
    if (this.closed) return false;
    // Judge the backlog before adding to it: a client that is behind by more than the cap is
    // dropped, but one frame larger than the cap still goes to a client that keeps up.
    if (this.reply.raw.writableLength > this.max) {
      this.reply.raw.destroy();
      this.close();
      return false;
    }
    this.reply.raw.write(frame);
    return true;
  }

  close(): void {
    if (this.closed) return;
    this.registry?.delete(this);
    this.controller.abort();
    clearInterval(this.keepalive);
    if (!this.reply.raw.destroyed) this.reply.raw.end();
  }
}

/** Open streams of one app, closed together when the server drains (streams are resumable). */
export function streamRegistry(app: {
  addHook: (name: 'preClose', fn: () => Promise<void>) => unknown;
}): Set<SseStream> {
  const streams = new Set<SseStream>();
  app.addHook('preClose', async () => {
    for (const s of [...streams]) s.close();
  });
  return streams;
}

/** `Last-Event-ID`: a run event sequence. Undefined when absent; throws on a malformed value. */
export function parseLastEventId(raw: unknown): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'number') {
    if (Number.isSafeInteger(raw) && raw >= -1) return raw;
    throw new RangeError(`Last-Event-ID must be an integer >= -1, got ${raw}`);
  }
  if (typeof raw !== 'string') throw new RangeError('Last-Event-ID must be a decimal integer');
  const text = raw.trim();
  if (text === '') return undefined;
  // Decimal digits only: no hex, exponent or sign forms that Number() would accept.
  if (!/^(-1|\d{1,15})$/.test(text))
    throw new RangeError(`Last-Event-ID must be an integer >= -1, got '${raw.slice(0, 40)}'`);
  return Number(text);
}
