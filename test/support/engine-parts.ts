// Real engine parts for the unit tests of one step and of the worker (test/unit/step.test.ts,
// runner.test.ts): a clock the test moves, shared by the engine and the store (timers, leases);
// a SQLite store in memory; and a node type that records each execution and does what the test
// says (complete, throw, or wait until released), lent through StepContext.nodeTypes.
//
//   const clock = new ManualClock();
//   const store = await memoryStore(clock);
//   const probe = new ProbeNode();                  // typeId 'test.probe'
//   const nodeTypes = withNodes(probe);             // NODE_TYPES plus the probe
import { NODE_TYPES } from '../../src/engine/nodes/index.js';
import type { NodeContext, NodeResult, NodeType } from '../../src/engine/nodes/types.js';
import type { WorkflowDefinition } from '../../src/engine/workflow/definition.js';
import { openStore } from '../../src/store/connect.js';
import type { Store } from '../../src/store/store.js';
import { node, workflowOf } from './call-workflows.js';

export const T0 = Date.parse('2030-01-01T00:00:00.000Z');

/** The engine's Clock (epoch ms) and the store's (a Date), both read from `ms`. */
export class ManualClock {
  constructor(public ms = T0) {}
  readonly now = (): number => this.ms;
  readonly date = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A store on a new SQLite database in memory, on `clock`. Close it after the test. */
export function memoryStore(clock: ManualClock): Promise<Store> {
  return openStore({ sqliteFile: ':memory:', now: clock.date });
}

/** A workflow of `nodes` ([id, typeId, config]) in a line, each to the next. */
export function lineOf(id: string, nodes: Array<[string, string, Record<string, unknown>?]>): WorkflowDefinition {
  const edges = nodes.slice(1).map(([to], i) => [nodes[i]?.[0] as string, to] as [string, string]);
  return workflowOf(
    id,
    nodes.map(([nid, typeId, config]) => node(nid, typeId, config ?? {})),
    edges,
  ) as unknown as WorkflowDefinition;
}

/** What the probe does when it executes next. */
type ProbeAct = 'complete' | 'throw' | 'hold';

/**
 * A node type (`test.probe`, not inline) that records the context of every execution, and
 * completes, throws, or holds until `release()` (oldest first) — a call still in flight when the test moves on.
 */
export class ProbeNode implements NodeType {
  readonly typeId = 'test.probe';
  readonly inline = false;
  readonly configSchema = { type: 'object' };
  readonly executions: NodeContext[] = [];
  act: ProbeAct = 'complete';
  private held: Array<() => void> = [];

  async execute(ctx: NodeContext): Promise<NodeResult> {
    this.executions.push(ctx);
    if (this.act === 'throw') throw new Error('the probe failed');
    if (this.act === 'hold') await new Promise<void>((resolve) => this.held.push(resolve));
    return { kind: 'completed', output: { execution: this.executions.length } };
  }

  /** Executions holding now. */
  get holding(): number {
    return this.held.length;
  }

  /** Let the oldest held execution complete. */
  release(): void {
    this.held.shift()?.();
  }

  /** The idempotency keys the executions were given, in order. */
  get keys(): string[] {
    return this.executions.map((e) => e.idempotencyKey);
  }
}

/** The host's node types and `extra`. */
export function withNodes(...extra: NodeType[]): ReadonlyMap<string, NodeType<any>> {
  return new Map([...NODE_TYPES, ...extra.map((t) => [t.typeId, t] as const)]);
}
