// Webhook subscriptions (spec/v1/webhooks.md): a tenant registers a URL for run events (filtered
// by event type and run tags). Each matching event becomes an outbox row in the run's own
// transaction (the `webhook-outbox` pipeline step); the worker claims due rows with a lease, POSTs
// each signed with the subscription's secret in the spec's `v1` scheme through the egress guard's
// dispatcher, and retries on the push schedule until delivered or dead (RFC 0083's durable mode).
//
//   const hooks = new WebhookService(store, { vault, policy, dispatcher, logger, schedule });
//   const { record, secret } = await hooks.register(tenantId, { url, events, tags });
//   pipeline: steps [..., hooks.step], listeners [..., hooks.listener]; hooks.start()
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import { checkPushUrl, type EgressPolicy } from '../egress/address.js';
import { deliver } from '../push/deliver.js';
import type { Vault } from '../push/vault.js';
import { type Backoff, nextWaitMs } from '../egress/backoff.js';
import { PassLoop } from '../pass-loop.js';
import { pushBackoff } from '../push/schedule.js';
import type { WebhookRecord } from '../store/model.js';
import type { WebhookDelivery, WebhookOutcome } from '../store/repos/webhook-deliveries.js';
import type { CommitListener, RunChange, Store, StoreTx, TransitionStep } from '../store/store.js';
import { VERSION } from '../version.js';

export interface WebhookRegistration {
  url: string;
  events: string[];
  tags?: string[];
}

/** A registration refused because the URL is not one the host will ever call (SSRF guard). */
export class WebhookUrlRejected extends Error {
  override readonly name = 'WebhookUrlRejected';
}

export interface WebhookOptions {
  vault: Vault;
  /** The push egress policy: https only, public addresses unless allow-listed. */
  policy: EgressPolicy;
  /** The guarded dispatcher: re-resolves, pins and re-checks every dial. */
  dispatcher: Agent;
  logger: Logger;
  /** Epoch ms (the signature's timestamp). */
  now?: () => number;
  /** One attempt's bound (the spec's 5 s). */
  timeoutMs?: number;
  /** Retry ceilings in ms (the push schedule); their number is the number of retries. */
  schedule: number[];
  instanceId: string;
  leaseMs?: number;
  pollMs?: number;
  /** How often the commit step rechecks whether any subscription exists (another instance's). */
  anyCheckMs?: number;
}

