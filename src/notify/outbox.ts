// The notifier's pipeline step: when a gate opens or escalates, write who is to be told — one
// outbox row per recipient (and a reminder row before the deadline), each with its one-time
// decision link — in the very transaction that opened it. Nothing is sent here (no I/O in a
// transaction): the worker (worker.ts) sends after the commit, so a crash in between sends once,
// after the restart.
import type { NotifyConfig, NotifyEntry } from '../engine/nodes/notify-config.js';
import { APPROVERS } from '../engine/nodes/notify-config.js';
import type { WorkflowSource } from '../engine/workflow/source.js';
import type { Vault } from '../push/vault.js';
import type { RunEvent } from '../store/model.js';
import type { NewNotification } from '../store/repos/notifications.js';
import type { CommitListener, RunChange, StoreTx, TransitionStep } from '../store/store.js';
import { LINK_DEFAULT_TTL_MS, type LinkSigner } from './links.js';

export interface NotifyOutboxDeps {
  workflows: WorkflowSource;
  signer: LinkSigner;
  /** Seals each link's token in its outbox row until the message is sent. */
  vault: Vault;
  /** Principal id → e-mail (HANDOFF_API_KEYS), both ways. */
  directory: Directory;
  wake: () => void;
}

/** Who has which e-mail address (HANDOFF_API_KEYS `email`). */
export class Directory {
  private readonly byAddress = new Map<string, string>();
  constructor(private readonly byPrincipal: ReadonlyMap<string, string>) {
    for (const [principal, email] of byPrincipal) this.byAddress.set(email.toLowerCase(), principal);
  }
  emailOf(principalId: string): string | undefined {
    return this.byPrincipal.get(principalId);
  }
  /** The principal an address belongs to, or the address itself. */
  recipientOf(address: string): string {
    return this.byAddress.get(address.toLowerCase()) ?? address;
  }
}

/** A gate that opened or escalated in a change: what the notifications need from its events. */
interface Occasion {
  reason: 'opened' | 'escalated';
  nodeId: string;
  interruptId: string;
  approvers?: string[];
  /**
   * The gate names approver groups or roles (RFC 0104): a link decides as its recipient, with no
   * groups or roles, so only a recipient `approvers` names may get one.
   */
  routed?: boolean;
  expiresAt?: number;
}

export function notifyOutbox(deps: NotifyOutboxDeps): { step: TransitionStep; listener: CommitListener } {
  const enqueued = new WeakSet<RunChange>();
  return {
    step: {
      name: 'notify-outbox',
      async run(tx, change) {
        if (await enqueue(tx, change, deps)) enqueued.add(change);
      },
    },
    listener: {
      name: 'notify-worker-wake',
      committed(changes) {
        if (changes.some((c) => enqueued.has(c))) deps.wake();
      },
    },
  };
}

function occasionOf(e: RunEvent): Occasion | undefined {
  const p = e.payload as Record<string, unknown>;
  if (e.nodeId === undefined || typeof p.interruptId !== 'string') return undefined;
  const expiresAt = typeof p.expiresAt === 'string' ? Date.parse(p.expiresAt) : undefined;
  const base = { nodeId: e.nodeId, interruptId: p.interruptId, ...(expiresAt ? { expiresAt } : {}) };
  if (e.type === 'approval.requested' || e.type === 'clarification.requested') {
    const routed = [p.approverGroupRefs, p.approverRoleRefs].some((r) => Array.isArray(r) && r.length > 0);
    return {
      reason: 'opened',
      ...base,
      ...(Array.isArray(p.approversList) ? { approvers: p.approversList } : {}),
      ...(routed ? { routed } : {}),
    };
  }
  if (e.type === 'interrupt.escalated' && Array.isArray(p.escalateTo)) {
    return { reason: 'escalated', ...base, approvers: p.escalateTo as string[] };
  }
  return undefined;
}

async function enqueue(tx: StoreTx, change: RunChange, deps: NotifyOutboxDeps): Promise<boolean> {
  let wrote = false;
  for (const e of change.events) {
    const occasion = occasionOf(e);
    if (!occasion) continue;
    const def = deps.workflows.get(change.run.workflowId);
    const node = def?.nodes.find((n) => n.id === occasion.nodeId);
    const config = node?.config as NotifyConfig | undefined;
    if (!config?.notify) continue;
    const now = Date.parse(change.run.updatedAt);
    const { rows, links } = plan(change.run.tenantId, change.run.runId, occasion, config, deps, now);
    await tx.decisionLinks.insert(links);
    await tx.notifications.enqueue(rows);
    wrote ||= rows.length > 0;
  }
  return wrote;
}

/** A message's destination and who its link decides as. */
interface Target {
  channel: NotifyEntry['channel'];
  target: string;
  recipient: string;
  remindBeforeMs?: number;
}

/** Every destination of the gate's notify entries, once each. */
function targetsOf(config: NotifyConfig, occasion: Occasion, directory: Directory): Target[] {
  const seen = new Set<string>();
  const out: Target[] = [];
  for (const entry of config.notify ?? []) {
    const remind = entry.remindBeforeMs ?? config.remindBeforeMs;
    const extra = remind !== undefined ? { remindBeforeMs: remind } : {};
    const add = (t: Target) => {
      const key = `${t.channel} ${t.target.toLowerCase()}`;
      if (seen.has(key)) return;
      seen.add(key);
      out.push({ ...t, ...extra });
    };
    if (entry.channel !== 'email') {
      // Whoever reads the channel decides as it: `slack:hooks.slack.com`.
      add({ channel: entry.channel, target: entry.url, recipient: `${entry.channel}:${new URL(entry.url).host}` });
      continue;
    }
    for (const to of entry.to) {
      if (to !== APPROVERS) {
        add({ channel: 'email', target: to, recipient: directory.recipientOf(to) });
        continue;
      }
      for (const principal of occasion.approvers ?? []) {
        const email = directory.emailOf(principal);
        if (email) add({ channel: 'email', target: email, recipient: principal });
      }
    }
  }
  return out;
}

function plan(
  tenantId: string,
  runId: string,
  occasion: Occasion,
  config: NotifyConfig,
  deps: NotifyOutboxDeps,
  now: number,
) {
  const rows: NewNotification[] = [];
  const links: Parameters<StoreTx['decisionLinks']['insert']>[0] = [];
  const expiresAt = occasion.expiresAt ?? now + LINK_DEFAULT_TTL_MS;
  for (const t of targetsOf(config, occasion, deps.directory)) {
    // A link decides as its recipient: only one the gate lets decide gets one.
    const mayDecide = occasion.approvers ? occasion.approvers.includes(t.recipient) : !occasion.routed;
    const link = mayDecide ? deps.signer.mint() : undefined;
    if (link) {
      links.push({
        tokenHash: link.hash,
        tenantId,
        runId,
        interruptId: occasion.interruptId,
        nodeId: occasion.nodeId,
        recipient: t.recipient,
        expiresAt,
      });
    }
    const base = {
      tenantId,
      runId,
      interruptId: occasion.interruptId,
      nodeId: occasion.nodeId,
      channel: t.channel,
      target: t.target,
      recipient: t.recipient,
      ...(link ? { sealedToken: deps.vault.seal(link.token), linkExpiresAt: expiresAt } : {}),
    };
    rows.push({ ...base, reason: occasion.reason });
    const remindAt =
      t.remindBeforeMs !== undefined && occasion.expiresAt ? occasion.expiresAt - t.remindBeforeMs : undefined;
    if (remindAt !== undefined && remindAt > now) rows.push({ ...base, reason: 'reminder', dueAt: remindAt });
  }
  return { rows, links };
}
