// JSON Schemas (2020-12) for each built-in node type's `config`: the contract between workflow
// authors (checked at load time by the loader) and the executors (which may then trust the shape).
// String values anywhere in a config may carry `{{ expr }}` templates; the loader checks that
// they compile, the executors decide which fields they render.

export type ApprovalAction = 'accept' | 'reject' | 'refine' | 'edit-accept' | 'ask';

/** The five actions a gate offers when `actions` is absent. */
export const DEFAULT_APPROVAL_ACTIONS: readonly ApprovalAction[] = ['accept', 'reject', 'refine', 'edit-accept', 'ask'];

export interface TransformConfig {
  /** Template rendered into the node's output (absent: output is null). */
  output?: unknown;
  /** Variable name → template; the rendered values are merged into `scope.vars`. */
  set?: Record<string, unknown>;
}

export interface DelayConfig {
  /** Milliseconds, or a template rendering to a non-negative integer. */
  ms: number | string;
}

export interface ApprovalGateConfig {
  title: string;
  description?: string;
  /** Template of the data to approve; default: output of `artifactFrom`. */
  artifact?: unknown;
  /** Node id of the producer; `refine` re-runs it. */
  artifactFrom?: string;
  /** Default: DEFAULT_APPROVAL_ACTIONS. `edit` is an alias of `edit-accept`. */
  actions?: Array<ApprovalAction | 'edit'>;
  /** Default 1. */
  requiredApprovals?: number;
  /** Principal ids allowed to decide; absent = anyone. */
  approversList?: string[];
  rejectionPolicy?: 'single-veto';
  timeoutMs?: number;
}

export interface ClarificationQuestion {
  id: string;
  question: string;
  /** JSON Schema the answer must satisfy. */
  schema?: Record<string, unknown>;
}

export interface ClarificationGateConfig {
  questions: ClarificationQuestion[];
  title?: string;
}

export interface FailConfig {
  code: string;
  message: string;
}

const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
// Names end up in JSONata paths (`vars.i`, `nodes.ask.answers.name`), so keep them plain.
const NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

const transform = {
  $schema: SCHEMA_DIALECT,
  type: 'object',
  properties: {
    output: true,
    set: { type: 'object', propertyNames: { pattern: NAME_PATTERN } },
  },
  additionalProperties: false,
};

const delay = {
  $schema: SCHEMA_DIALECT,
  type: 'object',
  required: ['ms'],
  properties: {
    // One union type (not oneOf) so a wrong value yields one readable error.
    ms: { type: ['integer', 'string'], minimum: 0, minLength: 1 },
  },
  additionalProperties: false,
};

const approvalGate = {
  $schema: SCHEMA_DIALECT,
  type: 'object',
  required: ['title'],
  properties: {
    title: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    artifact: true,
    artifactFrom: { type: 'string', minLength: 1 },
    actions: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { enum: ['accept', 'reject', 'refine', 'edit', 'edit-accept', 'ask'] },
    },
    requiredApprovals: { type: 'integer', minimum: 1 },
    // An empty list would let nobody decide; absence means anyone may.
    approversList: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
    rejectionPolicy: { enum: ['single-veto'] },
    timeoutMs: { type: 'integer', minimum: 0 },
  },
  additionalProperties: false,
};

const clarificationGate = {
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
  },
  additionalProperties: false,
};

const fail = {
  $schema: SCHEMA_DIALECT,
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', minLength: 1 },
    message: { type: 'string' },
  },
  additionalProperties: false,
};

export const NODE_CONFIG_SCHEMAS: Record<string, object> = {
  'core.transform': transform,
  'core.delay': delay,
  'core.approvalGate': approvalGate,
  'core.clarificationGate': clarificationGate,
  'core.fail': fail,
};

export const KNOWN_NODE_TYPES: readonly string[] = Object.keys(NODE_CONFIG_SCHEMAS);
