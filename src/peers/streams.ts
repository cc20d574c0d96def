// Stream waits: while a run sleeps on a peer task in stream mode, this instance holds a
// subscription to it (0.3 tasks/resubscribe, 1.0 SubscribeToTask) and asks for a wake at each
// piece of news: a state other than the one the node last read, then any change of state (a
// progress update or an artifact that leaves the state as it was is not news). Wakes go through
// PeerWakes (wakes.ts), so news, however frequent, reads the peer at most once per
// HANDOFF_AGENT_WAKE_MIN_MS, over the one subscription.
//
// A hold lasts as long as its node's wait, and not longer: each execution of the node that sleeps
// on the stream renews it (with the state it read), and the run's next commit (the bus) ends a
// hold that was not renewed — the node completed, failed, timed out, opened a clarification, or
// another instance executed it — as does any status but `running` (cancelling, cancelled, failed,
// waiting). A hold also ends when the peer closes the stream; the node's next execution holds
// again, no sooner than a backoff that doubles with each such drop (the poll bounds), so a peer
// that closes every subscription cannot drive a loop of them.
//
// A stream is read at a bounded rate (STREAM_EVENTS_PER_SECOND, a burst of as many): a flooding
// peer is slowed by TCP back-pressure, not paid for in CPU. At most HANDOFF_AGENT_MAX_STREAMS
// holds per instance; beyond, waits poll, counted and logged.
//
// Holds go on through interrupted states (input-required, auth-required): the node asks for one
// there only when it keeps waiting (onInputRequired 'wait': the peer's own people answer, as in
// the `delegate` workflow; or an answer it relayed that the peer has not taken up yet), and a
// peer's stream of a task that has not ended may stay open across them (Handoff's observe stream
// and the 1.x SDK's do; a 0.3 SDK peer ends it, and the poll floor remains).
//
// Nothing here is durable: a hold is only a faster wake-up. After a crash, a drop or a failover
// the instance that next executes the node holds again; polling stays the floor.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { TaskState } from '../a2a/model.js';
import type { RunNotice } from '../bus/bus.js';
import { type Backoff, stepMs } from '../egress/backoff.js';
import type { PeerWaitRecord } from '../store/repos/peer-waits.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';
import type { PeerWakes } from './wakes.js';

/** Events read per second from one stream, after a burst of as many. */
export const STREAM_EVENTS_PER_SECOND = 50;

export interface PeerStreamsOptions {
  resolve(target: PeerTarget, run: RunContext): Promise<PeerClient>;
  /** Where news goes: coalesced wakes of the run. */
  wakes: Pick<PeerWakes, 'request'>;
  callerAgentId: string;
  logger: Logger;
  /** Subscriptions this instance holds at most (HANDOFF_AGENT_MAX_STREAMS); beyond, waits poll. */
  max: number;
  /** Re-subscribing after a drop: the first delay, doubling to the ceiling (the poll bounds). */
  retryMinMs: number;
  retryMaxMs: number;
  /** Metrics: a subscription opened, an event read, a hold refused, holds now. */
  onSubscribe?(): void;
  onEvent?(): void;
  onRefused?(): void;
  onHeld?(size: number): void;
}

interface Hold {
  wait: PeerWaitRecord;
  stop: AbortController;
  /** The state the node last read. */
  seen: TaskState;
  /** Asked for again by an execution since the run's last commit. */
  renewed: boolean;
}

export class PeerStreams {
  /** By run: a run waits on one peer task at a time. */
  private readonly held = new Map<string, Hold>();
  /** Per wait, the last "node read X, stream opened at Y" that woke it (see firstNews). */
  private readonly mismatches = new Map<string, string>();
  /** Per wait, streams the peer closed, and when the next subscription may open. */
  private readonly drops = new Map<string, { count: number; notBefore: number }>();
  private capLogged = false;
  /** Re-subscribing after the n-th drop: the poll bounds, doubling, no jitter. */
  private readonly redial: Backoff;

  constructor(private readonly opts: PeerStreamsOptions) {
    this.redial = { maxAttempts: Infinity, baseDelayMs: opts.retryMinMs, maxDelayMs: opts.retryMaxMs, jitter: 'none' };
  }

