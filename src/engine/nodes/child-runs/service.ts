// What core.forEach and core.subWorkflow need from their host (NodeServices.children): starting
// child runs through the engine's own start path, and reading them back. Built by the host
// (src/engine/children.ts); tests may build one too.
import type { RunError, RunStatus } from '../../../store/model.js';

/** A child run to start: its id (derived from where it is started), workflow and inputs. */
export interface ChildRunSpec {
  runId: string;
  workflowId: string;
  inputs: Record<string, unknown>;
}

/** A child run as its parent sees it. */
export interface ChildView {
  runId: string;
  status: RunStatus;
  /** Its artifact once it completed (the output of its `outputRole: "artifact"` node), else null. */
  output: unknown;
  error?: RunError;
}

export interface ChildRunService {
  /**
   * Start, in one transaction, the children of the parent's node that do not exist yet; every one
   * as it is now, in the order given. Throws an EngineError when the engine refuses (unknown
   * workflow, invalid inputs, too deep, the parent has ended).
   */
  start(parent: { runId: string; nodeId: string }, children: ChildRunSpec[]): Promise<ChildView[]>;
  /** The children with these ids as they are now (an id without a run is absent). */
  read(runIds: readonly string[]): Promise<Map<string, ChildView>>;
  /** How long a parent sleeps when no child's end wakes it first (HANDOFF_CHILD_POLL_MS): the floor. */
  pollMs: number;
}
