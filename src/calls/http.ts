// One outbound HTTP call: a single attempt through the egress guard, bounded in time and bytes,
// answered as a success or a classified failure that says whether trying again can help. There is
// no retry loop here: the engine waits between attempts on a durable timer (retry.ts).
//
//   const dispatcher = createGuardedDispatcher({ policy });      // policy = createEgressPolicy(config.egress)
//   const out = await httpCall({ method: 'GET', url }, { dispatcher, policy, idempotencyKey: 'run:node:0' });
//   if (out.ok) use(out.body); else if (out.retryable) retryLater(out.retryAfterMs); else fail(out.code);
import type { Readable } from 'node:stream';
import { type Static, Type } from '@sinclair/typebox';
import { type Dispatcher, request as undiciRequest } from 'undici';
import { checkCallUrl, type EgressPolicy } from '../egress/address.js';
import { parseRetryAfter } from '../egress/retry-after.js';
import { failSpanWith, inSpan, SpanKind, tracingEnabled, withTraceHeaders } from '../telemetry/tracing.js';
import { VERSION } from '../version.js';
import { type CallFailure, type Report, reporter } from './failure.js';
import { schemaError } from './schema.js';

const TOKEN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

const HttpCallRequestSchema = Type.Object(
  {
    method: Type.String({ pattern: '^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$' }),
    url: Type.String({ minLength: 1 }),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: TOKEN }), Type.String({ pattern: '^[^\\r\\n\\0]*$' }), {
        additionalProperties: false,
      }),
    ),
    /** Appended to the URL's own query; an array repeats the parameter. */
    query: Type.Optional(Type.Record(Type.String(), Type.Union([Scalar, Type.Array(Scalar)]))),
    /** Sent as JSON (content-type application/json unless a header says otherwise). Not with `body`. */
    json: Type.Optional(Type.Unknown()),
    body: Type.Optional(Type.String()),
    /** The whole call, redirects and reading the answer included. Default 30 s. */
    timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
    /** A longer answer fails `response_too_large` without being read to its end. Default 1 MiB. */
    responseLimitBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 * 1024 * 1024 })),
    /** false (default): a 3xx is the answer; true: follow up to 5 hops; a number: up to that many. */
    followRedirects: Type.Optional(Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: 20 })])),
    /** Statuses that count as success. Default: any 2xx. */
    expect: Type.Optional(Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), { minItems: 1 })),
    /** Response headers to return besides content-type, etag, location and retry-after. */
    responseHeaders: Type.Optional(Type.Array(Type.String({ pattern: TOKEN }))),
  },
  { additionalProperties: false },
);

export type HttpCallRequest = Static<typeof HttpCallRequestSchema>;

export interface HttpCallOptions {
  /** A guarded dispatcher (createGuardedDispatcher) built with `policy`: it re-checks every dial. */
  dispatcher: Dispatcher;
  /** The outbound-call policy; the URL of the call and of every redirect hop is checked with it. */
  policy: EgressPolicy;
  /** Sent as `Idempotency-Key` on every request of the call (the engine's `runId:nodeId:ordinal`). */
  idempotencyKey: string;
  /**
   * Applied to failure messages and to body excerpts before they are cut, e.g. SecretStore.redact
   * (every spelling of every secret; the call's URL, query included, is never put in a message).
   */
  redact?: (text: string) => string;
}

export type HttpCallErrorCode =
  | 'invalid_request'
  | 'egress_denied'
  | 'http_status'
  | 'timeout'
  | 'network'
  | 'redirect'
  | 'response_too_large'
  | 'invalid_response';

export interface HttpCallSuccess {
  ok: true;
  status: number;
  /** Only the allow-listed response headers, lower-case names. */
  headers: Record<string, string>;
  /** Parsed JSON when the content type is JSON (null when empty), else the text. */
  body: unknown;
}

export type HttpCallFailure = CallFailure<HttpCallErrorCode>;

