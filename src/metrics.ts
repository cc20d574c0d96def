// Prometheus metrics of one host (each host has its own registry, so several hosts in one process
// — tests — never mix their counts). Facts about runs are counted by a pipeline listener after
// their commit, so a rolled-back transaction counts nothing and every surface (REST, A2A, the
// worker) counts the same way.
//
//   const metrics = new Metrics(instanceId);
//   store.setPipeline({ steps, listeners: [..., metrics.runListener] });
//   reply.send(await metrics.registry.metrics());
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isTerminal } from './store/model.js';
import type { CommitListener } from './store/store.js';

export class Metrics {
  readonly registry = new Registry();
  readonly runsStarted: Counter<'workflow'>;
  readonly runsFinished: Counter<'workflow' | 'status'>;
  readonly nodeExecutions: Counter<'type' | 'outcome'>;
  readonly activeRuns: Gauge;
  /** SSE streams holding a connection now (HANDOFF_SSE_MAX_STREAMS bounds them). */
  readonly sseStreams: Gauge;
  /** Bytes written to SSE streams and not yet taken by the kernel (HANDOFF_SSE_MAX_TOTAL_BUFFER). */
  readonly sseBuffered: Gauge;
  readonly sseDrops: Counter<'reason'>;
  readonly httpDuration: Histogram<'route' | 'method' | 'status'>;
  readonly pushAttempts: Counter<'outcome'>;
  /** Attempts to send a gate's notification, by channel and outcome (sent, retry, dead, cancelled). */
  readonly notificationAttempts: Counter<'channel' | 'outcome'>;
  /** Statements the database ran for this host, by kind (select, insert, update, begin, commit…). */
  readonly storeStatements: Counter<'op'>;
  /** PostgreSQL: exchanges with the server the store waited for (pipelined writes share one). */
  readonly storeRoundTrips: Counter<never>;
  /** SQLite: store transactions each database COMMIT carried (group commit). */
  readonly storeGroupCommits: Histogram<never>;
  readonly pushDeliveryLag: Histogram<never>;
  /** a2a.invoke stream waits: subscriptions to peer tasks opened, and runs they woke. */
  readonly peerStreamSubscriptions: Counter<never>;
  readonly peerStreamWakes: Counter<never>;
  /** Subscriptions held now, holds refused at HANDOFF_AGENT_MAX_STREAMS, and events read from them. */
  readonly peerStreamHolds: Gauge;
  readonly peerStreamRefused: Counter<never>;
  readonly peerStreamEvents: Counter<never>;
  /** Wakes of runs waiting on a peer, asked by a push callback or a stream, by what came of them. */
  readonly peerWakes: Counter<'source' | 'outcome'>;
  /** Where the outbox lag gauge reads from (the push worker sets it). */
  outboxLagSource: (() => Promise<number>) | undefined;
  /** Statements counted since the last scrape, by kind: added to `storeStatements` when it is read. */
  private readonly statementsSinceScrape = new Map<string, number>();

  /**
   * Every exported sample is labelled `instance="<id>"` (HANDOFF_INSTANCE_ID), so samples from
   * several instances sharing one database name the instance that produced them whatever address
   * they were scraped at. (Prometheus keeps its own target `instance` label and stores this one as
   * `exported_instance` unless the scrape job sets `honor_labels: true`.)
   */
  /** One statement of kind `op` ran (read by `storeStatements`). */
  readonly countStatement = (op: string): void => {
    this.statementsSinceScrape.set(op, (this.statementsSinceScrape.get(op) ?? 0) + 1);
  };

