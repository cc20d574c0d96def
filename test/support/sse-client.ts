// A small raw Server-Sent Events client for stream tests: one HTTP request (undici `request`),
// frames parsed by eventsource-parser, every event kept with its `id:` and `event:` fields, every
// comment (`:keepalive`) kept too. It can be aborted mid-stream (the server sees the socket go) and
// sends `Last-Event-ID` when asked. Waits are condition-based with a deadline, never fixed sleeps.
//
//   const s = await openSse(`${url}/v1/runs/${id}/events`, { token, lastEventId: 3 });
//   await s.waitFor((e) => e.event === 'run.completed', 'the final event');
//   await s.waitForEnd();                 // the server closed the stream
//   s.events.map((e) => e.id)             // ['4', '5', …]
//
//   const a = await openA2AStream(url, 'tasks/resubscribe', { id: taskId }, { token, lastEventId: 7 });
//   a.abort();                            // drop the connection mid-run
//
// A response that is not `text/event-stream` (a JSON error before any SSE byte) is read whole:
// `isSse` is false, `text`/`json` hold the body and `ended` is already settled.
import { randomUUID } from 'node:crypto';
import { createParser } from 'eventsource-parser';
import { request } from 'undici';
import { stateAfterEvent } from '../../src/a2a/projection.js';
import type { RunEvent } from '../../src/store/model.js';

// Event payloads are JSON of many shapes; tests read them field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface SseEvent {
  /** The `id:` field, if the frame had one. */
  id?: string;
  /** The `event:` field, if the frame had one. */
  event?: string;
  data: string;
  /** `data` parsed as JSON (undefined when it is not JSON). */
  json: Json;
  /** Milliseconds since the request was sent. */
  at: number;
}

export type SseEnd =
  /** The server ended the response. */
  | { reason: 'end' }
  /** `abort()` was called (or the overall deadline passed). */
  | { reason: 'aborted' }
  /** The connection failed (e.g. reset by the server). */
  | { reason: 'error'; error: Error };

export interface SseOpenOptions {
  method?: 'GET' | 'POST';
  /** Sent as JSON (POST). */
  body?: unknown;
  headers?: Record<string, string>;
  /** `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as the `Last-Event-ID` header. */
  lastEventId?: string | number;
  /** The whole connection is aborted after this long (default 60 s): nothing hangs forever. */
  deadlineMs?: number;
}

/** Default bound of one wait on a stream (generous for a loaded CI machine). */
export const SSE_WAIT_MS = 30_000;

export class SseConnection {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  /** Settles when the stream is over, whatever the reason (never rejects). */
  readonly ended: Promise<SseEnd>;
  /** For a non-SSE response: the body text, and its JSON when it parses. */
  text?: string;
  json?: Json;
  private endInfo: SseEnd | undefined;
  private readonly waiters = new Set<() => void>();
  private resolveEnd!: (e: SseEnd) => void;

  constructor(
    readonly status: number,
    readonly headers: Record<string, string | string[] | undefined>,
    private readonly controller: AbortController,
    private readonly label: string,
  ) {
    this.ended = new Promise<SseEnd>((r) => (this.resolveEnd = r));
  }

  get contentType(): string {
    return String(this.headers['content-type'] ?? '');
  }

  get isSse(): boolean {
    return this.contentType.startsWith('text/event-stream');
  }

