// The OpenWOP WorkflowDefinition shape (docs/protocol/openwop.md#workflow-definition), the subset this host executes.

export type PortValue =
  | { type: 'static'; value: unknown }
  | { type: 'expression'; expression: string }
  | { type: 'connection'; nodeId: string; outputKey?: string; optional?: boolean }
  | { type: 'variable'; variableName: string; optional?: boolean };

export interface WorkflowNode {
  id: string;
  typeId: string;
  name: string;
  position: { x: number; y: number };
  config: Record<string, unknown>;
  inputs: Record<string, PortValue>;
  disabled?: boolean;
  /** `artifact`: the node's output is published as a run artifact (an A2A Artifact). */
  outputRole?: string;
}

export type EdgeConditionType = 'expression' | 'equals' | 'notEquals' | 'contains' | 'regex' | 'truthy' | 'falsy';

export interface EdgeCondition {
  type: EdgeConditionType;
  left?: string;
  right?: unknown;
  expression?: string;
}

export interface WorkflowEdge {
  id: string;
  sourceNodeId: string;
  targetNodeId: string;
  condition?: EdgeCondition;
  label?: string;
  /** `all_success` (default): taken when the source completed; `any_failed`: when it failed. */
  triggerRule?: 'all_success' | 'any_failed';
}

export interface WorkflowVariable {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'object' | 'array';
  required?: boolean;
  defaultValue?: unknown;
  sensitive?: boolean;
  description?: string;
}

export interface WorkflowDefinition {
  id: string;
  name: string;
  version: string;
  description?: string;
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
  triggers: Array<{ id: string; type: string; enabled?: boolean; config?: Record<string, unknown> }>;
  variables: WorkflowVariable[];
  metadata: Record<string, unknown>;
  settings: Record<string, unknown>;
  /** Host extension: JSON Schema (2020-12) the run `inputs` must satisfy. */
  inputSchema?: Record<string, unknown>;
  /** Host extension: expose this workflow as an A2A skill (default true). */
  public?: boolean;
}
