// Sending one notification, by channel: e-mail through the operator's SMTP server (nodemailer),
// a webhook signed as Standard Webhooks specifies, a Slack incoming-webhook message. Webhooks and
// Slack go through the egress guard's dispatcher, as push deliveries do (src/push/deliver.ts).
// Each send answers whether it went out, and if not whether trying again can help.
import type { Transporter } from 'nodemailer';
import type { Webhook } from 'standardwebhooks';
import type { Agent } from 'undici';
import { deliver } from '../push/deliver.js';
import { failSpanWith, inSpan, SpanKind, tracingEnabled } from '../telemetry/tracing.js';
import { htmlOf, type Message, slackBodyOf, summaryOf, textOf, webhookBodyOf } from './message.js';

export interface SendResult {
  ok: boolean;
  /** Trying again cannot help: dead-letter now. */
  permanent: boolean;
  retryAfterMs?: number;
  error?: string;
}

export interface Channels {
  mail?: { transport: Transporter; from: string };
  /** Standard Webhooks signer (HANDOFF_WEBHOOK_SECRET). */
  webhook?: Webhook;
  dispatcher: Agent;
  timeoutMs: number;
}

export function sendEmail(c: Channels, to: string, m: Message): Promise<SendResult> {
  if (!tracingEnabled()) return mail(c, to, m);
  // A client span per message (webhooks and Slack get theirs from the POST, src/push/deliver.ts).
  return inSpan(
    'smtp send',
    { kind: SpanKind.CLIENT, attributes: { 'handoff.notification.channel': 'email' } },
    async (span) => {
      const r = await mail(c, to, m);
      if (!r.ok) failSpanWith(span, r.permanent ? 'refused' : 'failed', r.error);
      return r;
    },
  );
}

async function mail(c: Channels, to: string, m: Message): Promise<SendResult> {
  if (!c.mail) return { ok: false, permanent: true, error: 'HANDOFF_SMTP_URL is not set' };
  try {
    await c.mail.transport.sendMail({
      from: c.mail.from,
      to,
      subject: summaryOf(m).slice(0, 200),
      text: textOf(m),
      html: htmlOf(m),
    });
    return { ok: true, permanent: false };
  } catch (err) {
    const e = err as { responseCode?: number; message?: string };
    // A 5xx reply refuses the message itself (an unknown mailbox); anything else may pass later.
    const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500;
    return { ok: false, permanent, error: `smtp: ${e.message ?? String(err)}` };
  }
}

/** A signed POST: `webhook-id` (the notification's id, the same on every retry), `webhook-timestamp`, `webhook-signature`. */
export async function sendWebhook(c: Channels, url: string, id: string, m: Message): Promise<SendResult> {
  if (!c.webhook) return { ok: false, permanent: true, error: 'HANDOFF_WEBHOOK_SECRET is not set' };
  const at = new Date();
  const body = webhookBodyOf(m, at);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'handoff-notify/0.1',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': c.webhook.sign(id, at, body),
  };
  return post(c, url, headers, body);
}

export function sendSlack(c: Channels, url: string, m: Message): Promise<SendResult> {
  const headers = { 'content-type': 'application/json', 'user-agent': 'handoff-notify/0.1' };
  return post(c, url, headers, slackBodyOf(m));
}

async function post(c: Channels, url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
  const r = await deliver(c.dispatcher, url, { headers, body, timeoutMs: c.timeoutMs, maxResponseBytes: 64 * 1024 });
  if (r.ok) return { ok: true, permanent: false };
  return {
    ok: false,
    permanent: r.permanent,
    ...(r.retryAfterMs !== undefined ? { retryAfterMs: r.retryAfterMs } : {}),
    error: `${r.error ?? 'failed'}${r.status ? ` ${r.status}` : ''}${r.detail ? `: ${r.detail}` : ''}`,
  };
}
