// The human-in-the-loop gates. Executing a gate only opens an interrupt; the decision arrives
// later through Engine.resolveInterrupt, which checks approvers and quorum before the run moves.
import { renderTemplate } from '../workflow/evaluate.js';
import type { NodeExecutor } from './types.js';

export const APPROVAL_ACTIONS = ['accept', 'reject', 'refine', 'edit-accept', 'ask'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** `edit` is the interrupt-schema spelling of the `edit-accept` resume action. */
export const normalizeAction = (a: string): string => (a === 'edit' ? 'edit-accept' : a);

export const approvalGate: NodeExecutor = {
  inline: true,
  typeId: 'core.approvalGate',
  async execute(ctx) {
    const c = ctx.node.config as {
      title: string;
      description?: string;
      artifact?: unknown;
      artifactFrom?: string;
      actions?: string[];
      requiredApprovals?: number;
      approversList?: string[];
      rejectionPolicy?: string;
    };
    const artifact =
      c.artifact !== undefined
        ? await renderTemplate(c.artifact, ctx.scope)
        : c.artifactFrom !== undefined
          ? (ctx.scope.nodes[c.artifactFrom] ?? null)
          : null;
    const actions = [...new Set((c.actions ?? [...APPROVAL_ACTIONS]).map(normalizeAction))];
    return {
      kind: 'interrupt',
      interrupt: {
        kind: 'approval',
        data: {
          title: c.title,
          ...(c.description !== undefined ? { description: c.description } : {}),
          artifactId: ctx.node.id,
          artifact,
          actions,
          requiredApprovals: c.requiredApprovals ?? 1,
          ...(c.approversList ? { approversList: c.approversList } : {}),
          rejectionPolicy: c.rejectionPolicy ?? 'single-veto',
          ...(c.artifactFrom !== undefined ? { artifactFrom: c.artifactFrom } : {}),
        },
      },
    };
  },
};

export const clarificationGate: NodeExecutor = {
  inline: true,
  typeId: 'core.clarificationGate',
  async execute(ctx) {
    const c = ctx.node.config as { questions: Array<{ id: string; question: string }>; title?: string };
    return {
      kind: 'interrupt',
      interrupt: {
        kind: 'clarification',
        data: { questions: c.questions, ...(c.title !== undefined ? { title: c.title } : {}) },
      },
    };
  },
};
