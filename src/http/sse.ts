// Server-Sent Events with a memory ceiling. Every stream of a host belongs to one SseHub, which
// bounds three things (docs/security.md, "slow clients"):
// - per stream: a client more than `maxBufferedBytes` behind is dropped, and the first frame (a
//   whole Task) must fit in that cap — the route sends a smaller one when it does not;
// - per host: at most `maxStreams` streams are open, and the bytes waiting in all their buffers
//   together stay under `maxTotalBufferedBytes` (the streams furthest behind are dropped first);
// - per client: a stream whose buffer makes no progress for `stallMs` is destroyed — also after it
//   ended, since ending a response whose client does not read never completes.
// A dropped client resumes by event id; the log keeps everything.
import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { HttpError } from './errors.js';
import type { Metrics } from '../metrics.js';
import { MAX_EVENT_SEQUENCE } from '../store/model.js';

export interface SseOptions {
  /** Bytes one stream may have waiting in its buffer before its client is dropped. */
  maxBufferedBytes?: number;
  /** Interval of `:keepalive` comments (proxies cut quiet streams). */
  keepaliveMs?: number;
  /** How long a buffer may make no progress before its client is dropped. */
  stallMs?: number;
  /** Streams open at once on this host; more are refused (503). */
  maxStreams?: number;
  /** Bytes waiting in all streams' buffers together. */
  maxTotalBufferedBytes?: number;
}

type DropReason = 'behind' | 'stalled' | 'host_buffer' | 'too_large';

/** A place held for a stream about to open (taken before any side effect of the request). */
export interface SseSlot {
  open(reply: FastifyReply): SseStream;
  release(): void;
}

/** The open streams of one host and the limits they share. */
export class SseHub {
  readonly maxBufferedBytes: number;
  readonly keepaliveMs: number;
  readonly stallMs: number;
  readonly maxStreams: number;
  readonly maxTotalBufferedBytes: number;
  private readonly streams = new Set<SseStream>();
  private reserved = 0;
  private bufferedBytes = 0;
  private sweeper: NodeJS.Timeout | undefined;

  /** `metrics`: the host's (open streams, buffered bytes, drops by reason); absent in unit tests. */
  constructor(
    opts: SseOptions = {},
    private readonly metrics?: Metrics,
  ) {
    this.maxBufferedBytes = opts.maxBufferedBytes ?? 1024 * 1024;
    this.keepaliveMs = opts.keepaliveMs ?? 15_000;
    this.stallMs = opts.stallMs ?? 30_000;
    this.maxStreams = opts.maxStreams ?? 1000;
    this.maxTotalBufferedBytes = opts.maxTotalBufferedBytes ?? 64 * 1024 * 1024;
  }

  /** Streams holding resources now (open, or ended but not yet flushed or destroyed). */
  get size(): number {
    return this.streams.size;
  }

  /** Bytes written to all streams' sockets and not yet taken by the kernel. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /** Hold a place for a stream; undefined when the host already serves `maxStreams`. */
  reserve(): SseSlot | undefined {
    if (this.streams.size + this.reserved >= this.maxStreams) return undefined;
    this.reserved++;
    let held = true;
    const release = () => {
      if (held) this.reserved--;
      held = false;
    };
    return {
      open: (reply) => {
        release();
        return new SseStream(reply, this);
      },
      release,
    };
  }

  /**
   * Close every stream (a draining server): clients resume elsewhere by event id. One whose buffer
   * is not empty is cut: waiting for a client that may never read would hold the shutdown.
   */
  closeAll(): void {
    for (const s of [...this.streams]) {
      s.close();
      if (s.queued > 0) s.drop('stalled');
    }
  }

  /** @internal A stream joins when it opens. */
  add(stream: SseStream): void {
    this.streams.add(stream);
    this.metrics?.sseStreams.inc();
    this.sweeper ??= setInterval(() => this.sweep(), Math.max(10, Math.min(1000, this.stallMs / 4))).unref();
  }

