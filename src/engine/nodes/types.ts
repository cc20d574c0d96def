// The contract between the engine and a node type. A node type is one object: its type id, the
// JSON Schema its `config` must satisfy (checked when a workflow loads), whether it may run inside
// a request's transaction, and its executor. An executor says what happened; the engine commits.
// A node whose life reaches past one execution (a wait on another agent) says so with optional
// lifecycle hooks (cancel, resolveInterrupt, describe): the engine calls them without naming it.
// Adding a node type: one file (or folder) here exporting a NodeType, plus its line in index.ts.
import type { InterruptKind, NewEvent, RunError } from '../../store/model.js';
import type { StoreTx } from '../../store/store.js';
import type { PortValue, WorkflowNode } from '../workflow/definition.js';
import type { NodeServices } from './services.js';

/** What templates and conditions see (`{{ inputs.prompt }}`, `vars.i < inputs.steps`). */
export interface EvalScope {
  inputs: Record<string, unknown>;
  vars: Record<string, unknown>;
  /** Outputs of completed nodes, by node id (latest completion). */
  nodes: Record<string, unknown>;
  /** Data handed to this execution (e.g. refine feedback for a producer node). */
  carry: Record<string, unknown>;
  run: { runId: string; workflowId: string };
}

export interface NodeContext<C = Record<string, unknown>> {
  runId: string;
  workflowId: string;
  node: WorkflowNode;
  /** The node's config, already checked against the type's configSchema (templates unrendered). */
  config: C;
  /** How many times this node has completed before in this run (loops, refine). */
  ordinal: number;
  scope: EvalScope;
  /** Epoch ms, from the engine's clock. */
  now: number;
  /** Set when this execution already started a durable timer: the epoch ms it wakes at. */
  wakeAt?: number;
  /** What this execution recorded with its last `sleep` (durable across restarts), if anything. */
  state?: Record<string, unknown>;
  /** Stable across a crash-retry of the same execution: `runId:nodeId:ordinal`. */
  idempotencyKey: string;
  /** What the host lends to nodes that call out (absent: none; such a node fails clearly). */
  services?: NodeServices;
}

export type NodeResult =
  /** `detail` goes into the node.completed payload (a call's recorded outcome, a peer's final Task). */
  | {
      kind: 'completed';
      output: unknown;
      vars?: Record<string, unknown>;
      events?: NewEvent[];
      detail?: Record<string, unknown>;
    }
  /** Wake me at `wakeAt`; `state` is handed back to that execution; `events` are logged now. */
  | { kind: 'sleep'; wakeAt: number; state?: Record<string, unknown>; events?: NewEvent[] }
  /**
   * Open an interrupt. With `expiresAt` (epoch ms) the wait has a deadline (the run's timer);
   * `state` (if given) is kept for the execution that follows its answer.
   */
  | {
      kind: 'interrupt';
      interrupt: { kind: InterruptKind; data: Record<string, unknown> };
      expiresAt?: number;
      state?: Record<string, unknown>;
      events?: NewEvent[];
    }
  | { kind: 'failed'; error: RunError; events?: NewEvent[] }
  /** The run ends `cancelled` (e.g. the agent this node waited on cancelled its task). */
  | { kind: 'cancelled'; reason: string; events?: NewEvent[] };

export interface NodeType<C = Record<string, unknown>> {
  readonly typeId: string;
  /**
   * Fast and free of external I/O: may run inside the transaction of the request that started
   * or resumed the run. A node that calls out is not inline: the worker runs it outside any
   * transaction and commits its result afterwards.
   */
  readonly inline: boolean;
  /** JSON Schema (2020-12) of `config`; templates (`{{ expr }}`) may appear in any string. */
  readonly configSchema: object;
  /**
   * Where `{{ secrets.NAME }}` may appear in `config`, as paths the loader reports
   * (`config.headers.authorization`, `config.query.tag[0]`). Absent: nowhere.
   */
  readonly secretPaths?: readonly RegExp[];
  /** What the schema cannot say (e.g. a reference to another node), as sentences about `config`. */
  checkConfig?(config: C, check: ConfigCheck): string[];
  execute(ctx: NodeContext<C>): Promise<NodeResult>;
  /**
   * Lifecycle hook: the run ends cancelled, or the branch standing at `nodeId` is withdrawn. Inside
   * that transaction, mark what this type's executions of the run (or of that node) hold outside
   * the host, to be released after the commit. Asked of every type that has the hook, whether or not
   * the run uses it: keep it one statement keyed by the run (src/engine/cancel.ts).
   */
  cancel?(tx: StoreTx, runId: string, nodeId?: string): Promise<void>;
  /**
   * Lifecycle hook: an interrupt this node opened is answered with `answer`. Returns the state the
   * node executes again with, at once (it relays the answer elsewhere and decides what follows).
   * Absent: the answer completes the node, as for a gate (src/engine/resolution.ts).
   */
  resolveInterrupt?(
    state: Record<string, unknown> | undefined,
    answer: Record<string, unknown>,
  ): Record<string, unknown>;
  /**
   * Lifecycle hook: what views show of a line standing at this node, from the state an execution
   * hands back. The engine records it with that state when it commits (src/engine/nodes/view.ts),
   * so the run snapshot, the run list, the Task's metadata and the console read it without knowing
   * the node's type.
   */
  describe?(state: Record<string, unknown>): NodeView | undefined;
}

/** What a line shows while it stands at a node (every field optional). */
export interface NodeView {
  /** What the node waits on outside the host: the peer agent, its task and that task's last known state. */
  waitingOn?: { agent: string; peerTaskId: string; state: string };
}

/** What a node type's own config check may consult. */
export interface ConfigCheck {
  nodeId: string;
  /** Every node id of the workflow. */
  nodeIds: ReadonlySet<string>;
  /** The node's input ports. */
  inputs: Readonly<Record<string, PortValue>>;
  /** Problems compiling an author-written JSON Schema found at `path` (none: it compiles). */
  schemaProblems(schema: Record<string, unknown>, path: string): string[];
}

/** The values that occur more than once, each once. */
export function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(values.filter((v) => seen.has(v) || !seen.add(v)))];
}

export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** Names end up in JSONata paths (`vars.i`, `nodes.ask.answers.name`), so keep them plain. */
export const NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
