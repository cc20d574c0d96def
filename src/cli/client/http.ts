// The HTTP layer of the client commands: one undici `request` wrapper, the bearer header, and
// the two failures a caller must tell apart: the server answered with an HTTP error
// (HttpStatusError: 401, 404, 5xx…) or it could not be reached at all (NetworkError: refused,
// reset, timed out). `handoff watch` retries the second kind and the 5xx of the first.
import { type Dispatcher, request } from 'undici';

/** Whole-request bound for ordinary calls (a blocking message/send may wait on the server). */
export const DEFAULT_TIMEOUT_MS = 120_000;

export class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError';
  constructor(
    readonly status: number,
    readonly url: string,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

export class NetworkError extends Error {
  override readonly name = 'NetworkError';
  constructor(
    readonly url: string,
    readonly code: string | undefined,
    message: string,
    /** The cause alone, e.g. "ECONNREFUSED connect ECONNREFUSED 127.0.0.1:8080". */
    readonly detail: string = message,
  ) {
    super(message);
  }
}

/** Connection-level options shared by every command. */
export interface Connection {
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  timeoutMs: number;
}

export function authHeaders(conn: Pick<Connection, 'apiKey'>): Record<string, string> {
  return conn.apiKey ? { authorization: `Bearer ${conn.apiKey}` } : {};
}

export interface SendOptions {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Time to the response headers. */
  headersTimeoutMs?: number;
  /** Longest silence between body chunks (an SSE stream relies on keepalives to stay under it). */
  bodyTimeoutMs?: number;
  signal?: AbortSignal;
}

/** One HTTP exchange; network failures become NetworkError (the body is left to the caller). */
export async function send(url: string, opts: SendOptions): Promise<Dispatcher.ResponseData> {
  try {
    return await request(url, {
      method: opts.method,
      headers: opts.headers ?? {},
      ...(opts.body !== undefined ? { body: opts.body } : {}),
      headersTimeout: opts.headersTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      bodyTimeout: opts.bodyTimeoutMs ?? DEFAULT_TIMEOUT_MS,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  } catch (err) {
    throw toNetworkError(url, err);
  }
}

/** Read a whole body as text; a failure mid-body is a NetworkError too. */
export async function readText(url: string, res: Dispatcher.ResponseData): Promise<string> {
  try {
    return await res.body.text();
  } catch (err) {
    throw toNetworkError(url, err);
  }
}

export function toNetworkError(url: string, err: unknown): Error {
  if (err instanceof NetworkError || err instanceof HttpStatusError) return err;
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'AbortError') return err as Error;
  const code = e?.code ?? e?.cause?.code;
  const detail = e?.cause?.message ?? e?.message ?? String(err);
  const cause = `${code && !detail.includes(code) ? `${code} ` : ''}${detail}`;
  return new NetworkError(url, code, `cannot reach ${url}: ${cause}`, cause);
}

/** Parse JSON, or undefined when the text is not JSON. */
export function tryJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The human part of an error body: Handoff's `{error, message}`, a JSON-RPC error, or the text. */
export function describeBody(text: string): string {
  const json = tryJson(text) as { message?: unknown; error?: unknown } | undefined;
  if (json && typeof json === 'object') {
    if (typeof json.message === 'string')
      return typeof json.error === 'string' ? `${json.error}: ${json.message}` : json.message;
    const rpc = json.error as { code?: unknown; message?: unknown } | undefined;
    if (rpc && typeof rpc === 'object' && typeof rpc.message === 'string') return `${String(rpc.code)} ${rpc.message}`;
  }
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** GET a JSON document; any non-2xx status is an HttpStatusError. */
export async function getJson(url: string, conn: Connection): Promise<unknown> {
  const res = await send(url, {
    method: 'GET',
    headers: { accept: 'application/json', ...authHeaders(conn) },
    headersTimeoutMs: conn.timeoutMs,
    bodyTimeoutMs: conn.timeoutMs,
  });
  const text = await readText(url, res);
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const why = describeBody(text);
    throw new HttpStatusError(
      res.statusCode,
      url,
      `HTTP ${res.statusCode} from ${url}${why ? `: ${why}` : ''}`,
      tryJson(text),
    );
  }
  const json = tryJson(text);
  if (json === undefined) throw new HttpStatusError(res.statusCode, url, `${url} did not answer with JSON`);
  return json;
}
