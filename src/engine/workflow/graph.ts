// The shape of a workflow's graph that parallel work relies on, computed once per definition:
// which `core.join` the branches of each `core.parallel` lead into, and what is wrong with it.
//
//   const g = graphOf(def);
//   g.joinOf.get('fork')      // 'both' — the join the branches of node `fork` lead into, if any
//   g.problems                // ['node "fork": …'] — the loader refuses a workflow that has any
//
// A branch of a parallel node P is followed edge by edge from one of P's targets. A nested
// `core.parallel` is stepped over to its own join; reaching a `core.join` ends the walk there.
// Every branch of P must reach the same join, or only ends (nodes without outgoing edges).
import type { WorkflowDefinition } from './definition.js';

export const PARALLEL = 'core.parallel';
export const JOIN = 'core.join';

export interface WorkflowGraph {
  /** The join each parallel node's branches lead into (absent: they run to ends). */
  readonly joinOf: ReadonlyMap<string, string>;
  /** The ids of the workflow's `core.join` nodes. */
  readonly joins: ReadonlySet<string>;
  /** What makes the graph unrunnable, each naming its node. */
  readonly problems: readonly string[];
}

/** Whether `nodeId` is a `core.join` of `def` (a line reaching it arrives instead of executing it). */
export const isJoin = (def: WorkflowDefinition, nodeId: string): boolean => graphOf(def).joins.has(nodeId);

const cache = new WeakMap<WorkflowDefinition, WorkflowGraph>();

/** The graph of `def` (computed once: definitions are immutable once loaded). */
export function graphOf(def: WorkflowDefinition): WorkflowGraph {
  let g = cache.get(def);
  if (!g) {
    g = analyse(def);
    cache.set(def, g);
  }
  return g;
}

function analyse(def: WorkflowDefinition): WorkflowGraph {
  const typeOf = new Map(def.nodes.map((n) => [n.id, n.typeId]));
  const targets = new Map<string, string[]>();
  for (const e of def.edges) targets.set(e.sourceNodeId, [...(targets.get(e.sourceNodeId) ?? []), e.targetNodeId]);
  const joinOf = new Map<string, string>();
  const problems: string[] = [];
  const resolving = new Set<string>();

  /** The join P's branches reach (undefined: only ends), or a problem string. */
  const joinFor = (p: string): string | undefined => {
    if (joinOf.has(p)) return joinOf.get(p);
    if (resolving.has(p)) return undefined; // a cycle through P: reported by the walk below
    resolving.add(p);
    const reached = new Set<string>();
    for (const start of targets.get(p) ?? []) {
      for (const j of joinsReached(start)) reached.add(j);
    }
    resolving.delete(p);
    if (reached.size > 1) {
      problems.push(`node "${p}": its branches lead into different joins (${[...reached].join(', ')})`);
      return undefined;
    }
    const j = [...reached][0];
    if (j !== undefined) joinOf.set(p, j);
    return j;
  };

  /** The joins a walk from `start` ends at (empty: it ends at ends only). */
  const joinsReached = (start: string): Set<string> => {
    const found = new Set<string>();
    walk(start, (id) => {
      const type = typeOf.get(id);
      if (type === JOIN) {
        found.add(id);
        return [];
      }
      // A nested fork is crossed at its own join; its branches are its business.
      if (type === PARALLEL) {
        const inner = joinFor(id);
        return inner === undefined ? [] : (targets.get(inner) ?? []);
      }
      return targets.get(id) ?? [];
    });
    return found;
  };

  for (const n of def.nodes) if (n.typeId === PARALLEL) joinFor(n.id);
  const fed = new Set(joinOf.values());
  for (const n of def.nodes) {
    if (n.typeId === JOIN && !fed.has(n.id)) problems.push(`node "${n.id}": no core.parallel leads into this join`);
    if (n.typeId !== PARALLEL) continue;
    problems.push(...parallelProblems(n.id, targets.get(n.id) ?? [], typeOf));
    for (const start of targets.get(n.id) ?? []) {
      if (!reachesExit(start, targets, typeOf)) {
        problems.push(`node "${n.id}": the branch from "${start}" can reach neither a join nor an end`);
      }
    }
  }
  problems.push(...sharedNodeProblems(def, targets, joinOf, typeOf));
  const joins = new Set(def.nodes.filter((n) => n.typeId === JOIN).map((n) => n.id));
  return { joinOf, joins, problems };
}

function parallelProblems(p: string, outs: string[], typeOf: Map<string, string>): string[] {
  const problems: string[] = [];
  if (outs.length === 0) problems.push(`node "${p}": a core.parallel needs at least one outgoing edge`);
  if (new Set(outs).size !== outs.length) problems.push(`node "${p}": two edges lead to the same node`);
  for (const t of outs)
    if (typeOf.get(t) === JOIN) problems.push(`node "${p}": a branch leads straight into join "${t}"`);
  return problems;
}

/**
 * Visit every node reachable from `start` once, breadth first; `next` says where to go from a node
 * (nothing: stop there) and may return `STOP` to end the walk.
 */
function walk(start: string, next: (id: string) => readonly string[] | typeof STOP): boolean {
  const seen = new Set<string>();
  const queue = [start];
  while (queue.length > 0) {
    const id = queue.shift() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    const onward = next(id);
    if (onward === STOP) return true;
    queue.push(...onward);
  }
  return false;
}
const STOP = Symbol('stop');

/** Whether a walk from `start` can reach a join or an end (a node without outgoing edges). */
function reachesExit(start: string, targets: Map<string, string[]>, typeOf: Map<string, string>): boolean {
  return walk(start, (id) => {
    const outs = targets.get(id) ?? [];
    return typeOf.get(id) === JOIN || outs.length === 0 ? STOP : outs;
  });
}

/**
 * Two branches of one fork must not share a node before their join: both would execute it with
 * the same ordinal, so the same idempotency key, at once.
 */
function sharedNodeProblems(
  def: WorkflowDefinition,
  targets: Map<string, string[]>,
  joinOf: Map<string, string>,
  typeOf: Map<string, string>,
): string[] {
  const problems: string[] = [];
  for (const n of def.nodes) {
    if (n.typeId !== PARALLEL) continue;
    const join = joinOf.get(n.id);
    const owner = new Map<string, string>();
    for (const start of targets.get(n.id) ?? []) {
      walk(start, (id) => {
        if (id === join) return [];
        const first = owner.get(id);
        if (first !== undefined && first !== start) {
          problems.push(`node "${id}": reached by two branches of "${n.id}" (from "${first}" and "${start}")`);
          return [];
        }
        owner.set(id, start);
        return typeOf.get(id) === JOIN ? [] : (targets.get(id) ?? []);
      });
    }
  }
  return [...new Set(problems)];
}
