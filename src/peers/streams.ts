// Stream waits: while a run sleeps on a peer task in stream mode, this instance holds a
// subscription to it (0.3 tasks/resubscribe, 1.0 SubscribeToTask) and wakes the run at the first
// news: a state other than the one the node last read (a progress update or an artifact that
// leaves the state as it was is not news). The hold then ends; the node reads the task itself (as after a push) and, if it sleeps again, asks
// for a new hold. So a run subscribes at most once per execution of its node: re-subscribing
// follows the run's own wakes (news, or the poll backoff when a peer closes its streams without
// news), never a loop of its own, and a peer that closes every subscription at once sees one per
// poll (test/e2e/a2a-invoke-stream.test.ts counts them).
//
// Holds go on through interrupted states (input-required, auth-required): the node asks for one
// there only when it keeps waiting (onInputRequired 'wait': the peer's own people answer, as in
// the `delegate` workflow; or an answer it relayed that the peer has not taken up yet), and a
// peer's stream of a task that has not ended may stay open across them (Handoff's observe stream
// and the 1.x SDK's do; a 0.3 SDK peer ends it, and the poll floor remains).
//
// Nothing here is durable: a hold is only a faster wake-up. After a crash, a drop or a failover
// the instance that next executes the node holds again; polling stays the floor.
import type { Logger } from 'pino';
import type { StoredTaskState } from '../a2a/types.js';
import type { PeerWaitRecord } from '../store/repos/peer-waits.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';

export interface PeerStreamsOptions {
  resolve(target: PeerTarget, run: RunContext): Promise<PeerClient>;
  /** Bring the run's next execution forward (runs.wake, then a claim pass). */
  wake(runId: string): Promise<void>;
  callerAgentId: string;
  logger: Logger;
  /** Subscriptions this instance holds at most; beyond it, waits rely on polling. */
  max: number;
  /** Counts (metrics): a subscription opened, a run woken by its stream. */
  onSubscribe?(): void;
  onWake?(): void;
}

export class PeerStreams {
  private readonly held = new Map<string, AbortController>();
  /** Per wait, the last "node read X, stream opened at Y" that woke it (see firstNews). */
  private readonly mismatches = new Map<string, string>();

  constructor(private readonly opts: PeerStreamsOptions) {}

  /** Hold a subscription to this wait's peer task until news, unless one is held or there is no room. */
  hold(wait: PeerWaitRecord, seen: StoredTaskState): void {
    if (!wait.peerTaskId || this.held.has(wait.waitId) || this.held.size >= this.opts.max) return;
    const stop = new AbortController();
    this.held.set(wait.waitId, stop);
    const release = () => {
      if (this.held.get(wait.waitId) === stop) this.held.delete(wait.waitId);
      stop.abort();
    };
    void this.follow(wait, wait.peerTaskId, seen, stop.signal, release)
      .catch((err) => this.opts.logger.debug({ err, runId: wait.runId }, 'peer stream dropped; polling continues'))
      .finally(release);
  }

  get size(): number {
    return this.held.size;
  }

  close(): void {
    for (const stop of this.held.values()) stop.abort();
    this.held.clear();
  }

  private async follow(
    wait: PeerWaitRecord,
    taskId: string,
    seen: StoredTaskState,
    signal: AbortSignal,
    release: () => void,
  ): Promise<void> {
    const client = await this.opts.resolve(wait.target, { runId: wait.runId, callerAgentId: this.opts.callerAgentId });
    this.opts.onSubscribe?.();
    let last: StoredTaskState | undefined;
    for await (const task of client.subscribe(taskId, { signal, throughInterrupts: true })) {
      // The first event is the task as it is now: news only if it moved since the node read it.
      // After it, only a new state is news: a progress update (working → working) or an artifact
      // changes nothing the node acts on, and waking it would only cost a tasks/get.
      const news =
        last === undefined ? task.state !== seen && this.firstNews(wait.waitId, seen, task.state) : task.state !== last;
      if (last !== undefined) this.mismatches.delete(wait.waitId);
      last = task.state;
      if (!news) continue;
      // Released before the wake: the execution it brings may hold again at once.
      release();
      await this.opts.wake(wait.runId);
      this.opts.onWake?.();
      return;
    }
  }

  /**
   * A peer whose stream opens at another state than its tasks/get says would otherwise wake the
   * run at every hold, in a loop: the same mismatch twice in a row wakes it once.
   */
  private firstNews(waitId: string, seen: StoredTaskState, now: StoredTaskState): boolean {
    const key = `${seen}>${now}`;
    if (this.mismatches.get(waitId) === key) return false;
    this.mismatches.delete(waitId);
    this.mismatches.set(waitId, key);
    if (this.mismatches.size > this.opts.max) this.mismatches.delete(this.mismatches.keys().next().value as string);
    return true;
  }
}
