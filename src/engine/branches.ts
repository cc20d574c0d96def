// A run is a set of lines. An unforked run has one, its cursor; a `core.parallel` forks it into
// branches (`cursor.branches`), each stepping on its own, and a `core.join` merges them again.
// This module is the one place that knows how lines move: it is pure (no I/O); the engine commits
// what it decides, and carries out its side effects (closing a withdrawn branch's interrupt,
// cancelling its peer task) in the same transaction.
//
//   const f = Frontier.of(run.cursor, run.state.outputs);
//   f.leave(line, 'legal', output, 'both');       // a branch finished its node; next is the join
//   await f.settle(def, (outputs) => scopeOf(run, vars, outputs));
//   f.cursor(ordinals); f.ended; f.failed; f.withdrawn; f.events
import type { BranchCursor, ForkState, NewEvent, RunCursor, RunError, RunRecord, RunStatus } from '../store/model.js';
import type { EvalScope } from './nodes/types.js';
import { evaluateCondition } from './workflow/evaluate.js';
import type { WorkflowDefinition, WorkflowEdge } from './workflow/definition.js';
import { graphOf, isJoin, JOIN } from './workflow/graph.js';

/** One line of execution: an unforked run's cursor (no `id`), or one branch of a forked run. */
export type Line = Omit<BranchCursor, 'id'> & { id?: string };

/** Branches one run may have live at once (HANDOFF_MAX_BRANCHES). */
export const DEFAULT_MAX_BRANCHES = 64;

export const isForked = (cursor: RunCursor): boolean => cursor.branches !== undefined;

/** An unforked run's one line, read from its cursor (undefined once the run has ended). */
function ownLine(cursor: RunCursor): Line | undefined {
  if (cursor.nodeId === undefined) return undefined;
  const line: Line = { nodeId: cursor.nodeId };
  if (cursor.wakeAt !== undefined) line.wakeAt = cursor.wakeAt;
  if (cursor.carry !== undefined) line.carry = cursor.carry;
  if (cursor.started !== undefined) line.started = cursor.started;
  if (cursor.nodeState !== undefined) line.nodeState = cursor.nodeState;
  return line;
}

/** Every line of the run: its branches, or its one line, or none once it has ended. */
export function linesOf(cursor: RunCursor): Line[] {
  if (cursor.branches) return cursor.branches;
  const own = ownLine(cursor);
  return own ? [own] : [];
}

/** The line standing at `nodeId` (where an interrupt of that node is open), if any. */
export const lineAt = (cursor: RunCursor, nodeId: string): Line | undefined =>
  linesOf(cursor).find((l) => l.nodeId === nodeId);

/** The line with this id (a branch), or the run's own line when `id` is undefined. */
export function lineById(cursor: RunCursor, id: string | undefined): Line | undefined {
  return id === undefined ? ownLine(cursor) : cursor.branches?.find((b) => b.id === id);
}

/** The cursor with `line`'s place changed by `fields` (undefined values remove a field). */
export function placed(cursor: RunCursor, line: Line, fields: Partial<Omit<BranchCursor, 'id' | 'fork'>>): RunCursor {
  if (line.id === undefined) {
    const { waiting: _w, ...own } = fields;
    return dropUndefined({ ...cursor, ...own });
  }
  const branches = (cursor.branches ?? []).map((b) => (b.id === line.id ? dropUndefined({ ...b, ...fields }) : b));
  return { ...cursor, branches };
}

function dropUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

/** A forked run's status: waiting on a person while any interrupt is open, else running. */
export function forkedStatus(cursor: RunCursor): RunStatus {
  let input = false;
  let external = false;
  for (const b of cursor.branches ?? []) {
    if (b.waiting === 'approval') return 'waiting-approval';
    if (b.waiting === 'clarification') input = true;
    if (b.waiting === 'external-event') external = true;
  }
  return input ? 'waiting-input' : external ? 'waiting-external' : 'running';
}

/**
 * A forked run's timer: now when a branch is runnable (a number, so the claim takes it even while
 * the run waits on a person), else the earliest sleep or gate deadline, else none.
 */
export function forkedWakeAt(cursor: RunCursor, status: RunStatus, now: number): number | undefined {
  let earliest: number | undefined;
  for (const b of cursor.branches ?? []) {
    if (b.waiting === undefined && (b.wakeAt === undefined || b.wakeAt <= now)) {
      return status === 'running' ? undefined : now;
    }
    if (b.wakeAt !== undefined && (earliest === undefined || b.wakeAt < earliest)) earliest = b.wakeAt;
  }
  return earliest;
}

