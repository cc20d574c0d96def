// The notifier, assembled from the Config: its pipeline step (outbox rows written with the gate),
// its worker (sends them), the decision links, and the load-time check that every channel a
// workflow names is configured on this host.
import { join } from 'node:path';
import type { InterruptTokens } from '../engine/interrupt-tokens.js';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { Agent } from 'undici';
import { type Config, PUSH_ATTEMPT_TIMEOUT_MS } from '../config.js';
import type { Clock } from '../engine/clock.js';
import type { Engine } from '../engine/engine.js';
import type { NotifyConfig } from '../engine/nodes/notify-config.js';
import { WorkflowValidationError } from '../engine/workflow/loader.js';
import type { WorkflowDefinition } from '../engine/workflow/definition.js';
import type { WorkflowSource } from '../engine/workflow/source.js';
import { parseSchedule } from '../push/schedule.js';
import type { Vault } from '../push/vault.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/store.js';
import type { Channels } from './channels.js';
import { DecisionLinkService } from './decide.js';
import { LinkSigner, loadLinkKey } from './links.js';
import { Directory, notifyOutbox } from './outbox.js';
import { NotifyWorker } from './worker.js';

const GATES = new Set(['core.approvalGate', 'core.clarificationGate']);

/**
 * What a workflow's notify entries need that this host lacks, one sentence each: an e-mail notify
 * without HANDOFF_SMTP_URL, a webhook notify without HANDOFF_WEBHOOK_SECRET.
 */
export function channelProblems(def: WorkflowDefinition, notify: Config['notify']): string[] {
  const problems: string[] = [];
  for (const node of def.nodes) {
    if (!GATES.has(node.typeId)) continue;
    (node.config as NotifyConfig).notify?.forEach((entry, i) => {
      const at = `node "${node.id}": config.notify[${i}]`;
      if (entry.channel === 'email' && !notify.smtpUrl) {
        problems.push(`${at} sends e-mail, but HANDOFF_SMTP_URL is not set (the SMTP server to send it through)`);
      }
      if (entry.channel === 'webhook' && !notify.webhookSecret) {
        problems.push(`${at} is a webhook, but HANDOFF_WEBHOOK_SECRET is not set (the key its signature needs)`);
      }
    });
  }
  return problems;
}

/** Refuse to start with a workflow whose notify entries this host cannot send. */
export function checkChannels(workflows: { list(): WorkflowDefinition[] }, notify: Config['notify']): void {
  for (const def of workflows.list()) {
    const problems = channelProblems(def, notify);
    if (problems.length > 0) throw new WorkflowValidationError(`workflow ${def.id}`, problems);
  }
}

/** The secret holding the SMTP password when HANDOFF_SMTP_URL names a user without one. */
const SMTP_PASSWORD = 'SMTP_PASSWORD';

/**
 * HANDOFF_SMTP_URL, with the password of a user it names but gives none of taken from the secret
 * SMTP_PASSWORD (HANDOFF_SECRET_SMTP_PASSWORD or HANDOFF_SECRETS_FILE), so the URL need hold none.
 */
function smtpUrl(config: Config): string {
  const url = new URL(config.notify.smtpUrl as string);
  if (url.username && !url.password && config.secrets.has(SMTP_PASSWORD)) {
    url.password = config.secrets.get(SMTP_PASSWORD);
  }
  return url.toString();
}

export interface NotifierParts {
  store: Store;
  workflows: WorkflowSource;
  vault: Vault;
  /** The push egress guard's dispatcher: webhook and Slack URLs pass it as push URLs do. */
  dispatcher: Agent;
  logger: Logger;
  metrics: Metrics;
}

export function createNotifier(config: Config, parts: NotifierParts) {
  const signer = new LinkSigner(loadLinkKey(config.notify.linkSecret, join(config.dataDir, 'link.key')));
  const emails = new Map<string, string>();
  for (const id of config.apiKeys.values()) if (id.email) emails.set(id.principalId, id.email);
  // Pooled: a burst of gates reuses up to 4 connections rather than a handshake per message.
  const transport = config.notify.smtpUrl
    ? nodemailer.createTransport({ url: smtpUrl(config), pool: true, maxConnections: 4 })
    : undefined;
  const channels: Channels = {
    ...(transport ? { mail: { transport, from: config.notify.smtpFrom } } : {}),
    ...(config.notify.webhookSecret ? { webhook: new Webhook(config.notify.webhookSecret) } : {}),
    dispatcher: parts.dispatcher,
    timeoutMs: PUSH_ATTEMPT_TIMEOUT_MS,
  };
  let baseUrl = config.publicUrl ?? `http://${config.host}:${config.port}`;
  const worker = new NotifyWorker(parts.store, {
    instanceId: config.instanceId,
    logger: parts.logger,
    metrics: parts.metrics,
    channels,
    vault: parts.vault,
    workflows: parts.workflows,
    baseUrl: () => baseUrl,
    schedule: parseSchedule(config.push.retrySchedule),
    leaseMs: config.push.leaseMs,
    redact: config.secrets.redactor.text,
  });
  const outbox = notifyOutbox({
    workflows: parts.workflows,
    signer,
    vault: parts.vault,
    directory: new Directory(emails),
    wake: () => worker.kick(),
  });
  return {
    outbox,
    worker,
    /** The decision links' service, once the engine exists. */
    links: (engine: Engine, clock: Clock, interruptTokens?: InterruptTokens) =>
      new DecisionLinkService(parts.store, engine, signer, clock, interruptTokens),
    /** Without HANDOFF_PUBLIC_URL, links point at the address the host listens on. */
    listening(address: string) {
      if (!config.publicUrl) baseUrl = address;
    },
    async close() {
      await worker.stop();
      transport?.close();
    },
  };
}