  /** The id of the last event received that carried one. */
  get lastEventId(): string | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) if (this.events[i]?.id !== undefined) return this.events[i]?.id;
    return undefined;
  }

  /** Set once the stream is over. */
  get end(): SseEnd | undefined {
    return this.endInfo;
  }

  /** Drop the connection now (the server sees the socket close). */
  abort(): void {
    if (!this.endInfo) this.controller.abort();
  }

  /** The first event (at index ≥ `from`) matching `pred`; waits for it until `timeoutMs`. */
  waitFor(
    pred: (e: SseEvent, index: number) => boolean,
    what: string,
    timeoutMs = SSE_WAIT_MS,
    from = 0,
  ): Promise<SseEvent> {
    return this.until(
      () => {
        for (let i = from; i < this.events.length; i++) {
          const e = this.events[i] as SseEvent;
          if (pred(e, i)) return e;
        }
        return undefined;
      },
      what,
      timeoutMs,
    );
  }

  /** Wait until at least `n` events have arrived. */
  waitForCount(n: number, timeoutMs = SSE_WAIT_MS): Promise<SseEvent[]> {
    return this.until(() => (this.events.length >= n ? this.events.slice(0, n) : undefined), `${n} events`, timeoutMs);
  }

  /** Wait for a comment line (e.g. `keepalive`) received after `from` comments. */
  waitForComment(pred: (c: string) => boolean, what: string, timeoutMs = SSE_WAIT_MS, from = 0): Promise<string> {
    return this.until(() => this.comments.slice(from).find(pred), what, timeoutMs, true);
  }

  /** Wait until the stream is over; fails after `timeoutMs` (the stream is then aborted). */
  async waitForEnd(timeoutMs = SSE_WAIT_MS): Promise<SseEnd> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
    const res = await Promise.race([this.ended, timeout]);
    clearTimeout(timer);
    if (res === 'timeout') {
      this.abort();
      throw new Error(`${this.label}: the stream did not end within ${timeoutMs} ms; ${this.describe()}`);
    }
    return res;
  }

  /** A short description of what arrived, for assertion messages. */
  describe(): string {
    const evs = this.events.map((e) => `${e.id ?? '-'}:${summarize(e)}`).join(', ');
    return `events [${evs}], comments ${this.comments.length}, end ${JSON.stringify(this.endInfo ?? null)}`;
  }

  // ------------------------------------------------------------------ internals

  /** @internal */
  push(e: SseEvent): void {
    this.events.push(e);
    this.notify();
  }

  /** @internal */
  pushComment(c: string): void {
    this.comments.push(c);
    this.notify();
  }

  /** @internal */
  finish(e: SseEnd): void {
    if (this.endInfo) return;
    this.endInfo = e;
    this.resolveEnd(e);
    this.notify();
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  private until<T>(check: () => T | undefined, what: string, timeoutMs: number, failOnEnd = true): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(poll);
      };
      const poll = () => {
        const v = check();
        if (v !== undefined) {
          done();
          resolve(v);
        } else if (failOnEnd && this.endInfo) {
          done();
          reject(new Error(`${this.label}: the stream ended before ${what}; ${this.describe()}`));
        }
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`${this.label}: no ${what} within ${timeoutMs} ms; ${this.describe()}`));
      }, timeoutMs);
      this.waiters.add(poll);
      poll();
    });
  }
}

function summarize(e: SseEvent): string {
  const r = e.json?.result;
  if (r?.kind === 'task') return `task(${r.status?.state})`;
  if (r?.kind === 'status-update') return `status(${r.status?.state}${r.final ? ',final' : ''})`;
  if (r?.kind === 'artifact-update') return `artifact(${r.artifact?.artifactId})`;
  if (e.json?.error) return `error(${e.json.error.code})`;
  return e.event ?? 'message';
}

/** Open an SSE stream: resolves once the response headers are in. */
export async function openSse(url: string, opts: SseOpenOptions = {}): Promise<SseConnection> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream', ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const deadlineMs = opts.deadlineMs ?? 60_000;
  const deadline = setTimeout(() => controller.abort(), deadlineMs);
  deadline.unref();
  const started = Date.now();
  const label = `${opts.method ?? 'GET'} ${new URL(url).pathname}`;

  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, {
      method: opts.method ?? 'GET',
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      signal: controller.signal,
      headersTimeout: deadlineMs,
      bodyTimeout: 0, // a quiet stream is legal; the overall deadline bounds it
    });
  } catch (err) {
    clearTimeout(deadline);
    throw err;
  }
  const conn = new SseConnection(res.statusCode, res.headers, controller, label);
  if (!conn.isSse) {
    try {
      conn.text = await res.body.text();
      try {
        conn.json = conn.text === '' ? undefined : JSON.parse(conn.text);
      } catch {
        conn.json = undefined;
      }
      conn.finish({ reason: 'end' });
    } catch (err) {
      conn.finish(controller.signal.aborted ? { reason: 'aborted' } : { reason: 'error', error: err as Error });
    } finally {
      clearTimeout(deadline);
    }
    return conn;
  }

  const parser = createParser({
    onEvent(m) {
      let json: Json;
      try {
        json = JSON.parse(m.data);
      } catch {
        json = undefined;
      }
      const e: SseEvent = { data: m.data, json, at: Date.now() - started };
      if (m.id !== undefined) e.id = m.id;
      if (m.event !== undefined) e.event = m.event;
      conn.push(e);
    },
    onComment(c) {
      conn.pushComment(c);
    },
  });
  const decoder = new TextDecoder();
  res.body.on('data', (chunk: Buffer) => parser.feed(decoder.decode(chunk, { stream: true })));
  res.body.once('end', () => {
    clearTimeout(deadline);
    conn.finish({ reason: 'end' });
  });
  res.body.once('error', (err: Error) => {
    clearTimeout(deadline);
    conn.finish(controller.signal.aborted ? { reason: 'aborted' } : { reason: 'error', error: err });
  });
  res.body.once('close', () => {
    clearTimeout(deadline);
    conn.finish(controller.signal.aborted ? { reason: 'aborted' } : { reason: 'end' });
  });
  return conn;
}