  /** @internal A stream leaves when its connection is gone; its unflushed bytes go with it. */
  remove(stream: SseStream, queued: number): void {
    if (!this.streams.delete(stream)) return;
    this.account(-queued);
    this.metrics?.sseStreams.dec();
    if (this.streams.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** @internal A client was dropped, and why. */
  dropped(reason: DropReason): void {
    this.metrics?.sseDrops.inc({ reason });
  }

  /** @internal Count bytes queued or flushed. */
  account(bytes: number): void {
    this.bufferedBytes += bytes;
    this.metrics?.sseBuffered.inc(bytes);
  }

  /**
   * @internal May `stream` buffer `bytes` more? Over the host-wide budget, the streams holding the
   * most unflushed bytes (the slowest readers) are dropped until the write fits — `stream` itself
   * when it is the furthest behind.
   */
  admit(stream: SseStream, bytes: number): boolean {
    if (this.bufferedBytes + bytes <= this.maxTotalBufferedBytes) return true;
    const behind = [...this.streams].filter((s) => s.queued > 0).sort((a, b) => b.queued - a.queued);
    for (const s of behind) {
      s.drop('host_buffer');
      if (s === stream) return false;
      if (this.bufferedBytes + bytes <= this.maxTotalBufferedBytes) return true;
    }
    stream.drop('host_buffer');
    return false;
  }

  /** Destroy the streams whose buffers made no progress for stallMs (open or already ended). */
  private sweep(): void {
    const now = Date.now();
    for (const s of [...this.streams]) if (s.stalledAt(now)) s.drop('stalled');
  }
}

export class SseStream {
  private readonly controller = new AbortController();
  private readonly keepalive: NodeJS.Timeout;
  /** Bytes handed to the socket and not yet taken by the kernel (write callbacks pending). */
  queued = 0;
  /** When the buffer last moved: a write callback fired, or it became non-empty. */
  private progressAt = Date.now();
  private released = false;

  constructor(
    private readonly reply: FastifyReply,
    private readonly hub: SseHub,
  ) {
    hub.add(this);
    // A hijacked reply writes its head itself: the headers hooks and the route set on the reply
    // (CORS, Vary) go out with it, all but the body's own, which the stream sets.
    const { 'content-type': _type, 'content-length': _length, ...set } = reply.getHeaders();
    reply.hijack();
    reply.raw.writeHead(200, {
      ...(set as OutgoingHttpHeaders),
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    reply.raw.flushHeaders();
    // The connection's end frees everything at once; it never cancels the run. (The response's
    // 'close' is the connection's end; the request's 'close' only means its body was read.)
    reply.raw.on('close', () => this.release());
    reply.raw.on('error', () => this.release());
    this.keepalive = setInterval(() => this.writeRaw(':keepalive\n\n'), hub.keepaliveMs);
    this.keepalive.unref();
  }

  /** Aborted when the client disconnects, is dropped, or the stream is closed. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * One event; `data` is serialized on one line (clients keep only the last `data:` line). With
   * `smaller`, the frame must fit in what is left of the per-stream cap (a first frame: a Task
   * can be megabytes); if it does not, `smaller()` is sent instead, and if that does not fit
   * either the client is dropped.
   */
  send(data: unknown, opts: { id?: number | string; event?: string } = {}, smaller?: () => unknown): boolean {
    let frame = frameOf(data, opts);
    if (smaller) {
      const room = this.hub.maxBufferedBytes - this.reply.raw.writableLength;
      if (Buffer.byteLength(frame) > room) frame = frameOf(smaller(), opts);
      if (Buffer.byteLength(frame) > room) {
        this.drop('too_large');
        return false;
      }
    }
    return this.writeRaw(frame);
  }

  /**
   * Backpressure for producers: resolves true once the buffer is below half the cap, false if
   * the stream closed or the client did not read for `stallMs` (it is then dropped).
   */
  async ready(): Promise<boolean> {
    const raw = this.reply.raw;
    const half = this.hub.maxBufferedBytes / 2;
    const deadline = Date.now() + this.hub.stallMs;
    while (!this.closed && raw.writableLength > half) {
      if (Date.now() >= deadline) {
        this.drop('stalled');
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

  /** End the stream. A client that does not read it to the end is destroyed by the hub's sweep. */
  close(): void {
    if (this.closed) return;
    this.controller.abort();
    clearInterval(this.keepalive);
    if (!this.reply.raw.writableEnded && !this.reply.raw.destroyed) this.reply.raw.end();
  }

  /** @internal Cut the connection now and free what it holds. */
  drop(reason: DropReason): void {
    if (this.released) return;
    this.hub.dropped(reason);
    this.reply.raw.destroy();
    this.release();
  }

  /** @internal Bytes are waiting and none moved for stallMs. */
  stalledAt(now: number): boolean {
    return this.queued > 0 && now - this.progressAt >= this.hub.stallMs;
  }

  private writeRaw(frame: string): boolean {
    if (this.closed) return false;
    // Judge the backlog before adding to it: a client that is behind by more than the cap is
    // dropped, but one event frame larger than the cap still goes to a client that keeps up.
    if (this.reply.raw.writableLength > this.hub.maxBufferedBytes) {
      this.drop('behind');
      return false;
    }
    const bytes = Buffer.byteLength(frame);
    if (!this.hub.admit(this, bytes)) return false;
    if (this.queued === 0) this.progressAt = Date.now();
    this.queued += bytes;
    this.hub.account(bytes);
    this.reply.raw.write(frame, () => this.flushed(bytes));
    return true;
  }

  private flushed(bytes: number): void {
    if (this.released) return;
    this.queued -= bytes;
    this.hub.account(-bytes);
    this.progressAt = Date.now();
  }

  /** The connection is gone (or dropped): leave the hub and stop everything. */
  private release(): void {
    if (this.released) return;
    this.released = true;
    this.hub.remove(this, this.queued);
    this.queued = 0;
    this.close();
  }
}

function frameOf(data: unknown, opts: { id?: number | string; event?: string }): string {
  let frame = '';
  if (opts.id !== undefined) frame += `id: ${opts.id}\n`;
  if (opts.event !== undefined) frame += `event: ${opts.event}\n`;
  return `${frame}data: ${JSON.stringify(data)}\n\n`;
}

/** `Last-Event-ID`: a run event sequence. Undefined when absent; throws on a malformed value or
 * one past the log's range (MAX_EVENT_SEQUENCE), alike on both databases. */
export function parseLastEventId(raw: unknown): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'number') {
    if (Number.isSafeInteger(raw) && raw >= -1 && raw <= MAX_EVENT_SEQUENCE) return raw;
    throw new RangeError(`Last-Event-ID must be an integer from -1 to ${MAX_EVENT_SEQUENCE}, got ${raw}`);
  }
  if (typeof raw !== 'string') throw new RangeError('Last-Event-ID must be a decimal integer');
  const text = raw.trim();
  if (text === '') return undefined;
  // Decimal digits only: no hex, exponent or sign forms that Number() would accept.
  if (!/^(-1|\d{1,15})$/.test(text) || Number(text) > MAX_EVENT_SEQUENCE)
    throw new RangeError(
      `Last-Event-ID must be an integer from -1 to ${MAX_EVENT_SEQUENCE}, got '${raw.slice(0, 40)}'`,
    );
  return Number(text);
}

/** Retry-After of a 503 for a host at HANDOFF_SSE_MAX_STREAMS: streams end or are dropped all the time. */
export const STREAMS_RETRY_AFTER_S = 5;

export const tooManyStreams = (sse: SseHub): string =>
  `this host already serves ${sse.maxStreams} streams (HANDOFF_SSE_MAX_STREAMS); retry in ${STREAMS_RETRY_AFTER_S} s`;

/** Open a REST stream, or refuse it with 503 and Retry-After when the host serves its most. */
export function openOrRefuse(sse: SseHub, reply: FastifyReply): SseStream {
  const slot = sse.reserve();
  if (!slot) {
    void reply.header('Retry-After', String(STREAMS_RETRY_AFTER_S));
    throw new HttpError(503, 'too_many_streams', tooManyStreams(sse));
  }
  return slot.open(reply);
}
