// Stream waits: while a run waits on a peer task that the peer streams, this instance holds a
// subscription to it (0.3 tasks/resubscribe, 1.0 SubscribeToTask) and wakes the run at each change;
// the node then reads the task itself, as after a push. Nothing here is durable: a hold is only a
// faster wake-up. The node asks for a hold at every execution while it waits in stream mode, so
// after a crash, a drop or a failover the instance that next executes the node holds it again;
// polling stays the floor. A stream that ends at a state where the peer waits for its own people
// (input-required) is not held again until the task moves (the poll sees it move).
import type { Logger } from 'pino';
import type { PeerWaitRecord } from '../store/repos/peer-waits.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';
import { INTERRUPTED_STATES } from './normalize.js';

export interface PeerStreamsOptions {
  resolve(target: PeerTarget, run: RunContext): Promise<PeerClient>;
  /** Bring the run's next execution forward (runs.wake, then a claim pass). */
  wake(runId: string): Promise<void>;
  callerAgentId: string;
  logger: Logger;
  /** Subscriptions this instance holds at most; beyond it, waits rely on polling. */
  max: number;
}

export class PeerStreams {
  private readonly held = new Map<string, AbortController>();

  constructor(private readonly opts: PeerStreamsOptions) {}

  /** Hold a subscription to this wait's peer task, unless one is held or there is no room. */
  hold(wait: PeerWaitRecord): void {
    if (!wait.peerTaskId || this.held.has(wait.waitId) || this.held.size >= this.opts.max) return;
    const stop = new AbortController();
    this.held.set(wait.waitId, stop);
    void this.follow(wait, wait.peerTaskId, stop.signal)
      .catch((err) => this.opts.logger.debug({ err, runId: wait.runId }, 'peer stream dropped; polling continues'))
      .finally(() => this.held.delete(wait.waitId));
  }

  get size(): number {
    return this.held.size;
  }

  close(): void {
    for (const stop of this.held.values()) stop.abort();
    this.held.clear();
  }

  private async follow(wait: PeerWaitRecord, taskId: string, signal: AbortSignal): Promise<void> {
    const client = await this.opts.resolve(wait.target, { runId: wait.runId, callerAgentId: this.opts.callerAgentId });
    let seen: string | undefined;
    for await (const task of client.subscribe(taskId, { signal })) {
      // The first event is the task as it is now: the node has just read it, no news. After it,
      // only a new state is: a progress update (working → working) or an artifact changes nothing
      // the node acts on, and waking it would only cost a tasks/get.
      const news = seen === undefined ? INTERRUPTED_STATES.has(task.state) : task.state !== seen;
      if (news) await this.opts.wake(wait.runId);
      seen = task.state;
    }
  }
}
