// What the REST run API reads besides a run itself (Engine.getRun): a run's open interrupts and
// its event log (a page, or followed live), and a tenant's runs page by page with the open
// interrupts of those that wait. The routes ask here; none reads the store.
import type { ChangeBus } from '../bus/bus.js';
import type { InterruptRecord, RunEvent, RunRecord } from '../store/model.js';
import { isSuspended } from '../store/model.js';
import type { OpenInterruptHead } from '../store/repos/interrupts.js';
import type { RunListFilter, RunPage } from '../store/repos/runs.js';
import type { Store } from '../store/store.js';
import { type FollowOptions, followRun } from './follow.js';

export class RunReads {
  constructor(
    private readonly store: Store,
    private readonly bus: ChangeBus,
  ) {}

  /** The interrupts open on `run` (none unless it waits), oldest first. */
  openInterrupts(run: RunRecord): Promise<InterruptRecord[]> {
    return isSuspended(run.status) ? this.store.interrupts.listOpen(run.runId) : Promise.resolve([]);
  }

  /** Events with sequence > afterSeq, in order, at most `limit`. */
  events(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    return this.store.events.list(runId, afterSeq, limit);
  }

  /** The run's events after the cursor, then each as it is committed (follow.ts). */
  follow(runId: string, opts: FollowOptions): AsyncGenerator<RunEvent> {
    return followRun(this.store, this.bus, runId, opts);
  }

  /** A page of the tenant's runs, with the open interrupts of those that wait (by run id). */
  async page(tenantId: string, filter: RunListFilter): Promise<RunPage & { open: Map<string, OpenInterruptHead[]> }> {
    const page = await this.store.runs.list(tenantId, filter);
    const waiting = page.runs.filter((r) => isSuspended(r.status));
    return { ...page, open: await this.store.interrupts.openHeads(waiting.map((r) => r.runId)) };
  }
}