/**
 * What a due line of a forked run needs now: its node executed, or its gate's deadline expired.
 * A run woken before any branch's timer (`runs.wake`: a peer said its task changed) wakes every
 * sleeping branch, as it would an unforked run's one node: each node re-reads what it waits on,
 * or sleeps again until its own time.
 */
export function dueLines(run: RunRecord, now: number): Array<{ line: Line; kind: 'execute' | 'expire' }> {
  const due: Array<{ line: Line; kind: 'execute' | 'expire' }> = [];
  const sleeping: Line[] = [];
  for (const b of run.cursor.branches ?? []) {
    if (b.waiting !== undefined) {
      if (b.wakeAt !== undefined && b.wakeAt <= now) due.push({ line: b, kind: 'expire' });
    } else if (b.wakeAt === undefined || b.wakeAt <= now) due.push({ line: b, kind: 'execute' });
    else sleeping.push(b);
  }
  if (due.length === 0 && run.wakeAt !== undefined && run.wakeAt <= now) {
    for (const line of sleeping) due.push({ line, kind: 'execute' });
  }
  return due;
}

/** The events of a branch's step carry the branch id; an unforked run's are left as they are. */
export function stamped(events: NewEvent[], line: Line): NewEvent[] {
  if (line.id === undefined) return events;
  return events.map((e) =>
    e.nodeId === undefined || e.type.startsWith('run.') ? e : { ...e, payload: { ...e.payload, branch: line.id } },
  );
}

export interface JoinConfig {
  mode: 'all' | 'any' | 'count';
  count?: number;
}

/**
 * The lines of a run while one step moves them. Start from the cursor, say what the step did
 * (`fork`, `leave`, `withdrawAll`), then `settle` fires every join that is satisfied.
 */
export class Frontier {
  /** The run ended: its last line reached an end. */
  ended = false;
  /** The run fails: a join can no longer be satisfied, or a branch reached a join outside its fork. */
  failed: RunError | undefined;
  /** Branches ended before finishing: the engine closes their interrupts and cancels their peer tasks. */
  readonly withdrawn: BranchCursor[] = [];
  readonly events: NewEvent[] = [];

  private constructor(
    private branches: BranchCursor[],
    private readonly forks: Record<string, ForkState>,
    /** The run's line when it is not forked (`branches` is then empty). */
    private own: Line | undefined,
    readonly outputs: Record<string, unknown>,
    readonly ordinals: Record<string, number>,
  ) {}

  static of(cursor: RunCursor, outputs: Record<string, unknown>, ordinals: Record<string, number>): Frontier {
    return cursor.branches
      ? new Frontier([...cursor.branches], { ...cursor.forks }, undefined, { ...outputs }, ordinals)
      : new Frontier([], {}, ownLine(cursor), { ...outputs }, ordinals);
  }

  /** `line` ran the parallel node `nodeId` (execution `ordinal`): a branch per target. */
  fork(
    def: WorkflowDefinition,
    line: Line,
    nodeId: string,
    ordinal: number,
    targets: string[],
    maxBranches = DEFAULT_MAX_BRANCHES,
  ): void {
    const live = this.branches.length - (line.id === undefined ? 0 : 1) + targets.length;
    if (live > maxBranches) {
      this.failed = {
        code: 'too_many_branches',
        message: `'${nodeId}' would make ${live} branches live at once; this host allows ${maxBranches} (HANDOFF_MAX_BRANCHES)`,
        details: { branches: live, maxBranches },
      };
      return;
    }
    this.remove(line);
    const key = `${nodeId}#${ordinal}`;
    const fork: ForkState = { nodeId, arrived: [], outputs: {} };
    if (line.fork !== undefined) fork.parent = line.fork;
    const join = graphOf(def).joinOf.get(nodeId);
    if (join !== undefined) fork.join = join;
    this.forks[key] = fork;
    for (const t of targets) this.branches.push({ id: `${key}/${t}`, fork: key, nodeId: t });
  }

