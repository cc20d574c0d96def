// A local OTLP/HTTP trace receiver: what an OpenTelemetry Collector's `otlp` receiver accepts on
// POST /v1/traces. OTLP/JSON bodies (`http/json`) are read into spans; OTLP/protobuf bodies
// (`http/protobuf`, the default) are kept raw, with their content type.
//
//   const otlp = await startOtlpReceiver();
//   env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url; env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
//   const spans = await otlp.until((s) => s.filter((x) => x.traceId === id).length >= 3);
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from './until.js';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number; message?: string };
}

export interface RawExport {
  contentType: string;
  body: Buffer;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  raw: RawExport[];
  until(what: string, enough: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: RawExport[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      raw.push({ contentType, body });
      if (contentType.startsWith('application/json')) spans.push(...readJson(JSON.parse(body.toString('utf8'))));
      res
        .writeHead(200, { 'content-type': contentType || 'application/json' })
        .end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans,
    raw,
    until: (what, enough) =>
      until(what, () => enough(spans) && spans, {
        deadlineMs: 30_000,
        intervalMs: 50,
        detail: () => JSON.stringify(spans.map((s) => [s.service, s.name, s.traceId])).slice(0, 3000),
      }),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

type Json = any;

/** OTLP/JSON ExportTraceServiceRequest → spans (ids are hex strings in OTLP/JSON). */
function readJson(req: Json): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          service,
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          links: (s.links ?? []).map((l: Json) => ({ traceId: l.traceId, spanId: l.spanId })),
          status: s.status ?? {},
        });
      }
    }
  }
  return out;
}

function attributesOf(list: Json[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) {
    const v = a.value ?? {};
    out[a.key] =
      v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
  }
  return out;
}
