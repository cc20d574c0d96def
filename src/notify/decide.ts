// Deciding from the message: a decision link's token is checked (signature, then its hash in the
// store), then the decision goes through the engine's own resolve, as the REST route's does,
// decided by the link's recipient (so `approversList` applies), with the link spent in that same
// transaction: of two uses, exactly one commits. GET shows the gate and changes nothing.
import type { Clock } from '../engine/clock.js';
import type { InterruptTokens } from '../engine/interrupt-tokens.js';
import { artifactHash } from '../engine/audit.js';
import type { Engine } from '../engine/engine.js';
import { EngineError } from '../engine/errors.js';
import type { InterruptRecord, NewEvent } from '../store/model.js';
import type { DecisionLinkRecord } from '../store/repos/decision-links.js';
import type { Store } from '../store/store.js';
import type { LinkSigner } from './links.js';

/** 404 (unknown or tampered: told apart by nobody), 409 (used, or the gate was decided), 410 (expired). */
export class LinkRefused extends Error {
  override readonly name = 'LinkRefused';
  constructor(
    readonly status: 404 | 409 | 410,
    readonly code: 'link_not_found' | 'link_used' | 'link_expired' | 'interrupt_gone',
    message: string,
  ) {
    super(message);
  }
}

const NOT_FOUND = () => new LinkRefused(404, 'link_not_found', 'no such decision link');
const USED = () => new LinkRefused(409, 'link_used', 'this decision link was used, or the gate was decided already');

/** What a link's GET shows: the gate as its recipient may decide it. */
export interface LinkView {
  runId: string;
  nodeId: string;
  interruptId: string;
  /** Decision links are made for gates only (never an external-event wait). */
  kind: 'approval' | 'clarification';
  title: string;
  recipient: string;
  artifact?: unknown;
  questions?: unknown;
  actions: string[];
  /** The hash of what is decided on (`artifactHash`): a decision may send it back to bind to it. */
  artifactHash: string;
  expiresAt: string;
  deadline?: string;
  workflowId: string;
}

export class DecisionLinkService {
  constructor(
    private readonly store: Store,
    private readonly engine: Engine,
    private readonly signer: LinkSigner,
    private readonly clock: Clock,
    /** The signed callback tokens of external-event waits, answered by the same route. */
    private readonly interruptTokens?: InterruptTokens,
  ) {}

  /**
   * Resolve the external-event wait a signed callback token names (OpenWOP's signed-token
   * callback): only the wait of that execution (its correlation id), while it is open. A forged
   * or malformed token is undefined (the caller then tries it as a decision link).
   */
  async resolveByInterruptToken(token: string, resumeValue: unknown) {
    const ref = this.interruptTokens?.verify(token);
    if (!ref) return undefined;
    const run = await this.store.runs.get(ref.runId);
    const open = run && (await this.store.interrupts.getOpen(ref.runId, ref.nodeId));
    if (!run || !open || open.kind !== 'external-event' || open.data.correlationId !== ref.correlationId) {
      throw new LinkRefused(410, 'interrupt_gone', 'the wait this token names has ended');
    }
    const caller = { tenantId: run.tenantId, principalId: `token:${ref.nodeId}` };
    try {
      return await this.engine.resolveInterrupt(caller, ref.runId, ref.nodeId, resumeValue, { surface: 'link' });
    } catch (err) {
      if (err instanceof EngineError && GATE_GONE.has(err.code)) {
        throw new LinkRefused(410, 'interrupt_gone', 'the wait this token names has ended');
      }
      throw err;
    }
  }

  /**
   * Refuses (404, as an unknown link) a token this host did not issue: one is a signed callback
   * token that verifies, or a decision link on record (used or expired ones too: those have their
   * own answers, 409 and 410).
   */
  async checkIssued(token: string): Promise<void> {
    if (this.interruptTokens?.verify(token)) return;
    if ((await this.linkOf(token)) === undefined) throw NOT_FOUND();
  }

