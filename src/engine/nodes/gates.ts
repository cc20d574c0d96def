// The human-in-the-loop gates. Executing a gate only opens an interrupt; the decision arrives
// later through Engine.resolveInterrupt, which checks approvers and quorum before the run moves.
import { renderTemplate } from '../workflow/evaluate.js';
import {
  APPROVAL_ACTION_NAMES,
  type ApprovalAction,
  APPROVAL_ACTIONS,
  normalizeApprovalAction,
} from '../vocabulary.js';
import { type DeadlineConfig, deadlineProblems, DEADLINE_PROPERTIES, openDeadline } from '../deadlines.js';
import type { InterruptKind } from '../../store/model.js';
import { NOTIFY_PROPERTIES, type NotifyConfig, notifyProblems } from './notify-config.js';
import { duplicates, NAME_PATTERN, type NodeResult, type NodeType, SCHEMA_DIALECT } from './types.js';

interface ApprovalGateConfig extends DeadlineConfig, NotifyConfig {
  title: string;
  description?: string;
  /** Template of the data to approve; default: output of `artifactFrom`. */
  artifact?: unknown;
  /** Node id of the producer; `refine` re-runs it. */
  artifactFrom?: string;
  /** Default: all five actions. `edit` is an alias of `edit-accept`. */
  actions?: string[];
  /** Default 1. */
  requiredApprovals?: number;
  /** Principal ids allowed to decide; absent or empty (with no group or role refs) = anyone. */
  approversList?: string[];
  /** Approver groups whose members may decide (the caller's credential names its groups; RFC 0104). */
  approverGroupRefs?: string[];
  /** Approver roles whose holders may decide (the caller's credential names its roles; RFC 0104). */
  approverRoleRefs?: string[];
  /** `single-veto` (default): one reject ends the gate; `majority`: rejects of more than half of `requiredApprovals` do. */
  rejectionPolicy?: 'single-veto' | 'majority';
  /**
   * Who a vote counts for. `principal` (default): the authenticated caller, whatever the resume
   * value says. `declared`: the `voter` the resume value names (the caller when it names none), for
   * a gate whose votes are relayed by a trusted caller — a chat bot, a ticketing system — under one
   * credential (docs/workflows.md#quorum).
   */
  voterIdentity?: 'principal' | 'declared';
  /**
   * With `declared`: the principals trusted to cast votes for others. Required when the gate names
   * its approvers; absent on an open gate, anyone who may decide may relay.
   */
  relayers?: string[];
}

export const approvalGate: NodeType<ApprovalGateConfig> = {
  typeId: 'core.approvalGate',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['title'],
    properties: {
      title: { type: 'string', minLength: 1 },
      description: { type: 'string' },
      artifact: true,
      artifactFrom: { type: 'string', minLength: 1 },
      actions: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: APPROVAL_ACTION_NAMES } },
      requiredApprovals: { type: 'integer', minimum: 1 },
      // Absent or empty, anyone may decide (the canonical quorum fixture writes `[]` for an open gate).
      approversList: { type: 'array', uniqueItems: true, items: { type: 'string', minLength: 1 } },
      // Opaque refs matched against the groups / roles of the caller's credential (docs/workflows.md#quorum).
      approverGroupRefs: { type: 'array', uniqueItems: true, items: { type: 'string', minLength: 1 } },
      approverRoleRefs: { type: 'array', uniqueItems: true, items: { type: 'string', minLength: 1 } },
      rejectionPolicy: { enum: ['single-veto', 'majority'] },
      voterIdentity: { enum: ['principal', 'declared'] },
      relayers: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
      ...DEADLINE_PROPERTIES,
      ...NOTIFY_PROPERTIES,
    },
    additionalProperties: false,
  },
  checkConfig(config, { nodeId, nodeIds }) {
    const problems = [...deadlineProblems(config), ...notifyProblems(config), ...voterProblems(config)];
    if (config.artifactFrom === undefined) return problems;
    if (config.artifactFrom === nodeId) return [...problems, 'config.artifactFrom cannot name the gate itself'];
    if (!nodeIds.has(config.artifactFrom)) {
      return [...problems, `config.artifactFrom "${config.artifactFrom}" is not a node`];
    }
    return problems;
  },
  async execute({ config: c, scope, node, now }) {
    const artifact =
      c.artifact !== undefined
        ? await renderTemplate(c.artifact, scope)
        : c.artifactFrom !== undefined
          ? (scope.nodes[c.artifactFrom] ?? null)
          : null;
    const actions: ApprovalAction[] = [
      ...new Set((c.actions ?? APPROVAL_ACTIONS).map((a) => normalizeApprovalAction(a) as ApprovalAction)),
    ];
    const data = {
      title: c.title,
      ...(c.description !== undefined ? { description: c.description } : {}),
      artifactId: node.id,
      artifact,
      actions,
      requiredApprovals: c.requiredApprovals ?? 1,
      ...(c.approversList?.length ? { approversList: c.approversList } : {}),
      ...(c.approverGroupRefs?.length ? { approverGroupRefs: c.approverGroupRefs } : {}),
      ...(c.approverRoleRefs?.length ? { approverRoleRefs: c.approverRoleRefs } : {}),
      rejectionPolicy: c.rejectionPolicy ?? 'single-veto',
      ...(c.voterIdentity === 'declared' ? { voterIdentity: 'declared' } : {}),
      ...(c.relayers ? { relayers: c.relayers } : {}),
      ...(c.artifactFrom !== undefined ? { artifactFrom: c.artifactFrom } : {}),
    };
    return withDeadline({ kind: 'approval', data }, c, now);
  },
};

