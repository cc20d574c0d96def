// Tracing through the OpenTelemetry API: the spans the host makes, and the W3C trace context it
// stores with a run and sends on every outbound call. With no SDK started (no OTLP endpoint
// configured) every helper here is a plain call of the function it wraps: no span objects, no
// context switches, nothing measurable on the request path.
//
//   await inSpan('handoff.node', { attributes: { 'handoff.node.id': id } }, async (span) => { … });
//   const headers = withTraceHeaders({ 'content-type': 'application/json' });
//   const carrier = currentTraceContext();   // stored with a new run, to parent its later spans
import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { VERSION } from '../version.js';

export { SpanKind };
export type { Attributes, Span };

let enabled = false;

/** Whether an SDK was started in this process (src/telemetry/sdk.ts turns it on). */
export const tracingEnabled = (): boolean => enabled;

/** Called once the SDK is registered with the API; never turned off (the SDK stays for the process). */
export function markTracingEnabled(): void {
  enabled = true;
}

/** A W3C trace context as it travels in headers and is stored with a run. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; default: the active context. */
  parent?: Context;
  links?: Link[];
}

const tracer = () => trace.getTracer('handoff', VERSION);

/**
 * `fn` inside a new active span, which ends when `fn` settles: a throw records the exception and
 * marks the span an error. Without an SDK, `fn(undefined)`.
 */
export async function inSpan<T>(
  name: string,
  opts: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return fn(undefined);
  const span = tracer().startSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes ?? {}, links: opts.links ?? [] },
    opts.parent ?? context.active(),
  );
  try {
    return await context.with(trace.setSpan(opts.parent ?? context.active(), span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Start a span the caller ends (a server span that lives as long as its request). */
export function startSpan(name: string, opts: SpanOptions): Span | undefined {
  if (!enabled) return undefined;
  return tracer().startSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes ?? {}, links: opts.links ?? [] },
    opts.parent ?? context.active(),
  );
}

/** Run `fn` with `span` active under `parent` (callback style, for Fastify hooks). */
export function withActiveSpan<T>(parent: Context, span: Span, fn: () => T): T {
  return context.with(trace.setSpan(parent, span), fn);
}

/** Mark `span` failed with `err`. */
export function failSpan(span: Span | undefined, err: unknown): void {
  if (!span) return;
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Mark `span` failed with a code the host reports (a node's error, a peer's refusal). */
export function failSpanWith(span: Span | undefined, code: string, message?: string): void {
  if (!span) return;
  span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
}

/** The context a received trace context names (the root context when it names none). */
export function contextOf(carrier: TraceContext | undefined): Context {
  if (!enabled || !carrier) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** The parent of a run's spans: the trace context it stored, else (made before tracing was on) the active one. */
export function runTraceParent(stored: unknown): Context {
  const carrier = stored as TraceContext | undefined;
  return carrier?.traceparent ? propagation.extract(ROOT_CONTEXT, carrier) : context.active();
}

/** The active trace context in W3C form, when a span is active: what a new run stores. */
export function currentTraceContext(): TraceContext | undefined {
  if (!enabled) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  if (!carrier.traceparent) return undefined;
  return carrier.tracestate
    ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate }
    : { traceparent: carrier.traceparent };
}

/** `headers` with the active `traceparent` (and `tracestate`) added; unchanged without an SDK. */
export function withTraceHeaders<H extends Record<string, string>>(headers: H): H {
  if (!enabled) return headers;
  const out: Record<string, string> = { ...headers };
  propagation.inject(context.active(), out);
  return out as H;
}

/** `trace_id` and `span_id` of the active span, for a log line (empty outside a span). */
export function logTraceFields(): Record<string, string> {
  if (!enabled) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const c = span.spanContext();
  return trace.isSpanContextValid(c) ? { trace_id: c.traceId, span_id: c.spanId } : {};
}

/**
 * A link to the active span when it belongs to another trace than `parent`: a node executed in a
 * decision's request (a day after its run began) is a span of the run's trace, linked to the
 * decision's own.
 */
export function linksToActive(parent: Context): Link[] {
  if (!enabled) return [];
  const active = trace.getActiveSpan()?.spanContext();
  if (!active || !trace.isSpanContextValid(active)) return [];
  const own = trace.getSpanContext(parent);
  return own?.traceId === active.traceId ? [] : [{ context: active }];
}

/** A W3C `traceparent`: version 00, 32-hex trace id, 16-hex span id, 2-hex flags. */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A trace context a caller sent (a header, or `metadata.openwop` of an A2A message), if well formed. */
export function receivedTraceContext(traceparent: unknown, tracestate: unknown): TraceContext | undefined {
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent.trim())) return undefined;
  const tp = traceparent.trim();
  return typeof tracestate === 'string' && tracestate.length > 0 && tracestate.length <= 512
    ? { traceparent: tp, tracestate }
    : { traceparent: tp };
}
