// Pure helpers that turn "a node finished" into the next run patch and events. Shared by the
// worker (nodes that finish on their own) and by interrupt resolution (gates a human finished).
import type { NewEvent, RunCursor, RunRecord } from '../store/model.js';
import type { RunPatch } from '../store/store.js';
import type { EvalScope } from './nodes/types.js';
import type { WorkflowDefinition, WorkflowNode } from './workflow/definition.js';
import { spread, withEntry } from './spread.js';
import { evaluateCondition } from './workflow/evaluate.js';

/** The scope expressions of `run` see; `vars` and `nodes` as they are about to be committed, if given. */
export function scopeOf(run: RunRecord, vars = run.state.vars, nodes = run.state.outputs): EvalScope {
  return {
    inputs: run.inputs,
    vars,
    nodes,
    carry: run.cursor.carry ?? {},
    run: { runId: run.runId, workflowId: run.workflowId },
  };
}

export function findNode(def: WorkflowDefinition, nodeId: string): WorkflowNode {
  const node = def.nodes.find((n) => n.id === nodeId);
  if (!node) throw new Error(`workflow ${def.id} has no node ${nodeId}`);
  return node;
}

/** The first outgoing edge whose condition holds decides the next node; none means "done". */
export async function nextNodeId(
  def: WorkflowDefinition,
  fromId: string,
  scope: EvalScope,
): Promise<string | undefined> {
  for (const edge of def.edges) {
    if (edge.sourceNodeId !== fromId) continue;
    if (await evaluateCondition(edge.condition, scope)) return edge.targetNodeId;
  }
  return undefined;
}

export interface Completion {
  output: unknown;
  vars?: Record<string, unknown>;
  /** Extra payload for the node.completed event (e.g. the approval action). */
  detail?: Record<string, unknown>;
  /** The node's own events, logged after its node.started and before its node.completed. */
  events?: NewEvent[];
  /** node.started was already committed for this execution (timer or interrupt). */
  started: boolean;
}

/** Patch and events for "node at the cursor completed": advance along the edges or finish. */
export async function completeNode(
  def: WorkflowDefinition,
  run: RunRecord,
  c: Completion,
  nowIso: string,
): Promise<{ patch: RunPatch; events: NewEvent[] }> {
  const node = findNode(def, run.cursor.nodeId as string);
  const ordinal = run.cursor.ordinals[node.id] ?? 0;
  const state = {
    outputs: withEntry(run.state.outputs, node.id, c.output),
    vars: spread(run.state.vars, c.vars ?? {}),
  };
  const events: NewEvent[] = [];
  if (!c.started) events.push({ type: 'node.started', nodeId: node.id, payload: { ordinal, typeId: node.typeId } });
  if (c.events) events.push(...c.events);
  events.push({
    type: 'node.completed',
    nodeId: node.id,
    payload: c.detail ? spread({ ordinal }, c.detail) : { ordinal },
  });
  if (node.outputRole === 'artifact') {
    events.push({
      type: 'artifact.created',
      nodeId: node.id,
      payload: { artifactId: node.id, name: node.name, data: c.output },
    });
  }
  const ordinals = withEntry(run.cursor.ordinals, node.id, ordinal + 1);
  const next = await nextNodeId(def, node.id, scopeOf(run, state.vars, state.outputs));
  if (next === undefined) {
    events.push({ type: 'run.completed', payload: { outputs: artifactOutputs(def, state.outputs) } });
    return {
      patch: {
        status: 'completed',
        state,
        cursor: { ordinals },
        wakeAt: undefined,
        completedAt: nowIso,
        leaseOwner: undefined,
        leaseExpiresAt: undefined,
      },
      events,
    };
  }
  const cursor: RunCursor = { nodeId: next, ordinals };
  return { patch: { status: 'running', state, cursor, wakeAt: undefined }, events };
}

/** Patch and events for a run that fails at the cursor node. */
export function failRun(
  run: RunRecord,
  error: { code: string; message: string; details?: Record<string, unknown> },
  nowIso: string,
  started: boolean,
): { patch: RunPatch; events: NewEvent[] } {
  const nodeId = run.cursor.nodeId;
  const events: NewEvent[] = [];
  if (nodeId !== undefined) {
    const ordinal = run.cursor.ordinals[nodeId] ?? 0;
    if (!started) events.push({ type: 'node.started', nodeId, payload: { ordinal } });
    events.push({ type: 'node.failed', nodeId, payload: { ordinal, error } });
  }
  events.push({ type: 'run.failed', payload: { error } });
  return {
    patch: {
      status: 'failed',
      error,
      cursor: { ordinals: run.cursor.ordinals },
      wakeAt: undefined,
      completedAt: nowIso,
      ...noLease,
    },
    events,
  };
}

/** Terminal and suspended commits hand the lease back in the same transaction. */
export const noLease = { leaseOwner: undefined, leaseExpiresAt: undefined } as const;

function artifactOutputs(def: WorkflowDefinition, outputs: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const n of def.nodes) if (n.outputRole === 'artifact' && n.id in outputs) out[n.id] = outputs[n.id];
  return out;
}