/**
 * Declared voters (docs/workflows.md#quorum): a relayed vote names a voter with no credential of its
 * own, so group and role refs cannot admit it, and a gate that names its approvers must name who
 * may relay too — else anyone who may decide could cast the listed approvers' votes.
 */
function voterProblems(c: ApprovalGateConfig): string[] {
  if (c.voterIdentity !== 'declared') {
    return c.relayers ? ['config.relayers applies only with voterIdentity "declared"'] : [];
  }
  const problems: string[] = [];
  if (c.approverGroupRefs?.length || c.approverRoleRefs?.length) {
    problems.push(
      'voterIdentity "declared" cannot be combined with approverGroupRefs or approverRoleRefs: a declared voter has no credential to match them; name the voters in approversList',
    );
  }
  if (c.approversList?.length && !c.relayers) {
    problems.push(
      'voterIdentity "declared" on a gate with an approversList needs relayers: the principals trusted to cast votes for others',
    );
  }
  return problems;
}

interface ClarificationQuestion {
  id: string;
  question: string;
  /** JSON Schema the answer must satisfy. */
  schema?: Record<string, unknown>;
}

interface ClarificationGateConfig extends DeadlineConfig, NotifyConfig {
  questions: ClarificationQuestion[];
  title?: string;
}

export const clarificationGate: NodeType<ClarificationGateConfig> = {
  typeId: 'core.clarificationGate',
  inline: true,
  configSchema: {
    $schema: SCHEMA_DIALECT,
    type: 'object',
    required: ['questions'],
    properties: {
      title: { type: 'string' },
      questions: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['id', 'question'],
          properties: {
            id: { type: 'string', pattern: NAME_PATTERN },
            question: { type: 'string', minLength: 1 },
            schema: { type: 'object' },
          },
          additionalProperties: false,
        },
      },
      ...DEADLINE_PROPERTIES,
      ...NOTIFY_PROPERTIES,
    },
    additionalProperties: false,
  },
  checkConfig(config, { schemaProblems }) {
    return [
      ...deadlineProblems(config),
      ...notifyProblems(config),
      ...duplicates(config.questions.map((q) => q.id)).map((id) => `config.questions: duplicate question id "${id}"`),
      ...config.questions.flatMap((q, i) =>
        q.schema ? schemaProblems(q.schema, `config.questions[${i}].schema`) : [],
      ),
    ];
  },
  async execute({ config, now }) {
    const data = { questions: config.questions, ...(config.title !== undefined ? { title: config.title } : {}) };
    return withDeadline({ kind: 'clarification', data }, config, now);
  },
};

/** The interrupt result, with the gate's deadline in its data and as the run's timer. */
function withDeadline(
  interrupt: { kind: InterruptKind; data: Record<string, unknown> },
  config: DeadlineConfig,
  now: number,
): NodeResult {
  const deadline = openDeadline(config, now);
  if (!deadline) return { kind: 'interrupt', interrupt };
  return {
    kind: 'interrupt',
    interrupt: { kind: interrupt.kind, data: { ...interrupt.data, ...deadline.data } },
    expiresAt: deadline.expiresAt,
  };
}