  /** The link on record under `token`, if its signature holds (a tampered token reads nothing). */
  private async linkOf(token: string): Promise<DecisionLinkRecord | undefined> {
    const hash = this.signer.check(token);
    return hash === undefined ? undefined : await this.store.decisionLinks.get(hash);
  }

  /** The gate the token decides, if the token may still decide it; throws LinkRefused. */
  async inspect(token: string): Promise<LinkView> {
    const { link, interrupt, workflowId } = await this.usable(token);
    if (interrupt.kind === 'external-event') throw NOT_FOUND();
    const d = interrupt.data;
    return {
      runId: link.runId,
      nodeId: link.nodeId,
      interruptId: link.interruptId,
      kind: interrupt.kind,
      title: typeof d.title === 'string' ? d.title : interrupt.kind === 'approval' ? 'Approval' : 'Questions',
      recipient: link.recipient,
      ...(interrupt.kind === 'approval' ? { artifact: d.artifact ?? null } : { questions: d.questions }),
      actions: interrupt.kind === 'approval' ? ((d.actions as string[] | undefined) ?? []) : ['answer'],
      artifactHash: artifactHash(interrupt),
      expiresAt: new Date(link.expiresAt).toISOString(),
      ...(typeof d.expiresAt === 'string' ? { deadline: d.expiresAt } : {}),
      workflowId,
    };
  }

  /** Decide the gate with `resumeValue` as the link's recipient; the link is spent when it commits. */
  async decide(token: string, resumeValue: unknown, expectedArtifactHash?: string) {
    const { link } = await this.usable(token);
    const caller = { tenantId: link.tenantId, principalId: link.recipient };
    const used: NewEvent = {
      type: 'decision-link.used',
      nodeId: link.nodeId,
      payload: { interruptId: link.interruptId, recipient: link.recipient },
    };
    try {
      return await this.engine.resolveInterrupt(caller, link.runId, link.nodeId, asRecipient(resumeValue), {
        surface: 'link',
        events: [used],
        ...(expectedArtifactHash ? { expectedArtifactHash } : {}),
        onAccepted: async (tx) => {
          // The gate this link was made for, still open (not a later one at the same node), and the link unspent.
          const open = await tx.interrupts.getOpen(link.runId, link.nodeId);
          if (open?.interruptId !== link.interruptId || !(await tx.decisionLinks.use(link.tokenHash))) throw USED();
        },
      });
    } catch (err) {
      if (err instanceof EngineError && GATE_GONE.has(err.code)) throw USED();
      throw err;
    }
  }

  private async usable(
    token: string,
  ): Promise<{ link: DecisionLinkRecord; interrupt: InterruptRecord; workflowId: string }> {
    const link = await this.linkOf(token);
    if (!link) throw NOT_FOUND();
    if (link.usedAt) throw USED();
    if (link.expiresAt <= this.clock.now())
      throw new LinkRefused(410, 'link_expired', 'this decision link has expired');
    const run = await this.store.runs.get(link.runId);
    const interrupt =
      run && (await this.store.interrupts.listByRun(link.runId)).find((i) => i.interruptId === link.interruptId);
    if (!run || !interrupt) throw NOT_FOUND();
    if (interrupt.status !== 'open') throw USED();
    return { link, interrupt, workflowId: run.workflowId };
  }
}

/** The gate was decided, withdrawn or cancelled meanwhile: the link cannot decide any more. */
const GATE_GONE = new Set([
  'interrupt_already_resolved',
  'interrupt_cancelled',
  'interrupt_withdrawn',
  'interrupt_not_found',
  'run_terminal',
]);

/**
 * A link votes as its recipient: a `voter` it names is dropped, so a link cannot cast a vote for
 * someone else even on a gate that counts declared voters (voterIdentity "declared").
 */
function asRecipient(resumeValue: unknown): unknown {
  if (!resumeValue || typeof resumeValue !== 'object' || Array.isArray(resumeValue) || !('voter' in resumeValue)) {
    return resumeValue;
  }
  const { voter: _named, ...own } = resumeValue as Record<string, unknown>;
  return own;
}
