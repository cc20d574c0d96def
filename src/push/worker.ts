// The push delivery worker: claims due outbox rows, sends each through the egress guard with the
// config's credentials, and records the outcome. A failed push never touches the task: it is
// retried on the schedule, and dead-lettered (visible, retryable by an operator) after the last.
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../metrics.js';
import type { PushOutboxTable } from '../store/db.js';
import type { Store } from '../store/store.js';
import { discardSecrets, getConfig } from './configs.js';
import { deliver } from './deliver.js';
import {
  backoffMs,
  claimDue,
  hasPending,
  nextDueAt,
  oldestPendingAgeMs,
  type Outcome,
  releaseLeases,
  settle,
} from './outbox.js';
import type { Vault } from './vault.js';

const attemptsTotal = new Counter({
  name: 'handoff_push_attempts_total',
  help: 'Push delivery attempts by outcome',
  labelNames: ['outcome'],
  registers: [registry],
});
const deliveryLag = new Histogram({
  name: 'handoff_push_delivery_lag_seconds',
  help: 'Time from transition commit to successful delivery',
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300],
  registers: [registry],
});
let lagSource: (() => Promise<number>) | undefined;
new Gauge({
  name: 'handoff_push_outbox_lag_seconds',
  help: 'Age of the oldest pending delivery',
  registers: [registry],
  async collect() {
    if (lagSource) this.set((await lagSource().catch(() => 0)) / 1000);
  },
});

export interface PushWorkerOptions {
  instanceId: string;
  logger: Logger;
  dispatcher: Agent;
  vault: Vault;
  /** Backoff ceilings in ms; the number of entries is the number of retries. */
  schedule: number[];
  timeoutMs?: number;
  maxResponseBytes?: number;
  leaseMs?: number;
  pollMs?: number;
  concurrency?: number;
}

export class PushWorker {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private stopping = false;
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly opts: PushWorkerOptions,
  ) {
    lagSource = () => oldestPendingAgeMs(this.store.db);
  }

  start(): void {
    this.kick();
  }

  /** Look for due deliveries soon (after a commit that may have enqueued some). */
  kick(): void {
    if (this.stopping) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.pass()
      .catch((err) => this.opts.logger.error({ err }, 'push pass failed'))
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async pass(): Promise<void> {
    const room = (this.opts.concurrency ?? 32) - this.inflight.size;
    // Every slot busy: each finishing attempt kicks the next pass; the poll is only a backstop.
    if (room <= 0) return this.schedule(this.opts.pollMs ?? 1000);
    const rows = await claimDue(
      this.store.db,
      this.store.dialect,
      this.opts.instanceId,
      this.opts.leaseMs ?? 60_000,
      room,
    );
    for (const row of rows) this.track(this.attempt(row));
    const next = await nextDueAt(this.store.db, this.store.dialect);
    const poll = this.opts.pollMs ?? 1000;
    this.schedule(next === undefined ? poll : Math.max(10, Math.min(poll, next - Date.now())));
  }

  private track(p: Promise<void>): void {
    const tracked = p
      .catch((err) => this.opts.logger.error({ err }, 'push attempt failed'))
      .finally(() => {
        this.inflight.delete(tracked);
        this.kick();
      });
    this.inflight.add(tracked);
  }

  private schedule(ms: number): void {
    if (this.stopping) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), ms);
    this.timer.unref();
  }

  /** One attempt of one delivery. */
  private async attempt(row: PushOutboxTable): Promise<void> {
    const config = await getConfig(this.store.db, row.task_id, row.config_id);
    if (!config) {
      await settle(this.store.db, row.delivery_id, this.opts.instanceId, {
        state: 'cancelled',
        attempts: row.attempts,
      });
      return;
    }
    const headers = await this.headers(row, config);
    const result = await deliver(this.opts.dispatcher, config.url, {
      headers,
      body: row.body,
      timeoutMs: this.opts.timeoutMs ?? 5000,
      maxResponseBytes: this.opts.maxResponseBytes ?? 64 * 1024,
    });
    const attempts = row.attempts + 1;
    let outcome: Outcome;
    if (result.ok) {
      outcome = { state: 'delivered', attempts, ...(result.status ? { lastStatus: result.status } : {}) };
      deliveryLag.observe((Date.now() - Date.parse(row.created_at)) / 1000);
    } else {
      const exhausted = result.permanent || attempts > this.opts.schedule.length;
      outcome = {
        state: exhausted ? 'dead' : 'pending',
        attempts,
        ...(exhausted
          ? {}
          : { nextAttemptAt: Date.now() + (result.retryAfterMs ?? backoffMs(this.opts.schedule, attempts)) }),
        ...(result.status ? { lastStatus: result.status } : {}),
        lastError: `${result.error ?? 'failed'}${result.detail ? `: ${result.detail}` : ''}`.slice(0, 500),
      };
      if (exhausted)
        this.opts.logger.warn(
          { deliveryId: row.delivery_id, taskId: row.task_id, error: outcome.lastError },
          'push dead-lettered',
        );
    }
    attemptsTotal.inc({ outcome: outcome.state === 'pending' ? 'retry' : outcome.state });
    if (!(await settle(this.store.db, row.delivery_id, this.opts.instanceId, outcome))) return;
    // The task's final push is delivered: the config's credentials are no longer needed. (A
    // dead-lettered one keeps them, so an operator's retry still authenticates.)
    if (
      outcome.state === 'delivered' &&
      row.final === 1 &&
      !(await hasPending(this.store.db, row.task_id, row.config_id))
    ) {
      await discardSecrets(this.store.db, this.opts.vault, config);
    }
  }

  /** Token and credentials go only to the registered URL, in the headers RFC 0214 and a2a-js use. */
  private async headers(
    row: PushOutboxTable,
    config: NonNullable<Awaited<ReturnType<typeof getConfig>>>,
  ): Promise<Record<string, string>> {
    const h: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'handoff-push/0.1',
      'x-handoff-delivery-id': row.delivery_id,
      'x-a2a-task-id': row.task_id,
    };
    const token = config.token_secret ? await this.opts.vault.get(this.store.db, config.token_secret) : undefined;
    const credentials = config.credentials_secret
      ? await this.opts.vault.get(this.store.db, config.credentials_secret)
      : undefined;
    const schemes = config.auth_schemes ? (JSON.parse(config.auth_schemes) as string[]) : [];
    if (token) h['x-a2a-notification-token'] = token;
    if (credentials && schemes[0]) h.authorization = `${schemes[0]} ${credentials}`;
    else if (token) h.authorization = `Bearer ${token}`;
    return h;
  }

  /**
   * Stop claiming; let attempts in flight finish (bounded), then hand back every delivery this
   * instance still holds, so another instance retries it at its next pass instead of after the
   * lease (HANDOFF_PUSH_LEASE_MS). An attempt still running then may yet reach its receiver and be
   * sent again by another instance: deliveries are at-least-once, receivers dedup by
   * X-Handoff-Delivery-Id. (Its late settle() finds the lease gone and records nothing.)
   */
  async stop(timeoutMs = 5000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    await releaseLeases(this.store.db, this.opts.instanceId).catch((err) =>
      this.opts.logger.warn({ err }, 'could not hand back push leases; they expire after HANDOFF_PUSH_LEASE_MS'),
    );
  }
}
