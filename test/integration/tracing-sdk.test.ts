// The telemetry helpers with and without the OpenTelemetry SDK, in this process: off, they are the
// plain calls they wrap; on (an OTLP endpoint set), spans reach a local OTLP/JSON receiver and log
// lines written inside a span carry its trace_id and span_id.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startTracing, tracingConfigured } from '../../src/telemetry/sdk.js';
import {
  currentTraceContext,
  inSpan,
  logTraceFields,
  receivedTraceContext,
  tracingEnabled,
  withTraceHeaders,
} from '../../src/telemetry/tracing.js';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver.js';

describe('tracing configuration', () => {
  it('is on only with an OTLP endpoint, and off when the SDK or the exporter is disabled', () => {
    assert.equal(tracingConfigured({}), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' }), false);
  });

  it('reads a caller’s trace context only when well formed', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    assert.deepEqual(receivedTraceContext(tp, undefined), { traceparent: tp });
    assert.deepEqual(receivedTraceContext(tp, 'k=v'), { traceparent: tp, tracestate: 'k=v' });
    for (const bad of [
      '',
      'garbage',
      `${tp}-extra`,
      42,
      undefined,
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b71-01',
    ]) {
      assert.equal(receivedTraceContext(bad, undefined), undefined, String(bad));
    }
  });
});

describe('tracing helpers without an SDK', () => {
  it('call through: no span, headers unchanged, no trace fields in logs', async () => {
    assert.equal(tracingEnabled(), false);
    const seen = await inSpan('x', {}, async (span) => span);
    assert.equal(seen, undefined);
    const headers = { a: '1' };
    assert.equal(withTraceHeaders(headers), headers);
    assert.deepEqual(logTraceFields(), {});
    assert.equal(currentTraceContext(), undefined);
  });
});

describe('tracing helpers with the SDK (OTLP/JSON to a local receiver)', () => {
  let otlp: OtlpReceiver;
  let stop: () => Promise<void>;
  before(async () => {
    otlp = await startOtlpReceiver();
    // The SDK reads the standard variables from the process environment, as in a host.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
    stop = await startTracing(process.env);
  });
  after(async () => {
    await stop?.();
    await otlp?.close();
  });

  it('a span is exported under the default service name; a log line inside it names it', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const log = pino({ mixin: logTraceFields }, sink);
    let ids: { traceId: string; spanId: string } | undefined;
    let headers: Record<string, string> = {};
    await inSpan('handoff.test', { attributes: { 'handoff.node.id': 'n1' } }, async (span) => {
      ids = span?.spanContext();
      headers = withTraceHeaders({ accept: 'application/json' });
      log.info('inside');
    });
    log.info('outside');
    assert.ok(ids);
    assert.equal(lines[0]?.trace_id, ids.traceId);
    assert.equal(lines[0]?.span_id, ids.spanId);
    assert.equal(lines[1]?.trace_id, undefined, 'a line outside any span has no trace fields');
    assert.equal(headers.traceparent, `00-${ids.traceId}-${ids.spanId}-01`, 'outbound headers carry the span');
    assert.equal(headers.accept, 'application/json');

    await stop(); // flushes the batch
    const spans = await otlp.until('the span exported', (all) => all.some((s) => s.name === 'handoff.test'));
    const span = spans.find((s) => s.name === 'handoff.test');
    assert.equal(span?.service, 'handoff');
    assert.equal(span?.traceId, ids.traceId);
    assert.equal(span?.attributes['handoff.node.id'], 'n1');
  });
});
