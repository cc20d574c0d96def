// What a line shows while it stands at a node. A node type describes itself (NodeType.describe)
// from the state its execution hands back; the engine records that view in the same state when it
// commits (step.ts), so every reader (the run snapshot and list, the Task's metadata, the console)
// finds it in the run's cursor without knowing the node's type or its state's shape.
import type { NodeResult, NodeType, NodeView } from './types.js';

/** `result` with its node type's view recorded in the state it hands back (as is without either). */
export function described(type: NodeType, result: NodeResult): NodeResult {
  if (type.describe === undefined || !('state' in result) || result.state === undefined) return result;
  // The view of the state before is replaced, never carried over.
  const { waitingOn: _before, ...state } = result.state;
  const view = type.describe(state);
  return { ...result, state: view?.waitingOn ? { ...state, waitingOn: view.waitingOn } : state };
}

/** The view recorded in a line's node state (a RunCursor's or a branch's `nodeState`). */
export function viewOf(nodeState: Record<string, unknown> | undefined): NodeView {
  const w = nodeState?.waitingOn;
  // Recorded by `described` above from a NodeView: the stored JSON has that shape.
  return w !== null && typeof w === 'object' ? { waitingOn: w as NonNullable<NodeView['waitingOn']> } : {};
}
