// Prometheus metrics shared by every layer (one registry per process).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/**
 * Label every exported sample `instance="<id>"` (HANDOFF_INSTANCE_ID), so samples from several
 * instances sharing one database name the instance that produced them whatever address they were
 * scraped at. (Prometheus keeps its own target `instance` label and stores this one as
 * `exported_instance` unless the scrape job sets `honor_labels: true`.) Called by createHost.
 * The registry is per process: with several hosts in one process (tests only), the last one
 * created names the instance.
 */
export function setInstanceLabel(instanceId: string): void {
  registry.setDefaultLabels({ instance: instanceId });
}

export const metrics = {
  runsStarted: new Counter({
    name: 'handoff_runs_started_total',
    help: 'Runs created',
    labelNames: ['workflow'],
    registers: [registry],
  }),
  runsFinished: new Counter({
    name: 'handoff_runs_finished_total',
    help: 'Runs that reached a terminal status',
    labelNames: ['workflow', 'status'],
    registers: [registry],
  }),
  nodeExecutions: new Counter({
    name: 'handoff_node_executions_total',
    help: 'Node executions by type and outcome',
    labelNames: ['type', 'outcome'],
    registers: [registry],
  }),
  activeRuns: new Gauge({
    name: 'handoff_worker_active_runs',
    help: 'Runs this instance is executing now',
    registers: [registry],
  }),
  sseStreams: new Gauge({
    name: 'handoff_sse_streams',
    help: 'SSE streams holding a connection now (HANDOFF_SSE_MAX_STREAMS bounds them)',
    registers: [registry],
  }),
  sseBuffered: new Gauge({
    name: 'handoff_sse_buffered_bytes',
    help: 'Bytes written to SSE streams and not yet taken by the kernel (HANDOFF_SSE_MAX_TOTAL_BUFFER bounds them)',
    registers: [registry],
  }),
  sseDrops: new Counter({
    name: 'handoff_sse_dropped_total',
    help: 'SSE clients dropped: behind (per-stream cap), stalled, host_buffer (host-wide cap), too_large',
    labelNames: ['reason'],
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'handoff_http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  }),
};