/** `sha256={hex}` of HMAC-SHA256(`{timestamp}.{body}`, secret): the spec's `v1` signature. */
export function signV1(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The first 8 hex characters of sha256(secret): what logs and reads show of a secret. */
function fingerprintOf(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

export class WebhookService {
  /** Some tenant has a subscription: until then a commit reads nothing for webhooks. */
  private known = false;
  private checked = 0;
  private readonly inflight = new Set<Promise<void>>();
  private readonly backoff: Backoff;
  private readonly loop: PassLoop;
  private readonly enqueued = new WeakSet<RunChange>();
  readonly step: TransitionStep;
  readonly listener: CommitListener;

  constructor(
    private readonly store: Store,
    private readonly opts: WebhookOptions,
  ) {
    this.backoff = pushBackoff(opts.schedule);
    this.step = { name: 'webhook-outbox', run: (tx, change) => this.enqueue(tx, change) };
    this.listener = {
      name: 'webhook-worker-wake',
      committed: (changes) => {
        if (changes.some((c) => this.enqueued.has(c))) this.loop.kick();
      },
    };
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => {
        this.opts.logger.error({ err }, 'webhook pass failed');
        return this.opts.pollMs ?? 1000;
      },
    );
  }

  start(): void {
    this.loop.start();
  }

  /** Why the host will not call `url` (the push egress guard), or undefined when it would. */
  urlRefusal(url: string): string | undefined {
    const verdict = checkPushUrl(url, this.opts.policy);
    return verdict.ok ? undefined : verdict.reason;
  }

  /** Check the URL (SSRF guard), make the secret, store the subscription. The secret is shown once. */
  async register(tenantId: string, reg: WebhookRegistration): Promise<{ record: WebhookRecord; secret: string }> {
    const verdict = checkPushUrl(reg.url, this.opts.policy);
    if (!verdict.ok) throw new WebhookUrlRejected(verdict.reason);
    const secret = randomBytes(32).toString('hex');
    const record: WebhookRecord = {
      webhookId: `wh_${randomUUID().replaceAll('-', '')}`,
      tenantId,
      url: verdict.url.href,
      events: [...new Set(reg.events)],
      ...(reg.tags?.length ? { tags: [...new Set(reg.tags)] } : {}),
      sealedSecret: this.opts.vault.seal(secret),
      secretFingerprint: fingerprintOf(secret),
      createdAt: new Date(this.now()).toISOString(),
    };
    await this.store.webhooks.insert(record);
    this.known = true;
    return { record, secret };
  }

  /** False when the tenant has no such subscription. Its pending deliveries are dropped when claimed. */
  async unregister(tenantId: string, webhookId: string): Promise<boolean> {
    return this.store.webhooks.delete(tenantId, webhookId);
  }

  /** Stop claiming, let attempts in flight finish, hand back the leases still held. */
  async stop(): Promise<void> {
    this.loop.stop();
    await Promise.allSettled([...this.inflight]);
    await this.store.webhookDeliveries
      .releaseLeases(this.opts.instanceId)
      .catch((err) => this.opts.logger.warn({ err }, 'could not hand back webhook leases'));
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** In the run's transaction: one outbox row per matching (subscription, event). */
  private async enqueue(tx: StoreTx, change: RunChange): Promise<void> {
    if (change.events.length === 0 || !(await this.anyHooks(tx))) return;
    const hooks = await tx.webhooks.forTenant(change.run.tenantId);
    const now = this.now();
    const rows: WebhookDelivery[] = [];
    for (const hook of hooks) {
      if (hook.tags && !hook.tags.some((t) => change.run.tags.includes(t))) continue;
      for (const event of change.events) {
        if (!hook.events.includes(event.type)) continue;
        rows.push({
          delivery_id: randomUUID(),
          webhook_id: hook.webhookId,
          tenant_id: change.run.tenantId,
          run_id: change.run.runId,
          sequence: event.sequence,
          event_type: event.type,
          body: JSON.stringify({ runId: event.runId, workspaceId: change.run.tenantId, event }),
          state: 'pending',
          attempts: 0,
          next_attempt_at: now,
          lease_owner: null,
          lease_expires_at: null,
          last_status: null,
          last_error: null,
          created_at: new Date(now).toISOString(),
        });
      }
    }
    if (rows.length === 0) return;
    await tx.webhookDeliveries.enqueue(rows);
    this.enqueued.add(change);
  }

  /** Whether any subscription exists: known once one is registered here, rechecked now and then. */
  private async anyHooks(tx: StoreTx): Promise<boolean> {
    const now = this.now();
    if (this.known || now - this.checked < (this.opts.anyCheckMs ?? 5_000)) return this.known;
    this.checked = now;
    this.known = await tx.webhooks.any();
    return this.known;
  }

  /** Claim what there is room for and start each attempt; the delay until the next pass. */
  private async pass(): Promise<number> {
    const poll = this.opts.pollMs ?? 1000;
    const room = 16 - this.inflight.size;
    if (room <= 0) return poll;
    const rows = await this.store.webhookDeliveries.claimDue(this.opts.instanceId, this.opts.leaseMs ?? 60_000, room);
    for (const row of rows) {
      const p = this.attempt(row)
        .catch((err) => this.opts.logger.error({ err }, 'webhook attempt failed'))
        .finally(() => {
          this.inflight.delete(p);
          this.loop.kick();
        });
      this.inflight.add(p);
    }
    return poll;
  }

  /** One signed POST of one delivery; retried on the push schedule, dead when it runs out. */
  private async attempt(row: WebhookDelivery): Promise<void> {
    const hook = await this.store.webhooks.get(row.webhook_id);
    if (!hook) {
      await this.settle(row, { state: 'dead', attempts: row.attempts, lastError: 'the subscription was deleted' });
      return;
    }
    const timestamp = Math.floor(this.now() / 1000);
    const secret = this.opts.vault.open(hook.sealedSecret);
    const result = await deliver(this.opts.dispatcher, hook.url, {
      headers: {
        'content-type': 'application/json',
        'user-agent': `openwop-webhook-dispatcher/${VERSION}`,
        'x-openwop-webhook-id': hook.webhookId,
        'x-openwop-event-type': row.event_type,
        'x-openwop-timestamp': String(timestamp),
        'x-openwop-signature': signV1(secret, timestamp, row.body),
        'x-openwop-signature-algorithm': 'v1',
      },
      body: row.body,
      timeoutMs: this.opts.timeoutMs ?? 5_000,
      maxResponseBytes: 4096,
    });
    const attempts = row.attempts + 1;
    if (result.ok) {
      await this.settle(row, { state: 'delivered', attempts, ...(result.status ? { lastStatus: result.status } : {}) });
      return;
    }
    const retryInMs = result.permanent ? null : nextWaitMs(this.backoff, attempts, result.retryAfterMs);
    const lastError = `${result.error ?? 'failed'}${result.detail ? `: ${result.detail}` : ''}`.slice(0, 500);
    const outcome: WebhookOutcome = {
      state: retryInMs === null ? 'dead' : 'pending',
      attempts,
      ...(retryInMs === null ? {} : { nextAttemptAt: this.now() + retryInMs }),
      ...(result.status ? { lastStatus: result.status } : {}),
      lastError,
    };
    if (outcome.state === 'dead') {
      this.opts.logger.warn({ webhook: hook.secretFingerprint, runId: row.run_id, lastError }, 'webhook delivery dead');
    }
    await this.settle(row, outcome);
  }

  private settle(row: WebhookDelivery, outcome: WebhookOutcome): Promise<boolean> {
    return this.store.webhookDeliveries.settle(row.delivery_id, this.opts.instanceId, outcome);
  }
}