  /** `line` completed `from` with `output`; it goes on to `next` (undefined: an end). */
  leave(def: WorkflowDefinition, line: Line, from: string, output: unknown, next: string | undefined): void {
    if (next !== undefined && isJoin(def, next)) {
      this.remove(line);
      this.arrive(line, next, from, output);
      return;
    }
    if (next === undefined) {
      this.remove(line);
      if (line.fork === undefined) this.ended = true;
      return;
    }
    if (line.id === undefined) {
      this.own = { nodeId: next };
      return;
    }
    const moved: BranchCursor = { id: line.id, nodeId: next };
    if (line.fork !== undefined) moved.fork = line.fork;
    this.branches = this.branches.map((b) => (b.id === line.id ? moved : b));
  }

  /** `line` goes back to `nodeId` to run it again (a refine), carrying `carry`. */
  rerun(line: Line, nodeId: string, carry: Record<string, unknown>): void {
    if (line.id === undefined) {
      this.own = { nodeId, carry };
      return;
    }
    this.branches = this.branches.map((b) =>
      b.id === line.id ? { id: b.id, nodeId, carry, ...(b.fork !== undefined ? { fork: b.fork } : {}) } : b,
    );
  }

  /** Every branch but `except` ends now (the run fails or is cancelled). */
  withdrawAll(except: Line | undefined, reason: string): void {
    for (const b of this.branches) if (b.id !== except?.id) this.withdraw(b, reason);
    this.branches = this.branches.filter((b) => b.id === except?.id);
  }

  /** Fire every satisfied join (its output, then its successors), until nothing changes. */
  async settle(def: WorkflowDefinition, scope: (outputs: Record<string, unknown>) => EvalScope): Promise<void> {
    for (let changed = true; changed && this.failed === undefined; ) {
      changed = false;
      for (const key of this.forkKeysDeepestFirst()) {
        const fork = this.forks[key] as ForkState;
        const live = this.branches.filter((b) => this.within(b.fork, key));
        if (fork.join === undefined) {
          if (live.length > 0) continue;
          delete this.forks[key];
          if (fork.parent === undefined) this.ended = true;
          changed = true;
          break;
        }
        const config = joinConfigOf(def, fork.join);
        if (isSatisfied(config, fork.arrived.length, live.length)) {
          await this.fire(def, key, fork, live, scope);
          changed = true;
          break;
        }
        if (live.length === 0) {
          this.failed = {
            code: 'join_unsatisfied',
            message: `join '${fork.join}' needs ${needed(config)} branches; ${fork.arrived.length} arrived`,
            details: { join: fork.join, arrived: fork.arrived },
          };
          return;
        }
      }
    }
  }

  /** The cursor these lines make: unforked again once only the run's own line is left. */
  cursor(): RunCursor {
    const ordinals = this.ordinals;
    if (this.ended || this.failed) return { ordinals };
    const keys = Object.keys(this.forks);
    const root = this.branches.length === 1 && this.branches[0]?.fork === undefined ? this.branches[0] : undefined;
    if (keys.length === 0 && (root || this.own)) {
      const line = (root ?? this.own) as Line;
      const c: RunCursor = { nodeId: line.nodeId, ordinals };
      if (line.carry !== undefined) c.carry = line.carry;
      return c;
    }
    return { ordinals, branches: this.branches, forks: this.forks };
  }

  private arrive(line: Line, join: string, from: string, output: unknown): void {
    // The nearest fork of the line whose branches lead into this join.
    for (let key = line.fork; key !== undefined; key = this.forks[key]?.parent) {
      const fork = this.forks[key];
      if (fork?.join !== join) continue;
      // A new ForkState, not an assignment: the old one is still the run record's, as read.
      this.forks[key] = { ...fork, arrived: [...fork.arrived, from], outputs: { ...fork.outputs, [from]: output } };
      return;
    }
    this.failed = {
      code: 'join_outside_parallel',
      message: `node '${from}' leads into join '${join}', which no core.parallel of its line feeds`,
    };
  }

