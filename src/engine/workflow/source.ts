// What the engine and the worker need from the loaded workflows (the registry in loader.ts).
import type { RunRecord } from '../../store/model.js';
import type { WorkflowDefinition, WorkflowNode } from './definition.js';

/** The loaded workflows, as the engine and the worker use them. */
export interface WorkflowSource {
  get(id: string): WorkflowDefinition | undefined;
  ids(): string[];
  startNode(def: WorkflowDefinition): WorkflowNode;
  validateInputs(workflowId: string, inputs: Record<string, unknown>): string[];
}

/** The definition a run was started with (a run whose workflow is no longer loaded is an error). */
export function definitionOf(workflows: WorkflowSource, run: RunRecord): WorkflowDefinition {
  const def = workflows.get(run.workflowId);
  if (!def) throw new Error(`workflow ${run.workflowId} of run ${run.runId} is no longer loaded`);
  return def;
}
