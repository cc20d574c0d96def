// Child runs (core.forEach, core.subWorkflow) as the host keeps them: the service the nodes are
// lent, and the two parts of the transition pipeline (src/host.ts) that tie a child to its parent.
//
// - `ChildRuns` starts children through Engine.startChildren (one transaction per batch, as the
//   parent's tenant and principal) and reads them back with their artifact.
// - `childCascadeStep`, inside the transaction of every run change: a run that ends (cancelled,
//   failed, completed) takes its unfinished children with it, in the same transaction — each is
//   cancelled the way a caller's cancel would be (a leased one through `cancelling`), and its own
//   end cascades to its children in turn.
// - `childWakeListener`, after a commit: a child that ended wakes its parent (Runs.wakeParent),
//   which reads it at once instead of at its poll timer.
import type { Logger } from 'pino';
import type { RunRecord, RunStatus } from '../store/model.js';
import type { ChildSummary } from '../store/repos/runs.js';
import { isTerminal } from '../store/model.js';
import type { CommitListener, Store, StoreTx, TransitionStep } from '../store/store.js';
import type { ActivityKind } from './activity.js';
import { requestCancel } from './cancel.js';
import type { Clock } from './clock.js';
import type { Engine } from './engine.js';
import { startsChildren } from './nodes/child-runs/index.js';
import type { ChildRunService, ChildRunSpec, ChildView } from './nodes/child-runs/service.js';
import type { WorkflowDefinition } from './workflow/definition.js';
import type { WorkflowSource } from './workflow/source.js';

export class ChildRuns implements ChildRunService {
  constructor(
    private readonly engine: Engine,
    readonly pollMs: number,
  ) {}

  async start(parent: { runId: string; nodeId: string }, children: ChildRunSpec[]): Promise<ChildView[]> {
    const runs = await this.engine.startChildren(parent.runId, parent.nodeId, children);
    return runs.map((run) => this.view(run));
  }

  async read(runIds: readonly string[]): Promise<Map<string, ChildView>> {
    const runs = await this.engine.store.runs.getMany(runIds);
    return new Map(runs.map((run) => [run.runId, this.view(run)]));
  }

  private view(run: RunRecord): ChildView {
    const def = this.engine.workflows.get(run.workflowId);
    const output = run.status === 'completed' && def ? artifactOf(def, run) : null;
    return run.error
      ? { runId: run.runId, status: run.status, output, error: run.error }
      : { runId: run.runId, status: run.status, output };
  }
}

/** The waits a parent may show, the most pressing first (as a forked run's own status orders them). */
const CHILD_WAITS: readonly RunStatus[] = ['waiting-approval', 'waiting-input', 'waiting-external'];

/**
 * The status a run's snapshot shows: its own, except that a run whose one line waits for its
 * children (`activity` `waiting-child`, not forked) shows the wait of a child that waits on a gate
 * (OpenWOP's cascade scenario reads such a parent as `waiting-approval`). One level: a child's
 * status is its own stored one. The parent's stored status, which the run list filters on and the
 * A2A task projects, stays `running`: its caller cannot answer the child's gate on the parent.
 */
export function shownStatus(
  run: Pick<RunRecord, 'status' | 'cursor'>,
  activity: ActivityKind | undefined,
  children: readonly ChildSummary[],
): RunStatus {
  if (run.status !== 'running' || run.cursor.branches !== undefined || activity !== 'waiting-child') return run.status;
  return CHILD_WAITS.find((wait) => children.some((c) => c.status === wait)) ?? run.status;
}

/**
 * A completed run's artifact: the output of its `outputRole: "artifact"` node; with several such
 * nodes, their outputs by node id; with none, null.
 */
export function artifactOf(def: WorkflowDefinition, run: RunRecord): unknown {
  const nodes = def.nodes.filter((n) => n.outputRole === 'artifact');
  if (nodes.length === 1) return run.state.outputs[(nodes[0] as { id: string }).id] ?? null;
  if (nodes.length === 0) return null;
  const out: Record<string, unknown> = {};
  for (const n of nodes) if (n.id in run.state.outputs) out[n.id] = run.state.outputs[n.id];
  return out;
}

/** The pipeline step that cancels a run's unfinished children when it ends (see the header). */
export function childCascadeStep(workflows: WorkflowSource, clock: Clock): TransitionStep {
  return {
    name: 'child-cascade',
    async run(tx, { before, run }) {
      // A run inserted already ended was driven inline and never reached a child-run node; only
      // the runs of a workflow that starts children may have any.
      if (!before || isTerminal(before.status) || !isTerminal(run.status)) return;
      if (!startsChildren(workflows.get(run.workflowId))) return;
      await cancelChildren(tx, run, clock.now());
    },
  };
}

/** Cancel every unfinished child of `parent` in `tx` (their own children follow by the step). */
export async function cancelChildren(tx: StoreTx, parent: RunRecord, now: number): Promise<void> {
  // OpenWOP interrupt-profiles.md §cascade-cancel: a cascaded cancel says `parent-cancelled` and
  // names the parent (a direct cancel never sets parentRunId); how the parent ended is beside it.
  const payload = { reason: 'parent-cancelled', parentRunId: parent.runId, parentStatus: parent.status };
  for (const child of await tx.childRuns(parent.runId)) await requestCancel(tx, child, payload, now);
}

/** The listener that wakes a parent when one of its children ends (see the header). */
export function childWakeListener(store: Store, kick: () => void, log: Logger): CommitListener {
  const wake = (parentRunId: string) =>
    store.runs.wakeParent(parentRunId).then(
      (woken) => (woken ? kick() : undefined),
      (err) => log.warn({ err, runId: parentRunId }, 'waking a parent run failed; its poll timer will'),
    );
  return {
    name: 'child-wake',
    committed(changes) {
      for (const { before, run } of changes) {
        // A child ended at its creation is seen by the execution that started it.
        if (run.parentRunId !== undefined && before && !isTerminal(before.status) && isTerminal(run.status)) {
          void wake(run.parentRunId);
        }
      }
    },
  };
}