  private async fire(
    def: WorkflowDefinition,
    key: string,
    fork: ForkState,
    live: BranchCursor[],
    scope: (outputs: Record<string, unknown>) => EvalScope,
  ): Promise<void> {
    const join = fork.join as string;
    for (const b of live) this.withdraw(b, `join '${join}' was satisfied`);
    this.branches = this.branches.filter((b) => !this.within(b.fork, key));
    for (const k of Object.keys(this.forks)) if (this.within(k, key)) delete this.forks[k];
    const ordinal = this.ordinals[join] ?? 0;
    const output = { arrived: fork.arrived, outputs: fork.outputs };
    const branch = `${key}>${join}`;
    const payload = fork.parent !== undefined ? { branch } : {};
    this.events.push(
      { type: 'node.started', nodeId: join, payload: { ordinal, typeId: JOIN, ...payload } },
      { type: 'node.completed', nodeId: join, payload: { ordinal, arrived: fork.arrived, ...payload } },
    );
    this.outputs[join] = output;
    this.ordinals[join] = ordinal + 1;
    const next = await firstNext(def, join, scope(this.outputs));
    // The continuation is a branch of the enclosing fork, or the run's own line again (cursor()
    // makes the run unforked when it is the only line left).
    const continuation: BranchCursor = { id: branch, nodeId: join };
    if (fork.parent !== undefined) continuation.fork = fork.parent;
    this.branches.push(continuation);
    this.leave(def, continuation, join, output, next);
  }

  private withdraw(b: BranchCursor, reason: string): void {
    this.withdrawn.push(b);
    this.events.push({ type: 'branch.withdrawn', nodeId: b.nodeId, payload: { branch: b.id, reason } });
  }

  private remove(line: Line): void {
    if (line.id === undefined) this.own = undefined;
    else this.branches = this.branches.filter((b) => b.id !== line.id);
  }

  /** Whether fork `key` is `ancestor` or nested inside it. */
  private within(key: string | undefined, ancestor: string): boolean {
    for (let k = key; k !== undefined; k = this.forks[k]?.parent) if (k === ancestor) return true;
    return false;
  }

  private forkKeysDeepestFirst(): string[] {
    const depth = (k: string) => {
      let d = 0;
      for (let p = this.forks[k]?.parent; p !== undefined; p = this.forks[p]?.parent) d++;
      return d;
    };
    return Object.keys(this.forks).sort((a, b) => depth(b) - depth(a));
  }
}

function joinConfigOf(def: WorkflowDefinition, join: string): JoinConfig {
  const config = def.nodes.find((n) => n.id === join)?.config as Partial<JoinConfig> | undefined;
  const mode = config?.mode ?? 'all';
  return mode === 'count' ? { mode, count: config?.count ?? 1 } : { mode };
}

function isSatisfied(c: JoinConfig, arrived: number, live: number): boolean {
  if (c.mode === 'all') return live === 0 && arrived > 0;
  return arrived >= (c.mode === 'any' ? 1 : (c.count ?? 1));
}

const needed = (c: JoinConfig) => (c.mode === 'all' ? 'all its' : c.mode === 'any' ? 'one of its' : String(c.count));

/** An edge's condition failed while it was evaluated (e.g. a JSONata type error): the run fails. */
export class ConditionError extends Error {
  override readonly name = 'ConditionError';
  readonly error: RunError;
  constructor(edge: WorkflowEdge, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`the condition of edge '${edge.id}' (${edge.sourceNodeId} → ${edge.targetNodeId}) failed: ${why}`);
    this.error = { code: 'condition_failed', message: this.message, details: { edgeId: edge.id } };
  }
}

async function holds(edge: WorkflowEdge, scope: EvalScope): Promise<boolean> {
  try {
    return await evaluateCondition(edge.condition, scope);
  } catch (err) {
    throw new ConditionError(edge, err);
  }
}

/**
 * The edge is taken only when its source failed (`triggerRule: any_failed`; the default
 * `all_success` is taken when it completed): src/engine/transitions.ts, failureRoute.
 */
export function onFailure(edge: WorkflowEdge): boolean {
  return edge.triggerRule === 'any_failed';
}

/** The first outgoing edge of `fromId` whose condition holds (the ordinary rule). */
export async function firstNext(
  def: WorkflowDefinition,
  fromId: string,
  scope: EvalScope,
): Promise<string | undefined> {
  for (const edge of def.edges) {
    if (edge.sourceNodeId !== fromId || onFailure(edge)) continue;
    if (await holds(edge, scope)) return edge.targetNodeId;
  }
  return undefined;
}

/** Every outgoing edge of `fromId` whose condition holds (a `core.parallel` starts one branch each). */
export async function allNext(def: WorkflowDefinition, fromId: string, scope: EvalScope): Promise<string[]> {
  const out: string[] = [];
  for (const edge of def.edges) {
    if (edge.sourceNodeId !== fromId || onFailure(edge)) continue;
    if (await holds(edge, scope)) out.push(edge.targetNodeId);
  }
  return out;
}
