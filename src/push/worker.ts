// The push delivery worker: claims due outbox rows, sends each through the egress guard with the
// config's credentials, and records the outcome. A failed push never touches the task: it is
// retried on the schedule, and dead-lettered (visible, retryable by an operator) after the last.
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import type { Metrics } from '../metrics.js';
import type { DeliveryRecord, PushConfigRecord } from '../store/model.js';
import type { Outcome } from '../store/repos/push-outbox.js';
import type { Store } from '../store/store.js';
import { discardSecrets, openSecrets } from './configs.js';
import { type Backoff, nextWaitMs } from '../egress/backoff.js';
import { PassLoop } from '../pass-loop.js';
import { deliver } from './deliver.js';
import { pushBackoff } from './schedule.js';
import type { Vault } from './vault.js';

/** A delivery's wire: its body, content type and protocol version (sent as A2A-Version). */
export interface RenderedPush {
  body: string;
  contentType: string;
  version: string;
}

export interface PushWorkerOptions {
  /** How a delivery row becomes what is sent (the A2A layer's encoding per version); absent: the
   * stored body as JSON. */
  render?: (row: DeliveryRecord) => RenderedPush;
  instanceId: string;
  logger: Logger;
  metrics: Metrics;
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
  private readonly loop: PassLoop;
  private readonly inflight = new Set<Promise<void>>();
  private readonly backoff: Backoff;

  constructor(
    private readonly store: Store,
    private readonly opts: PushWorkerOptions,
  ) {
    this.backoff = pushBackoff(opts.schedule);
    opts.metrics.outboxLagSource = () => this.store.outbox.oldestPendingAgeMs();
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => {
        this.opts.logger.error({ err }, 'push pass failed');
        return this.opts.pollMs ?? 1000;
      },
    );
  }

  start(): void {
    this.loop.start();
  }

  /** Look for due deliveries soon (after a commit that may have enqueued some). */
  kick(): void {
    this.loop.kick();
  }

  /** Claim and start what there is room for; the delay until the next pass. */
  private async pass(): Promise<number> {
    const poll = this.opts.pollMs ?? 1000;
    const room = (this.opts.concurrency ?? 32) - this.inflight.size;
    // Every slot busy: each finishing attempt kicks the next pass; the poll is only a backstop.
    if (room <= 0) return poll;
    const rows = await this.store.outbox.claimDue(this.opts.instanceId, this.opts.leaseMs ?? 60_000, room);
    for (const row of rows) this.track(this.attempt(row));
    const next = await this.store.outbox.nextDueAt();
    return next === undefined ? poll : Math.min(poll, next - Date.now());
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

  /** One attempt of one delivery. */
  private async attempt(row: DeliveryRecord): Promise<void> {
    const config = await this.store.pushConfigs.get(row.taskId, row.configId);
    if (!config) {
      await this.settle(row, { state: 'cancelled', attempts: row.attempts });
      return;
    }
    const rendered = this.opts.render?.(row) ?? { body: row.body, contentType: 'application/json', version: '0.3' };
    const result = await deliver(this.opts.dispatcher, config.url, {
      headers: await this.headers(row, config, rendered),
      body: rendered.body,
      timeoutMs: this.opts.timeoutMs ?? 5000,
      maxResponseBytes: this.opts.maxResponseBytes ?? 64 * 1024,
    });
    const attempts = row.attempts + 1;
    let outcome: Outcome;
    if (result.ok) {
      outcome = { state: 'delivered', attempts, ...(result.status ? { lastStatus: result.status } : {}) };
      this.opts.metrics.pushDeliveryLag.observe((Date.now() - Date.parse(row.createdAt)) / 1000);
    } else {
      // A receiver's Retry-After is honoured up to the schedule's longest step, never beyond it.
      const retryInMs = result.permanent ? null : nextWaitMs(this.backoff, attempts, result.retryAfterMs);
      const exhausted = retryInMs === null;
      outcome = {
        state: exhausted ? 'dead' : 'pending',
        attempts,
        ...(exhausted ? {} : { nextAttemptAt: Date.now() + retryInMs }),
        ...(result.status ? { lastStatus: result.status } : {}),
        lastError: `${result.error ?? 'failed'}${result.detail ? `: ${result.detail}` : ''}`.slice(0, 500),
      };
      if (exhausted) {
        const log = { deliveryId: row.deliveryId, taskId: row.taskId, error: outcome.lastError };
        this.opts.logger.warn(log, 'push dead-lettered');
      }
    }
    this.opts.metrics.pushAttempts.inc({ outcome: outcome.state === 'pending' ? 'retry' : outcome.state });
    if (!(await this.settle(row, outcome))) return;
    // The task's final push is delivered: the config's credentials are no longer needed. (A
    // dead-lettered one keeps them, so an operator's retry still authenticates.)
    const done = outcome.state === 'delivered' && row.final;
    if (done && !(await this.store.outbox.hasPending(row.taskId, row.configId))) {
      await discardSecrets(this.store, config);
    }
  }

  private settle(row: DeliveryRecord, outcome: Outcome): Promise<boolean> {
    return this.store.outbox.settle(row.deliveryId, this.opts.instanceId, outcome);
  }

  /**
   * Token and credentials go only to the registered URL, in the headers RFC 0214 and a2a-js use.
   * A 1.0 registration gets `Authorization: <scheme> <credentials>` only (1.0 defines no token
   * header); the token still travels as X-A2A-Notification-Token for the receiver to check.
   */
  private async headers(
    row: DeliveryRecord,
    config: PushConfigRecord,
    rendered: RenderedPush,
  ): Promise<Record<string, string>> {
    const h: Record<string, string> = {
      'content-type': rendered.contentType,
      'a2a-version': rendered.version,
      'user-agent': 'handoff-push/0.1',
      'x-handoff-delivery-id': row.deliveryId,
      'x-a2a-task-id': row.taskId,
    };
    const { token, credentials } = await openSecrets(this.store, this.opts.vault, config);
    const scheme = config.authSchemes?.[0];
    if (token) h['x-a2a-notification-token'] = token;
    if (credentials && scheme) h.authorization = `${scheme} ${credentials}`;
    else if (token && rendered.version === '0.3') h.authorization = `Bearer ${token}`;
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
    this.loop.stop();
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    await this.store.outbox
      .releaseLeases(this.opts.instanceId)
      .catch((err) =>
        this.opts.logger.warn({ err }, 'could not hand back push leases; they expire after HANDOFF_PUSH_LEASE_MS'),
      );
  }
}
