// One push delivery attempt over the egress guard's dispatcher: a bounded POST that never
// follows redirects, classified as delivered, retryable or permanent.
//
//   const r = await deliver(dispatcher, url, { headers, body, timeoutMs: 5000, maxResponseBytes: 65536 });
//   if (!r.ok && !r.permanent) scheduleRetry(r.retryAfterMs);
import { type Agent, request } from 'undici';
import { parseRetryAfter } from '../egress/retry-after.js';
import { failSpanWith, inSpan, SpanKind, tracingEnabled, withTraceHeaders } from '../telemetry/tracing.js';

export interface DeliverOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  maxResponseBytes: number;
}

export type DeliveryErrorCode =
  | 'egress_denied'
  | 'insecure_scheme'
  | 'redirect'
  | 'http_status'
  | 'timeout'
  | 'network';

export interface DeliveryResult {
  ok: boolean;
  status?: number;
  retryAfterMs?: number;
  error?: DeliveryErrorCode;
  detail?: string;
  /** True when retrying cannot help: dead-letter now. */
  permanent: boolean;
}

function classifyStatus(status: number, retryAfterMs: number | undefined): DeliveryResult {
  const base = { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  if (status >= 200 && status < 300) return { ok: true, ...base, permanent: false };
  // A redirect is never followed (it could point anywhere); it is a failed, retryable attempt.
  if (status >= 300 && status < 400) return { ok: false, ...base, error: 'redirect', permanent: false };
  const retryable = status === 408 || status === 429 || status >= 500;
  return { ok: false, ...base, error: 'http_status', permanent: !retryable };
}

function classifyError(err: unknown): DeliveryResult {
  const e = err as { code?: string; name?: string; message?: string };
  const detail = e.message ?? String(err);
  if (e.code === 'EGRESS_DENIED') return { ok: false, error: 'egress_denied', detail, permanent: true };
  const timedOut = e.name === 'TimeoutError' || /TIMEOUT/.test(e.code ?? '');
  return { ok: false, error: timedOut ? 'timeout' : 'network', detail, permanent: false };
}

/** One POST attempt, bounded in time and in bytes read. Never throws. */
export function deliver(dispatcher: Agent, url: string | URL, opts: DeliverOptions): Promise<DeliveryResult> {
  if (!tracingEnabled()) return attempt(dispatcher, url, opts);
  // A client span per attempt; the receiver gets its context as `traceparent`.
  const attributes = {
    'http.request.method': 'POST',
    'server.address': new URL(url).hostname,
    'handoff.delivery': 'push',
  };
  return inSpan('POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const r = await attempt(dispatcher, url, { ...opts, headers: withTraceHeaders(opts.headers) });
    if (r.status !== undefined) span?.setAttribute('http.response.status_code', r.status);
    if (!r.ok) failSpanWith(span, r.error ?? 'failed', r.detail);
    return r;
  });
}

async function attempt(dispatcher: Agent, url: string | URL, opts: DeliverOptions): Promise<DeliveryResult> {
  const target = new URL(url);
  // Registration already checked; re-check the scheme so a stored http:// row can't slip out.
  if (target.protocol !== 'https:' || target.username || target.password) {
    return {
      ok: false,
      error: 'insecure_scheme',
      detail: 'push URLs must be https without credentials',
      permanent: true,
    };
  }
  try {
    const res = await request(target, {
      method: 'POST',
      dispatcher,
      headers: opts.headers,
      body: opts.body,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    // We don't need the body: read at most the cap, then drop the stream (and the connection).
    await res.body.dump({ limit: Math.max(1, opts.maxResponseBytes) }).catch(() => undefined);
    return classifyStatus(res.statusCode, parseRetryAfter(res.headers['retry-after']));
  } catch (err) {
    return classifyError(err);
  }
}
