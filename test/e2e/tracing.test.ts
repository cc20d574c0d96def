// OpenTelemetry across hosts and hours: two real Handoff processes exporting OTLP to a local
// receiver. A caller's `traceparent` on host A continues into A's run, its call to host B, and B's
// run — one trace id in every span; a run's spans after a crash and a decision stay in its trace.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';

const SERVER = 2;
const CLIENT = 3;

const traced = (otlp: OtlpReceiver, service: string, protocol = 'http/json') => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: service,
  // Export as soon as a span ends, so the test never waits on the batch timer.
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

const newTraceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};

const inTrace = (spans: ReceivedSpan[], traceId: string) => spans.filter((s) => s.traceId === traceId);

describe('tracing: one trace across hosts and hours (OTLP/HTTP to a local receiver)', () => {
  let otlp: OtlpReceiver;
  let a: ServerProcess;
  let b: ServerProcess;
  let aData: string;
  let workflows: string;

  before(async () => {
    otlp = await startOtlpReceiver();
    b = await startServer({ dataDir: tmp('trace-b'), env: traced(otlp, 'handoff-b') });
    aData = tmp('trace-a');
    workflows = writeCallWorkflows();
    a = await startServer({
      dataDir: aData,
      env: { ...callerEnv(workflows, { reviewer: b.url }), ...traced(otlp, 'handoff-a') },
    });
  });
  after(async () => {
    await killAllServers();
    await otlp?.close();
  });

  it("a caller's traceparent: A's request, run, call to B, and B's run are one trace", async () => {
    const caller = newTraceparent();
    const started = await postJson(
      `${a.url}/v1/runs`,
      { workflowId: 'call_poll_wait', inputs: { agent: 'reviewer', skill: 'echo', prompt: 'trace me' } },
      { headers: { traceparent: caller.traceparent } },
    );
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const done = await untilStatus(a.url, started.body.runId, ['completed', 'failed']);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));

    const spans = await otlp.until('spans of both hosts in the caller’s trace', (all) => {
      const t = inTrace(all, caller.traceId);
      return (
        t.some((s) => s.service === 'handoff-b' && s.name === 'handoff.node') &&
        t.some((s) => s.name === 'SendMessage' && s.kind === CLIENT)
      );
    });
    const trace = inTrace(spans, caller.traceId);
    const aServer = trace.find((s) => s.service === 'handoff-a' && s.kind === SERVER && s.name === 'POST /v1/runs');
    assert.ok(aServer, 'A answered the caller in a server span of its trace');
    assert.equal(aServer.parentSpanId, caller.spanId, "A's server span is a child of the caller's span");

    const aNode = trace.find((s) => s.service === 'handoff-a' && s.name === 'handoff.node');
    assert.ok(aNode);
    assert.equal(aNode.attributes['handoff.node.type'], 'a2a.invoke');
    assert.equal(aNode.attributes['handoff.run.id'], started.body.runId);

    const send = trace.find((s) => s.service === 'handoff-a' && s.kind === CLIENT && s.name === 'SendMessage');
    assert.ok(send, "A's call to B is a client span named as the A2A method");
    assert.equal(send.attributes['a2a.method.name'], 'SendMessage');

    const bServer = trace.find((s) => s.service === 'handoff-b' && s.kind === SERVER && s.name === 'SendMessage');
    assert.ok(bServer, "B's server span continues A's trace");
    assert.equal(bServer.parentSpanId, send.spanId, "B's server span is a child of A's client span");
    assert.equal(bServer.attributes['a2a.method.name'], 'SendMessage');
    assert.equal(
      typeof bServer.attributes['a2a.task.id'] === 'string' || bServer.attributes['a2a.message.id'] !== undefined,
      true,
    );

    const bNode = trace.find((s) => s.service === 'handoff-b' && s.name === 'handoff.node');
    assert.ok(bNode, "B's run executes in the same trace");
    assert.ok(
      trace.some((s) => s.service === 'handoff-a' && s.name === 'handoff.commit'),
      'commits are spans too',
    );
  });

  it('an A2A message carrying metadata.openwop.traceparent continues that trace', async () => {
    const caller = newTraceparent();
    const res = await postJson(`${b.url}/v1/a2a`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: {
        message: {
          kind: 'message',
          role: 'user',
          messageId: `m-${caller.spanId}`,
          parts: [{ kind: 'text', text: 'from metadata' }],
          metadata: { openwop: { traceparent: caller.traceparent } },
        },
        metadata: { skillId: 'echo' },
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.error, undefined, JSON.stringify(res.body.error));
    const spans = await otlp.until('B’s spans in the trace the message named', (all) =>
      inTrace(all, caller.traceId).some((s) => s.name === 'handoff.node'),
    );
    const server = inTrace(spans, caller.traceId).find((s) => s.kind === SERVER);
    assert.equal(server?.name, 'SendMessage');
    assert.equal(server?.parentSpanId, caller.spanId);
  });

  it('a run waiting at a gate through a crash: the node after the decision is in the run’s trace, linked to the decision', async () => {
    const caller = newTraceparent();
    const started = await postJson(
      `${a.url}/v1/runs`,
      { workflowId: 'approval', inputs: { prompt: 'trace across a crash' } },
      { headers: { traceparent: caller.traceparent } },
    );
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const runId = started.body.runId as string;
    await untilStatus(a.url, runId, ['waiting-approval']);

    await a.kill();
    a = await startServer({
      dataDir: aData,
      env: { ...callerEnv(workflows, { reviewer: b.url }), ...traced(otlp, 'handoff-a') },
    });
    const decision = newTraceparent();
    const approved = await postJson(
      `${a.url}/v1/runs/${runId}/interrupts/review`,
      { resumeValue: { action: 'accept' } },
      { headers: { traceparent: decision.traceparent } },
    );
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    await untilStatus(a.url, runId, ['completed']);

    const spans = await otlp.until('the node after the gate', (all) =>
      inTrace(all, caller.traceId).some(
        (s) => s.attributes['handoff.node.id'] === 'final' && s.name === 'handoff.node',
      ),
    );
    const final = inTrace(spans, caller.traceId).find(
      (s) => s.attributes['handoff.node.id'] === 'final' && s.name === 'handoff.node',
    );
    assert.ok(final);
    assert.ok(
      final.links.some((l) => l.traceId === decision.traceId),
      'the node executed in the decision request links to that request’s trace',
    );
    const decided = spans.find((s) => s.traceId === decision.traceId && s.kind === SERVER);
    assert.ok(decided, 'the decision request has its own server span, in the decider’s trace');
  });
});

describe('tracing: OTLP/HTTP with protobuf, the default protocol', () => {
  let otlp: OtlpReceiver;
  let host: ServerProcess;
  before(async () => {
    otlp = await startOtlpReceiver();
    const env = traced(otlp, 'handoff-proto');
    delete (env as Record<string, string | undefined>).OTEL_EXPORTER_OTLP_PROTOCOL;
    host = await startServer({ dataDir: tmp('trace-proto'), env });
  });
  after(async () => {
    await killAllServers();
    await otlp?.close();
  });

  it('exports application/x-protobuf bodies that hold the caller’s trace id', async () => {
    const caller = newTraceparent();
    const res = await postJson(
      `${host.url}/v1/runs`,
      { workflowId: 'echo', inputs: { text: 'proto' } },
      { headers: { traceparent: caller.traceparent } },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const id = Buffer.from(caller.traceId, 'hex');
    await otlp.until('a protobuf export with the trace id', () =>
      otlp.raw.some((r) => r.contentType === 'application/x-protobuf' && r.body.includes(id)),
    );
    assert.ok(
      otlp.raw.some((r) => r.body.includes(Buffer.from('handoff-proto'))),
      'the service name is in the resource',
    );
  });
});