  /** The node sleeps on this wait having read `seen`: renew its hold, or open one if there is room. */
  hold(wait: PeerWaitRecord, seen: TaskState): void {
    const mine = this.held.get(wait.runId);
    if (mine?.wait.waitId === wait.waitId) {
      mine.seen = seen;
      mine.renewed = true;
      return;
    }
    if (mine) this.release(mine);
    if (!wait.peerTaskId || (this.drops.get(wait.waitId)?.notBefore ?? 0) > Date.now()) return;
    if (this.held.size >= this.opts.max) {
      this.refuse(wait);
      return;
    }
    const hold: Hold = { wait, stop: new AbortController(), seen, renewed: true };
    this.held.set(wait.runId, hold);
    this.opts.onHeld?.(this.held.size);
    void this.follow(hold, wait.peerTaskId)
      .then(
        () => this.dropped(hold),
        (err) => {
          if (!hold.stop.signal.aborted) {
            this.opts.logger.debug({ err, runId: wait.runId }, 'peer stream dropped; polling continues');
            this.dropped(hold);
          }
        },
      )
      .finally(() => this.release(hold));
  }

  /** A run committed (the bus): a hold its execution did not renew, or of a run not running, ends. */
  noticed(n: RunNotice): void {
    const hold = this.held.get(n.runId);
    if (!hold) return;
    if (n.status === 'running' && hold.renewed) hold.renewed = false;
    else this.release(hold);
  }

  get size(): number {
    return this.held.size;
  }

  close(): void {
    for (const hold of [...this.held.values()]) this.release(hold);
  }

  private release(hold: Hold): void {
    hold.stop.abort();
    if (this.held.get(hold.wait.runId) !== hold) return;
    this.held.delete(hold.wait.runId);
    if (this.held.size < this.opts.max) this.capLogged = false;
    this.opts.onHeld?.(this.held.size);
  }

  private refuse(wait: PeerWaitRecord): void {
    this.opts.onRefused?.();
    if (this.capLogged) return;
    this.capLogged = true;
    this.opts.logger.warn(
      { runId: wait.runId, max: this.opts.max },
      'peer stream cap reached (HANDOFF_AGENT_MAX_STREAMS): further stream waits poll until holds end',
    );
  }

  /** The peer ended the stream while the wait went on: the next hold waits out a backoff. */
  private dropped(hold: Hold): void {
    if (hold.stop.signal.aborted) return;
    const id = hold.wait.waitId;
    const count = (this.drops.get(id)?.count ?? 0) + 1;
    const delay = stepMs(this.redial, count);
    this.drops.delete(id);
    this.drops.set(id, { count, notBefore: Date.now() + delay });
    if (this.drops.size > this.opts.max) this.drops.delete(this.drops.keys().next().value as string);
  }

  private async follow(hold: Hold, taskId: string): Promise<void> {
    const { wait, stop } = hold;
    const client = await this.opts.resolve(wait.target, { runId: wait.runId, callerAgentId: this.opts.callerAgentId });
    if (stop.signal.aborted) return;
    this.opts.onSubscribe?.();
    const bucket = { tokens: STREAM_EVENTS_PER_SECOND, at: Date.now() };
    let last: TaskState | undefined;
    for await (const task of client.subscribe(taskId, { signal: stop.signal, throughInterrupts: true })) {
      this.opts.onEvent?.();
      // The first event is the task as it is now: news only if it moved since the node read it.
      // After it, only a new state is news: a progress update (working → working) or an artifact
      // changes nothing the node acts on, and waking it would only cost a tasks/get.
      const news =
        last === undefined
          ? task.status.state !== hold.seen && this.firstNews(wait.waitId, hold.seen, task.status.state)
          : task.status.state !== last;
      if (last !== undefined) this.mismatches.delete(wait.waitId);
      last = task.status.state;
      if (news) await this.opts.wakes.request(wait, 'stream');
      await pace(bucket, stop.signal);
    }
  }

  /**
   * A peer whose stream opens at another state than its tasks/get says would otherwise wake the
   * run at every hold: the same mismatch twice in a row wakes it once.
   */
  private firstNews(waitId: string, seen: TaskState, now: TaskState): boolean {
    const key = `${seen}>${now}`;
    if (this.mismatches.get(waitId) === key) return false;
    this.mismatches.delete(waitId);
    this.mismatches.set(waitId, key);
    if (this.mismatches.size > this.opts.max) this.mismatches.delete(this.mismatches.keys().next().value as string);
    return true;
  }
}

/** A token bucket: the next event is read once the stream is within its rate again. */
async function pace(bucket: { tokens: number; at: number }, signal: AbortSignal): Promise<void> {
  const now = Date.now();
  bucket.tokens = Math.min(
    STREAM_EVENTS_PER_SECOND,
    bucket.tokens + ((now - bucket.at) * STREAM_EVENTS_PER_SECOND) / 1000,
  );
  bucket.at = now;
  bucket.tokens -= 1;
  if (bucket.tokens < 0) await sleep((-bucket.tokens * 1000) / STREAM_EVENTS_PER_SECOND, undefined, { signal });
}
