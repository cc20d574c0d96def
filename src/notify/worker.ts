// The notification worker: claims due outbox rows with a lease (several instances side by side),
// reads the gate as it is now, sends the message, and records the outcome. A gate decided or
// cancelled before its message went out is not announced (the row is cancelled). Failures retry on
// the push schedule (HANDOFF_PUSH_RETRY_SCHEDULE, the host's one backoff policy), then dead-letter:
// visible and retryable on the console's operations page and by POST /v1/notifications/{id}/retry.
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.js';
import { retryWaitMs } from '../egress/retry-after.js';
import type { WorkflowSource } from '../engine/workflow/source.js';
import { PassLoop } from '../pass-loop.js';
import { backoffMs } from '../push/schedule.js';
import type { Vault } from '../push/vault.js';
import type { NotificationOutcome, NotificationRecord } from '../store/repos/notifications.js';
import type { Store } from '../store/store.js';
import { type Channels, type SendResult, sendEmail, sendSlack, sendWebhook } from './channels.js';
import { messageOf } from './message.js';

export interface NotifyWorkerOptions {
  instanceId: string;
  logger: Logger;
  metrics: Metrics;
  channels: Channels;
  vault: Vault;
  workflows: WorkflowSource;
  /** Where links point (HANDOFF_PUBLIC_URL, else the address the host listens on). */
  baseUrl: () => string;
  /** Backoff ceilings in ms; their number is the number of retries. */
  schedule: number[];
  leaseMs: number;
  /** Every secret the host holds, taken out of an error before it is stored or logged. */
  redact: (text: string) => string;
  pollMs?: number;
  concurrency?: number;
}

export class NotifyWorker {
  private readonly loop: PassLoop;
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly opts: NotifyWorkerOptions,
  ) {
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => {
        this.opts.logger.error({ err }, 'notification pass failed');
        return this.opts.pollMs ?? 1000;
      },
    );
  }

  start(): void {
    this.loop.start();
  }

  kick(): void {
    this.loop.kick();
  }

  private async pass(): Promise<number> {
    const poll = this.opts.pollMs ?? 1000;
    const room = (this.opts.concurrency ?? 8) - this.inflight.size;
    if (room <= 0) return poll;
    const rows = await this.store.notifications.claimDue(this.opts.instanceId, this.opts.leaseMs, room);
    for (const row of rows) this.track(this.attempt(row));
    const next = await this.store.notifications.nextDueAt();
    return next === undefined ? poll : Math.min(poll, next - Date.now());
  }

  private track(p: Promise<void>): void {
    const tracked = p
      .catch((err) => this.opts.logger.error({ err }, 'notification attempt failed'))
      .finally(() => {
        this.inflight.delete(tracked);
        this.kick();
      });
    this.inflight.add(tracked);
  }

  private async attempt(row: NotificationRecord): Promise<void> {
    const run = await this.store.runs.get(row.runId);
    const interrupt =
      run && (await this.store.interrupts.listByRun(row.runId)).find((i) => i.interruptId === row.interruptId);
    if (!run || interrupt?.status !== 'open') {
      this.opts.metrics.notificationAttempts.inc({ channel: row.channel, outcome: 'cancelled' });
      await this.settle(row, { state: 'cancelled', attempts: row.attempts });
      return;
    }
    const token = row.sealedToken ? this.opts.vault.open(row.sealedToken) : undefined;
    const name = this.opts.workflows.get(run.workflowId)?.name ?? run.workflowId;
    const m = messageOf(row, run, interrupt, name, this.opts.baseUrl(), token);
    const c = this.opts.channels;
    const result: SendResult =
      row.channel === 'email'
        ? await sendEmail(c, row.target, m)
        : row.channel === 'webhook'
          ? await sendWebhook(c, row.target, row.notificationId, m)
          : await sendSlack(c, row.target, m);
    const outcome = this.outcome(row, result);
    this.opts.metrics.notificationAttempts.inc({
      channel: row.channel,
      outcome: outcome.state === 'pending' ? 'retry' : outcome.state,
    });
    await this.settle(row, outcome);
  }

  private outcome(row: NotificationRecord, r: SendResult): NotificationOutcome {
    const attempts = row.attempts + 1;
    if (r.ok) return { state: 'sent', attempts };
    const schedule = this.opts.schedule;
    const exhausted = r.permanent || attempts > schedule.length;
    const lastError = this.opts.redact(r.error ?? 'failed').slice(0, 500);
    const log = {
      notificationId: row.notificationId,
      runId: row.runId,
      channel: row.channel,
      attempts,
      error: lastError,
    };
    if (exhausted) {
      this.opts.logger.warn(log, 'notification dead-lettered');
      return { state: 'dead', attempts, lastError };
    }
    this.opts.logger.info(log, 'notification failed; it will be retried');
    const wait = retryWaitMs(backoffMs(schedule, attempts), r.retryAfterMs, Math.max(...schedule));
    return { state: 'pending', attempts, nextAttemptAt: Date.now() + wait, lastError };
  }

  private settle(row: NotificationRecord, o: NotificationOutcome): Promise<boolean> {
    return this.store.notifications.settle(row.notificationId, this.opts.instanceId, o);
  }

  /** Stop claiming, let sends in flight finish (bounded), hand back what this instance holds. */
  async stop(timeoutMs = 5000): Promise<void> {
    this.loop.stop();
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    await this.store.notifications
      .releaseLeases(this.opts.instanceId)
      .catch((err) => this.opts.logger.warn({ err }, 'could not hand back notification leases'));
  }
}