  constructor(instanceId: string) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ instance: instanceId });
    collectDefaultMetrics({ register: this.registry });
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers });
    this.runsStarted = counter('handoff_runs_started_total', 'Runs created (committed), over any surface', [
      'workflow',
    ]);
    this.runsFinished = counter('handoff_runs_finished_total', 'Runs that reached a terminal status (committed)', [
      'workflow',
      'status',
    ]);
    this.nodeExecutions = counter('handoff_node_executions_total', 'Node executions by type and outcome', [
      'type',
      'outcome',
    ]);
    this.pushAttempts = counter('handoff_push_attempts_total', 'Push delivery attempts by outcome', ['outcome']);
    this.notificationAttempts = counter(
      'handoff_notification_attempts_total',
      'Attempts to send gate notifications, by channel and outcome',
      ['channel', 'outcome'],
    );
    // Every statement is counted, so as a plain number: prom-client hashes the labels on each inc.
    const pending = this.statementsSinceScrape;
    this.storeStatements = new Counter({
      name: 'handoff_store_statements_total',
      help: 'Statements the database ran, by kind',
      labelNames: ['op'],
      registers,
      collect() {
        for (const [op, n] of pending) this.inc({ op }, n);
        pending.clear();
      },
    });
    this.peerStreamSubscriptions = counter(
      'handoff_peer_stream_subscriptions_total',
      'Subscriptions to peer tasks opened for a2a.invoke stream waits',
      [],
    );
    this.peerStreamWakes = counter(
      'handoff_peer_stream_wakes_total',
      'Runs waiting on a peer task woken by its stream (not by a push or the poll timer)',
      [],
    );
    this.peerStreamRefused = counter(
      'handoff_peer_stream_refused_total',
      'Stream waits left to polling because this instance held HANDOFF_AGENT_MAX_STREAMS subscriptions',
      [],
    );
    this.peerStreamEvents = counter(
      'handoff_peer_stream_events_total',
      'Events read from peer task streams (each stream is read at a bounded rate)',
      [],
    );
    this.peerWakes = counter(
      'handoff_peer_wakes_total',
      'Wakes of runs waiting on a peer (source push or stream): woken, queued behind a read, or coalesced',
      ['source', 'outcome'],
    );
    this.storeRoundTrips = counter(
      'handoff_store_round_trips_total',
      'PostgreSQL: exchanges with the server the store waited for (a transaction’s writes share one)',
      [],
    );
    this.storeGroupCommits = histogram(
      'handoff_store_group_commit_transactions',
      'SQLite: store transactions committed by each database COMMIT (group commit)',
      [],
      [1, 2, 4, 8, 16, 32, 64],
    );
    const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
    this.activeRuns = gauge('handoff_worker_active_runs', 'Runs this instance is executing now');
    this.peerStreamHolds = gauge(
      'handoff_peer_stream_holds',
      'Subscriptions to peer tasks this instance holds now (HANDOFF_AGENT_MAX_STREAMS)',
    );
    this.sseStreams = gauge('handoff_sse_streams', 'SSE streams holding a connection now (HANDOFF_SSE_MAX_STREAMS)');
    this.sseBuffered = gauge(
      'handoff_sse_buffered_bytes',
      'Bytes written to SSE streams and not yet taken by the kernel (HANDOFF_SSE_MAX_TOTAL_BUFFER)',
    );
    this.sseDrops = counter(
      'handoff_sse_dropped_total',
      'SSE clients dropped: behind (per-stream cap), stalled, host_buffer (host-wide cap), too_large',
      ['reason'],
    );
    this.httpDuration = histogram(
      'handoff_http_request_duration_seconds',
      'HTTP request duration',
      ['route', 'method', 'status'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    );
    this.pushDeliveryLag = histogram(
      'handoff_push_delivery_lag_seconds',
      'Time from transition commit to successful delivery',
      [],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300],
    );
    const metrics = this;
    new Gauge({
      name: 'handoff_push_outbox_lag_seconds',
      help: 'Age of the oldest pending delivery',
      registers,
      async collect() {
        const source = metrics.outboxLagSource;
        if (source) this.set((await source().catch(() => 0)) / 1000);
      },
    });
  }

  /** Counts runs started and finished from what each commit changed. */
  readonly runListener: CommitListener = {
    name: 'metrics',
    committed: (changes) => {
      for (const { before, run } of changes) {
        if (!before) this.runsStarted.inc({ workflow: run.workflowId });
        if (isTerminal(run.status) && (!before || !isTerminal(before.status))) {
          this.runsFinished.inc({ workflow: run.workflowId, status: run.status });
        }
      }
    },
  };
}