export type HttpCallOutcome = HttpCallSuccess | HttpCallFailure;

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RESPONSE_LIMIT = 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const EXCERPT_READ_BYTES = 4096;
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const RETURNED_HEADERS = ['content-type', 'etag', 'location', 'retry-after'];
// Set by the HTTP client itself; a caller's value would desynchronise or re-route the request.
const CLIENT_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);
// What a hop to another origin still carries: nothing that could be a credential, whatever its name.
const CROSS_ORIGIN_HEADERS = new Set([
  ...['accept', 'accept-language', 'content-type', 'user-agent', 'idempotency-key'],
  ...['traceparent', 'tracestate'],
]);

/** One request of the call: the first, or a redirect hop. */
interface Hop {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** One attempt of `request`. Never throws: every problem is a classified failure. */
export function httpCall(request: HttpCallRequest, options: HttpCallOptions): Promise<HttpCallOutcome> {
  if (!tracingEnabled()) return attempt(request, options);
  // A client span per call (redirect hops included); its context goes out as `traceparent`.
  return inSpan(request.method, { kind: SpanKind.CLIENT, attributes: callAttributes(request) }, async (span) => {
    const outcome = await attempt(request, options);
    if (outcome.status !== undefined) span?.setAttribute('http.response.status_code', outcome.status);
    if (!outcome.ok) failSpanWith(span, outcome.code);
    return outcome;
  });
}

/** The call's target without its path and query (which may carry a credential). */
function callAttributes(request: HttpCallRequest): Record<string, string | number> {
  const out: Record<string, string | number> = { 'http.request.method': request.method };
  try {
    const url = new URL(request.url);
    out['server.address'] = url.hostname;
    out['url.scheme'] = url.protocol.replace(':', '');
    if (url.port) out['server.port'] = Number(url.port);
  } catch {
    // an invalid URL is reported by the call itself
  }
  return out;
}

async function attempt(request: HttpCallRequest, options: HttpCallOptions): Promise<HttpCallOutcome> {
  const report = reporter<HttpCallErrorCode>(options.redact);
  const invalid = requestError(request, options.idempotencyKey);
  if (invalid !== undefined) return report.fail('invalid_request', false, `invalid request: ${invalid}`);
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxRedirects = redirectLimit(request.followRedirects);
  // One deadline for the whole call, however many hops it takes.
  const signal = AbortSignal.timeout(timeoutMs);
  let hop = firstHop(request, options.idempotencyKey);
  for (let redirects = 0; ; redirects++) {
    const verdict = checkCallUrl(hop.url, options.policy);
    if (!verdict.ok) {
      const code = verdict.arm === 'parse' ? 'invalid_request' : 'egress_denied';
      return report.fail(code, false, `${verdict.reason}${redirects > 0 ? ` (redirect ${redirects})` : ''}`);
    }
    try {
      const res = await undiciRequest(verdict.url, {
        dispatcher: options.dispatcher,
        method: hop.method as Dispatcher.HttpMethod,
        headers: hop.headers,
        body: hop.body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const next = maxRedirects > 0 && REDIRECT_STATUSES.has(res.statusCode) ? locationOf(res, verdict.url) : undefined;
      if (next === undefined) return await answer(res, request, report);
      await res.body.dump();
      if (redirects >= maxRedirects) return report.fail('redirect', false, `more than ${maxRedirects} redirects`);
      hop = nextHop(hop, res.statusCode, next);
    } catch (err) {
      return classifyError(err, report);
    }
  }
}

function requestError(request: HttpCallRequest, idempotencyKey: string): string | undefined {
  const shape = schemaError(HttpCallRequestSchema, request);
  if (shape !== undefined) return shape;
  if (request.json !== undefined && request.body !== undefined) return 'give json or body, not both';
  const hasBody = request.json !== undefined || request.body !== undefined;
  if (hasBody && (request.method === 'GET' || request.method === 'HEAD')) return `a ${request.method} has no body`;
  const clientSet = Object.keys(request.headers ?? {}).find((h) => CLIENT_HEADERS.has(h.toLowerCase()));
  if (clientSet !== undefined) return `header ${clientSet} is set by the HTTP client`;
  if (!/^[\x21-\x7e]{1,255}$/.test(idempotencyKey))
    return 'the idempotency key must be 1..255 visible ASCII characters';
  return undefined;
}

function redirectLimit(follow: boolean | number | undefined): number {
  if (follow === true) return DEFAULT_MAX_REDIRECTS;
  return typeof follow === 'number' ? follow : 0;
}

function firstHop(request: HttpCallRequest, idempotencyKey: string): Hop {
  const headers: Record<string, string> = { 'user-agent': `handoff/${VERSION}` };
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
  let body = request.body;
  if (request.json !== undefined) {
    body = JSON.stringify(request.json);
    headers['content-type'] ??= 'application/json';
  }
  // Ours wins over a caller's: retries of one node must carry one key.
  headers['idempotency-key'] = idempotencyKey;
  return {
    url: withQuery(request.url, request.query),
    method: request.method,
    headers: withTraceHeaders(headers),
    body,
  };
}

function withQuery(raw: string, query: HttpCallRequest['query']): string {
  if (query === undefined) return raw;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return raw; // checkCallUrl reports it
  }
  for (const [name, value] of Object.entries(query)) {
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(v));
  }
  return url.href;
}

/** The redirect target, resolved against the URL that answered; undefined without a usable Location. */
function locationOf(res: Dispatcher.ResponseData, base: URL): string | undefined {
  const location = headerValue(res.headers.location);
  if (location === undefined) return undefined;
  try {
    return new URL(location, base).href;
  } catch {
    return undefined;
  }
}

/**
 * The request a redirect asks for. 303 (and 301/302 after a POST, as browsers do) becomes a GET
 * without a body; a hop to another origin keeps only headers that cannot carry credentials.
 */
function nextHop(prev: Hop, status: number, location: string): Hop {
  const toGet = status === 303 ? prev.method !== 'HEAD' : (status === 301 || status === 302) && prev.method === 'POST';
  const sameOrigin = new URL(location).origin === new URL(prev.url).origin;
  const headers = Object.fromEntries(
    Object.entries(prev.headers).filter(
      ([name]) => (sameOrigin || CROSS_ORIGIN_HEADERS.has(name)) && !(toGet && name === 'content-type'),
    ),
  );
  return { url: location, method: toGet ? 'GET' : prev.method, headers, body: toGet ? undefined : prev.body };
}

/** The final answer of the call: success when its status is expected, else a classified failure. */
async function answer(
  res: Dispatcher.ResponseData,
  request: HttpCallRequest,
  report: Report<HttpCallErrorCode>,
): Promise<HttpCallOutcome> {
  const status = res.statusCode;
  const expected = request.expect ? request.expect.includes(status) : status >= 200 && status < 300;
  if (!expected) return unexpected(res, report);
  const limit = request.responseLimitBytes ?? DEFAULT_RESPONSE_LIMIT;
  const declared = Number(headerValue(res.headers['content-length']) ?? 0);
  const read = declared > limit ? undefined : await readUpTo(res.body, limit, declared);
  if (read === undefined || !read.complete) {
    discard(res.body);
    return report.fail('response_too_large', false, `the answer is larger than ${limit} bytes`, { status });
  }
  const contentType = headerValue(res.headers['content-type']) ?? '';
  const text = read.bytes.toString('utf8');
  const headers = returnedHeaders(res.headers, request.responseHeaders);
  if (!isJson(contentType)) return { ok: true, status, headers, body: text };
  if (text.trim() === '') return { ok: true, status, headers, body: null };
  try {
    return { ok: true, status, headers, body: JSON.parse(text) };
  } catch {
    return report.fail('invalid_response', false, `the answer says ${contentType} but is not valid JSON`, {
      status,
      bodyExcerpt: report.excerpt(text),
    });
  }
}

/** The allow-listed response headers (and the caller's extra names), lower case. */
function returnedHeaders(all: Dispatcher.ResponseData['headers'], extra: string[] = []): Record<string, string> {
  const names = [...RETURNED_HEADERS, ...extra.map((h) => h.toLowerCase())];
  return Object.fromEntries(
    names.flatMap((name) => {
      const value = headerValue(all[name]);
      return value === undefined ? [] : [[name, value]];
    }),
  );
}

async function unexpected(res: Dispatcher.ResponseData, report: Report<HttpCallErrorCode>): Promise<HttpCallFailure> {
  const status = res.statusCode;
  const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
  const read = await readUpTo(res.body, EXCERPT_READ_BYTES);
  discard(res.body);
  const extra = {
    status,
    bodyExcerpt: report.excerpt(read.bytes.toString('utf8')),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
  if (status >= 300 && status < 400) {
    const location = shownUrl(headerValue(res.headers.location));
    return report.fail('redirect', false, `${status} redirect${location ? ` to ${location}` : ''} not followed`, extra);
  }
  return report.fail('http_status', RETRYABLE_STATUSES.has(status), `unexpected status ${status}`, extra);
}

/**
 * A Location for a message: origin and path, never the query or fragment. A server that redirects
 * to (or echoes) the request's own URL would otherwise copy its query parameters, secrets
 * included, into the run's error.
 */
function shownUrl(location: string | undefined): string | undefined {
  if (location === undefined) return undefined;
  try {
    // A relative Location is shown as its path.
    const url = new URL(location, 'http://relative.invalid');
    return URL.canParse(location) ? url.origin + url.pathname : url.pathname;
  } catch {
    return 'an unreadable location';
  }
}

/**
 * At most `limit` bytes of the body; `complete` is false when there was more. With its length
 * declared (`declared` > 0), the body is copied into one buffer of that length as it comes: a long
 * answer is not held twice (its chunks, then their concatenation).
 */
async function readUpTo(body: Readable, limit: number, declared = 0): Promise<{ bytes: Buffer; complete: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let into = declared > 0 && declared <= limit ? Buffer.allocUnsafe(declared) : undefined;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    if (into !== undefined && size + buf.length <= into.length) {
      buf.copy(into, size);
      size += buf.length;
      continue;
    }
    if (into !== undefined) {
      // Longer than declared: go on as without a length.
      chunks.push(into.subarray(0, size));
      into = undefined;
    }
    if (size + buf.length > limit) {
      chunks.push(buf.subarray(0, limit - size));
      return { bytes: Buffer.concat(chunks), complete: false }; // leaving the loop destroys the stream
    }
    chunks.push(buf);
    size += buf.length;
  }
  if (into !== undefined) return { bytes: into.subarray(0, size), complete: true };
  return { bytes: Buffer.concat(chunks), complete: true };
}

/** Drop the rest of an answer (and its connection); the abort this raises on the stream is expected. */
function discard(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

function classifyError(err: unknown, report: Report<HttpCallErrorCode>): HttpCallFailure {
  const e = err as { code?: string; name?: string; message?: string };
  const message = e.message ?? String(err);
  if (e.code === 'EGRESS_DENIED') return report.fail('egress_denied', false, message);
  if (e.code === 'UND_ERR_INVALID_ARG') return report.fail('invalid_request', false, `invalid request: ${message}`);
  if (e.name === 'TimeoutError' || /TIMEOUT/.test(e.code ?? ''))
    return report.fail('timeout', true, 'the call timed out');
  return report.fail('network', true, message);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** application/json and the `+json` types (problem+json, vnd.api+json, …). */
function isJson(contentType: string): boolean {
  return /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(contentType);
}
