// Wakes of runs waiting on a peer task (a2a.invoke), asked by push callbacks and by stream holds.
// A wake only brings the run's next read of the peer forward, so however many arrive — a flood,
// a replayed token, a stream flipping state — they are coalesced per wait:
//   - in the store (runs.wake), across instances: a sleeping run's timer comes forward, never
//     closer than HANDOFF_AGENT_WAKE_MIN_MS to its last commit, and once it is due or leased
//     further wakes change nothing;
//   - here, per instance: one read in flight (or due), at most one wake queued behind it. The
//     queued wake is asked again when the run next commits (the bus) — so news that arrives
//     while the node reads is not lost — and every request meanwhile costs nothing, not even a
//     statement.
import type { Logger } from 'pino';
import type { RunNotice } from '../bus/bus.js';

export type WakeSource = 'push' | 'stream';
/** woken: the run's timer moved; queued: behind a read due or in flight; coalesced: one was queued already. */
export type WakeOutcome = 'woken' | 'queued' | 'coalesced';

/** The wait a wake is for: its run, and its id (the wait must still be waiting for a queued wake). */
export interface WakeTarget {
  waitId: string;
  runId: string;
}

export interface PeerWakesOptions {
  /** runs.wake with the spacing: true if it moved the run's timer. */
  wake(runId: string): Promise<boolean>;
  /** The timer moved: this instance's worker looks for due runs now. */
  kick(): void;
  /** Whether the node still waits on this wait (its run has moved on otherwise). */
  waiting(waitId: string): Promise<boolean>;
  logger: Logger;
  /** Runs remembered at most; the oldest is forgotten first (its poll timer still reads it). */
  max: number;
  onRequest?(source: WakeSource, outcome: WakeOutcome): void;
}

interface Pending {
  waitId: string;
  source: WakeSource;
  /** due: this instance woke the run and its read has not committed; queued: wake it again then. */
  state: 'due' | 'queued';
}

export class PeerWakes {
  /** By run id: what this instance woke or queued, until the run's next commit. */
  private readonly pending = new Map<string, Pending>();

  constructor(private readonly opts: PeerWakesOptions) {}

  async request(target: WakeTarget, source: WakeSource): Promise<WakeOutcome> {
    const outcome = await this.ask(target, source);
    this.opts.onRequest?.(source, outcome);
    return outcome;
  }

  /** A run committed (the bus): the read a pending wake waited for is done. */
  noticed(n: RunNotice): void {
    // After a gap in cross-instance notices: start afresh (at worst one wake more).
    if (n.runId === '*') {
      this.pending.clear();
      return;
    }
    const was = this.pending.get(n.runId);
    if (!was) return;
    this.pending.delete(n.runId);
    if (was.state !== 'queued' || n.status !== 'running') return;
    void this.again({ waitId: was.waitId, runId: n.runId }, was.source);
  }

  private async ask(target: WakeTarget, source: WakeSource): Promise<WakeOutcome> {
    const now = this.pending.get(target.runId);
    if (now?.state === 'queued') return 'coalesced';
    if (now?.state === 'due') {
      now.state = 'queued';
      now.source = source;
      return 'queued';
    }
    const mine: Pending = { waitId: target.waitId, source, state: 'due' };
    this.remember(target.runId, mine);
    let woken: boolean;
    try {
      woken = await this.opts.wake(target.runId);
    } catch (err) {
      if (this.pending.get(target.runId) === mine) this.pending.delete(target.runId);
      throw err;
    }
    if (woken) {
      this.opts.kick();
      return 'woken';
    }
    // Leased (a read in flight), due already, or not sleeping: ask again at its next commit.
    if (this.pending.get(target.runId) === mine) mine.state = 'queued';
    return 'queued';
  }

  /** A queued wake, once the read before it committed: only while the node still waits. */
  private async again(target: WakeTarget, source: WakeSource): Promise<void> {
    try {
      if (await this.opts.waiting(target.waitId)) await this.request(target, source);
    } catch (err) {
      this.opts.logger.warn({ err, runId: target.runId }, 'a queued wake failed; the poll timer reads the peer');
    }
  }

  private remember(runId: string, p: Pending): void {
    this.pending.delete(runId);
    this.pending.set(runId, p);
    if (this.pending.size > this.opts.max) this.pending.delete(this.pending.keys().next().value as string);
  }
}