export interface A2AStreamOptions extends Omit<SseOpenOptions, 'method' | 'body'> {
  /** JSON-RPC id (default a fresh string). */
  rpcId?: string | number;
  /** The JSON-RPC endpoint path (default /v1/a2a). */
  path?: string;
}

/** POST a streaming JSON-RPC call (`message/stream`, `tasks/resubscribe`) and open its SSE. */
export function openA2AStream(
  baseUrl: string,
  method: string,
  params: unknown,
  opts: A2AStreamOptions = {},
): Promise<SseConnection> {
  const { rpcId, path, ...rest } = opts;
  const body = { jsonrpc: '2.0', id: rpcId ?? `s-${randomUUID()}`, method, params };
  return openSse(`${baseUrl}${path ?? '/v1/a2a'}`, { ...rest, method: 'POST', body });
}

/** The A2A results of a JSON-RPC stream (`result` of each event), in order. */
export const results = (c: SseConnection): Json[] => c.events.map((e) => e.json?.result);

// ---------------------------------------------------------------------------------------------
// What an A2A stream must carry, computed from the run's event log (GET …/events/poll).

/** One A2A update a run event becomes: its sequence (the SSE id), kind, and state if a status. */
export interface ExpectedUpdate {
  seq: number;
  kind: 'status-update' | 'artifact-update';
  state?: string;
}

/**
 * The events of `log` that map to A2A updates, for a client that first saw the task in
 * `initialState` (a new task's message/stream starts at `submitted`): every `artifact.created`,
 * every `node.started` (progress, unless `progress` is false), and every state-changing event
 * whose state differs from the one before it.
 */
export function expectedA2AUpdates(
  log: ReadonlyArray<{ sequence: number; type: string; nodeId?: string; payload?: Json }>,
  initialState = 'submitted',
  progress = true,
): ExpectedUpdate[] {
  const out: ExpectedUpdate[] = [];
  let state = initialState;
  for (const e of log) {
    if (e.type === 'artifact.created' && typeof e.payload?.artifactId === 'string') {
      out.push({ seq: e.sequence, kind: 'artifact-update' });
      continue;
    }
    // A node's start is a working update naming it (unless the workflow sets a2aProgress: false).
    if (progress && e.type === 'node.started' && e.nodeId !== undefined) {
      state = 'working';
      out.push({ seq: e.sequence, kind: 'status-update', state: 'working' });
      continue;
    }
    // The host's own projection: these tests check the stream against it, not against a copy.
    const next = stateAfterEvent({ runId: '', timestamp: '', ...e, payload: e.payload ?? {} } as RunEvent)?.state;
    if (next === undefined || next === state) continue;
    state = next;
    out.push({ seq: e.sequence, kind: 'status-update', state: next });
  }
  return out;
}

/** A progress update's text (a `working` update naming the node that started), else undefined. */
export function progressText(result: Json): string | undefined {
  if (result?.kind !== 'status-update' || result.metadata?.openwop?.nodeId === undefined) return undefined;
  return result.status?.message?.parts?.[0]?.text;
}

/** A 0.3 stream result in one word: `task(state)`, `artifact`, `▸Node (i of n)`, `state` (`!` when final). */
export function resultWord(r: Json): string {
  if (r.kind === 'task') return `task(${r.status.state})`;
  if (r.kind === 'artifact-update') return 'artifact';
  const progress = progressText(r);
  if (progress !== undefined) return `▸${progress}`;
  return `${r.status.state}${r.final ? '!' : ''}`;
}
