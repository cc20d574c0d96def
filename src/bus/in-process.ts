// The single-instance bus: plain in-memory fan-out.
import type { ChangeBus, RunNotice } from './bus.js';

export class InProcessBus implements ChangeBus {
  private readonly byRun = new Map<string, Set<(n: RunNotice) => void>>();
  private readonly all = new Set<(n: RunNotice) => void>();

  publish(notices: RunNotice[]): void {
    for (const n of notices) {
      for (const fn of this.byRun.get(n.runId) ?? []) safe(fn, n);
      for (const fn of this.all) safe(fn, n);
    }
  }

  subscribeRun(runId: string, fn: (n: RunNotice) => void): () => void {
    let set = this.byRun.get(runId);
    if (!set) {
      set = new Set();
      this.byRun.set(runId, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.byRun.delete(runId);
    };
  }

  subscribeAll(fn: (n: RunNotice) => void): () => void {
    this.all.add(fn);
    return () => this.all.delete(fn);
  }

  /**
   * Tell every subscriber to look at the store again (after a gap in cross-instance notices):
   * a notice past any sequence for each watched run, and a wildcard one for `subscribeAll`.
   */
  broadcastCatchUp(): void {
    for (const [runId, fns] of this.byRun) {
      for (const fn of [...fns]) safe(fn, { runId, tenantId: '', status: 'running', lastSeq: Number.MAX_SAFE_INTEGER });
    }
    for (const fn of [...this.all])
      safe(fn, { runId: '*', tenantId: '', status: 'running', lastSeq: Number.MAX_SAFE_INTEGER });
  }

  /** Number of runs with at least one subscriber (for metrics and leak tests). */
  get watchedRuns(): number {
    return this.byRun.size;
  }

  async close(): Promise<void> {
    this.byRun.clear();
    this.all.clear();
  }
}

function safe(fn: (n: RunNotice) => void, n: RunNotice): void {
  try {
    fn(n);
  } catch {
    // One subscriber's failure must not starve the others.
  }
}
