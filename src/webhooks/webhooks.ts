// Webhook subscriptions (spec/v1/webhooks.md): a tenant registers a URL for run events (filtered
// by event type and run tags); after each commit the host POSTs every matching event, signed with
// the subscription's secret in the spec's `v1` scheme, through the egress guard's dispatcher.
//
//   const hooks = new WebhookService(store, { vault, policy, dispatcher, logger });
//   const { record, secret } = await hooks.register(tenantId, { url, events, tags });
//   pipeline listeners: [..., hooks.listener]
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import { checkPushUrl, type EgressPolicy } from '../egress/address.js';
import { deliver } from '../push/deliver.js';
import type { Vault } from '../push/vault.js';
import type { RunEvent, WebhookRecord } from '../store/model.js';
import type { CommitListener, RunChange, Store } from '../store/store.js';
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
  /** How long a tenant's subscriptions are reused between commits (other instances' changes). */
  cacheMs?: number;
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
  private readonly cache = new Map<string, { at: number; hooks: WebhookRecord[] }>();
  private readonly inflight = new Set<Promise<void>>();
  readonly listener: CommitListener;

  constructor(
    private readonly store: Store,
    private readonly opts: WebhookOptions,
  ) {
    this.listener = { name: 'webhook-dispatch', committed: (changes) => this.dispatch(changes) };
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
    this.cache.delete(tenantId);
    return { record, secret };
  }

  /** False when the tenant has no such subscription. */
  async unregister(tenantId: string, webhookId: string): Promise<boolean> {
    const gone = await this.store.webhooks.delete(tenantId, webhookId);
    this.cache.delete(tenantId);
    return gone;
  }

  /** Deliveries in flight finish (a drain waits for them; each is bounded by timeoutMs). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  private dispatch(changes: RunChange[]): void {
    for (const change of changes) {
      if (change.events.length === 0) continue;
      const sending = this.deliverChange(change).catch((err) =>
        this.opts.logger.error({ err, runId: change.run.runId }, 'webhook dispatch failed'),
      );
      this.inflight.add(sending);
      void sending.finally(() => this.inflight.delete(sending));
    }
  }

  private async deliverChange(change: RunChange): Promise<void> {
    const hooks = await this.hooksOf(change.run.tenantId);
    for (const hook of hooks) {
      if (hook.tags && !hook.tags.some((t) => change.run.tags.includes(t))) continue;
      for (const event of change.events) {
        if (hook.events.includes(event.type)) await this.send(hook, change.run.tenantId, event);
      }
    }
  }

  /** A tenant's subscriptions, read at most once per cacheMs (registrations here drop it at once). */
  private async hooksOf(tenantId: string): Promise<WebhookRecord[]> {
    const cached = this.cache.get(tenantId);
    const now = this.now();
    if (cached && now - cached.at < (this.opts.cacheMs ?? 2_000)) return cached.hooks;
    const hooks = await this.store.webhooks.forTenant(tenantId);
    this.cache.set(tenantId, { at: now, hooks });
    return hooks;
  }

  /** One signed POST (best effort, spec v1: one attempt, never a redirect, 5 s). */
  private async send(hook: WebhookRecord, tenantId: string, event: RunEvent): Promise<void> {
    const body = JSON.stringify({ runId: event.runId, workspaceId: tenantId, event });
    const timestamp = Math.floor(this.now() / 1000);
    const secret = this.opts.vault.open(hook.sealedSecret);
    const result = await deliver(this.opts.dispatcher, hook.url, {
      headers: {
        'content-type': 'application/json',
        'user-agent': `openwop-webhook-dispatcher/${VERSION}`,
        'x-openwop-webhook-id': hook.webhookId,
        'x-openwop-event-type': event.type,
        'x-openwop-timestamp': String(timestamp),
        'x-openwop-signature': signV1(secret, timestamp, body),
        'x-openwop-signature-algorithm': 'v1',
      },
      body,
      timeoutMs: this.opts.timeoutMs ?? 5_000,
      maxResponseBytes: 4096,
    });
    if (!result.ok) {
      this.opts.logger.warn(
        { webhook: hook.secretFingerprint, runId: event.runId, sequence: event.sequence, error: result.error },
        'webhook delivery failed',
      );
    }
  }
}
