// What the loader checks across workflows for the nodes that start child runs (core.forEach,
// core.subWorkflow): the workflow each names is loaded, and no workflow can start itself again
// through them — such a cycle would nest child runs until HANDOFF_MAX_CHILD_DEPTH refused one.
import { CHILD_RUN_TYPES } from '../nodes/child-runs/index.js';
import type { WorkflowDefinition } from './definition.js';

/** The workflows child-run nodes of `def` name, with the node naming each. */
function childRefs(def: WorkflowDefinition): Array<{ nodeId: string; workflowId: string }> {
  return def.nodes
    .filter((n) => CHILD_RUN_TYPES.has(n.typeId) && typeof n.config.workflowId === 'string')
    .map((n) => ({ nodeId: n.id, workflowId: n.config.workflowId as string }));
}

/** Problems by workflow id (each naming its node), for the workflows that have any. */
export function childWorkflowProblems(defs: readonly WorkflowDefinition[]): Map<string, string[]> {
  const byId = new Map(defs.map((d) => [d.id, d]));
  const problems = new Map<string, string[]>();
  const add = (id: string, problem: string) => problems.set(id, [...(problems.get(id) ?? []), problem]);
  for (const def of defs) {
    for (const ref of childRefs(def)) {
      if (!byId.has(ref.workflowId)) {
        add(def.id, `node "${ref.nodeId}": config.workflowId "${ref.workflowId}" is not a loaded workflow`);
        continue;
      }
      const back = pathTo(def.id, ref.workflowId, byId);
      if (back) {
        add(
          def.id,
          `node "${ref.nodeId}": workflow "${def.id}" would start itself again: ${[def.id, ...back].join(' → ')}`,
        );
      }
    }
  }
  return problems;
}

/** The workflows from `from` to `target` through child-run nodes (both included), if any path. */
function pathTo(target: string, from: string, byId: Map<string, WorkflowDefinition>): string[] | undefined {
  const cameFrom = new Map<string, string | undefined>([[from, undefined]]);
  const queue = [from];
  for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
    if (id === target) {
      const path: string[] = [];
      for (let at: string | undefined = id; at !== undefined; at = cameFrom.get(at)) path.unshift(at);
      return path;
    }
    const def = byId.get(id);
    for (const { workflowId } of def ? childRefs(def) : []) {
      if (cameFrom.has(workflowId)) continue;
      cameFrom.set(workflowId, id);
      queue.push(workflowId);
    }
  }
  return undefined;
}
