// The worker's drive of a forked run: every due branch executes at once (each node's I/O outside
// any transaction, as for an unforked run), and each result commits in its own short transaction
// fenced by the lease, one commit at a time, applied to the run as the commit before left it.
// So two branches' calls are in flight together, and neither commit loses the other's writes.
import { ConflictError } from '../store/errors.js';
import { isTerminal, type RunRecord } from '../store/model.js';
import type { Store, StoreTx } from '../store/store.js';
import { dueLines, isForked, type Line, lineById } from './branches.js';
import { branchStep, type StepContext, type StepOutcome } from './step.js';
import type { WorkflowDefinition } from './workflow/definition.js';

/** Commits retried on a fresh read when someone else (a decision, a cancel) committed first. */
const COMMIT_RETRIES = 5;

export class BranchDrive {
  private latest: RunRecord;
  private readonly inflight = new Map<string, Promise<void>>();
  /** The tail of the commit queue: each commit waits for the one before. */
  private turn: Promise<unknown> = Promise.resolve();
  /** The lease is lost or the run ended under us: start nothing more. */
  private lost = false;

  constructor(
    private readonly store: Store,
    private readonly def: WorkflowDefinition,
    run: RunRecord,
    private readonly ctx: StepContext,
  ) {
    this.latest = run;
  }

  /**
   * Drive until no branch is due. Returns the run to go on with when it is no longer forked and
   * still runnable; else undefined, with the lease handed back.
   */
  async drive(): Promise<RunRecord | undefined> {
    while (!this.lost && isForked(this.latest.cursor) && !this.ended() && this.latest.status !== 'cancelling') {
      for (const { line } of dueLines(this.latest, this.ctx.clock.now())) {
        const id = line.id as string;
        if (!this.inflight.has(id))
          this.inflight.set(
            id,
            this.step(line).finally(() => this.inflight.delete(id)),
          );
      }
      const live = this.liveSteps();
      if (live.length === 0) break;
      await Promise.race(live);
    }
    await Promise.allSettled(this.liveSteps());
    if (this.lost || this.ended()) return undefined;
    if (!isForked(this.latest.cursor) || this.latest.status === 'cancelling') return this.latest;
    // Every branch sleeps or waits on a person: the timer (the run's wakeAt) brings it back.
    const owner = this.ctx.fence?.owner;
    if (owner) await this.store.runs.releaseLease(this.latest.runId, owner);
    return undefined;
  }

  /**
   * The steps of lines the run still has. A withdrawn branch's step may wait on a call for
   * minutes; its result is dropped when it ends (samePlace), so nothing waits for it: neither the
   * join's continuation nor handing the lease back. allSettled keeps its failure unhandled-free.
   */
  private liveSteps(): Promise<void>[] {
    const live: Promise<void>[] = [];
    for (const [id, step] of this.inflight) {
      if (lineById(this.latest.cursor, id)) live.push(step);
      else void Promise.allSettled([step]);
    }
    return live;
  }

  private ended(): boolean {
    return isTerminal(this.latest.status);
  }

  private async step(line: Line): Promise<void> {
    try {
      const out = await branchStep(
        this.def,
        this.latest,
        this.ctx,
        line,
        () => this.latest,
        (commit) => this.inTurn(commit),
      );
      this.keep(out.run);
    } catch (err) {
      // Lost to another writer for good (a takeover, a cancel): the runner re-reads the run.
      if (!(err instanceof ConflictError)) throw err;
      this.lost = true;
    }
  }

  /** Run `commit` after every commit queued before it, retried on a fresh read after a conflict. */
  private inTurn(commit: (tx: StoreTx) => Promise<StepOutcome>): Promise<StepOutcome> {
    const mine = this.turn.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          const out = await this.store.transaction(commit);
          this.keep(out.run);
          return out;
        } catch (err) {
          if (!(err instanceof ConflictError) || attempt >= COMMIT_RETRIES || !(await this.reload())) throw err;
        }
      }
    });
    this.turn = mine.catch(() => undefined);
    return mine;
  }

  /** Read the run again after a conflict; false when it is no longer ours to drive. */
  private async reload(): Promise<boolean> {
    const fresh = await this.store.runs.get(this.latest.runId);
    if (!fresh || fresh.leaseOwner !== this.ctx.fence?.owner || isTerminal(fresh.status)) {
      this.lost = true;
      if (fresh) this.keep(fresh);
      return false;
    }
    this.keep(fresh);
    return true;
  }

  private keep(run: RunRecord): void {
    if (run.version >= this.latest.version) this.latest = run;
  }
}
