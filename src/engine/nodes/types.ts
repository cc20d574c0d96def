// The contract between the engine and a node type. An executor is a pure step: it reads the
// node, its config and the run scope, and says what happened. The engine alone commits.
import type { InterruptKind, RunError } from '../../store/model.js';
import type { WorkflowNode } from '../workflow/definition.js';

/** What templates and conditions see (spec: `{{ inputs.prompt }}`, `vars.i < inputs.steps`). */
export interface EvalScope {
  inputs: Record<string, unknown>;
  vars: Record<string, unknown>;
  /** Outputs of completed nodes, by node id (latest completion). */
  nodes: Record<string, unknown>;
  /** Data handed to this execution (e.g. refine feedback for a producer node). */
  carry: Record<string, unknown>;
  run: { runId: string; workflowId: string };
}

export interface NodeContext {
  runId: string;
  workflowId: string;
  node: WorkflowNode;
  /** How many times this node has completed before in this run (loops, refine). */
  ordinal: number;
  scope: EvalScope;
  now: number;
  /** Set when this execution already started a durable timer: the epoch ms it wakes at. */
  wakeAt?: number;
  /** Stable across a crash-retry of the same execution: run, node and ordinal. */
  idempotencyKey: string;
}

export type NodeResult =
  | { kind: 'completed'; output: unknown; vars?: Record<string, unknown> }
  | { kind: 'sleep'; wakeAt: number }
  | { kind: 'interrupt'; interrupt: { kind: InterruptKind; data: Record<string, unknown> } }
  | { kind: 'failed'; error: RunError };

export interface NodeExecutor {
  readonly typeId: string;
  /** Fast and free of external I/O: may run inside the transaction of the request that
   * started or resumed the run. Executors that call out must leave this false. */
  readonly inline?: boolean;
  execute(ctx: NodeContext): Promise<NodeResult>;
}
