// Cancel both ways, this side: a run cancelled while it waits on a peer task marks its wait
// (src/engine/cancel.ts, in the cancelling transaction); this pass then sends tasks/cancel to the
// peer, outside any transaction, and retries with backoff until the peer acknowledges or says the
// task is already over. Every instance may run it: a cancel sent twice is harmless.
//
// A wait with no peer task recorded is a send whose answer never came back (the run was cancelled,
// or gave up, while the send was being retried): the peer may have made the task all the same. It
// is in the call's own context (contextIdFor of the node's idempotency key, sent with the first
// message), so ListTasks by that context finds it, and every task there that has not ended is
// cancelled. A peer without ListTasks (A2A 0.3) cannot be asked: the wait is dropped with a warning.
import type { Logger } from 'pino';
import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import { type Backoff, nextWaitMs } from '../egress/backoff.js';
import { PassLoop } from '../pass-loop.js';
import type { PeerWaitRecord, PeerWaits } from '../store/repos/peer-waits.js';
import type { PeerClient, PeerTarget, RunContext } from './client.js';
import { PeerError, unsupported } from './errors.js';
import { contextIdFor } from './identity.js';

/** Peer answers that mean "nothing left to cancel". */
const OVER = new Set<number>([A2A_ERROR_CODE.TASK_NOT_CANCELABLE, A2A_ERROR_CODE.TASK_NOT_FOUND, 404, 409]);
/** A cancel the peer keeps refusing for another reason is dropped after this many attempts. */
const MAX_ATTEMPTS = 20;
const BATCH = 16;

export interface PeerCancelsOptions {
  waits: PeerWaits;
  resolve(target: PeerTarget, run: RunContext): Promise<PeerClient>;
  callerAgentId: string;
  logger: Logger;
  /** First retry delay and ceiling (the poll backoff's). */
  minMs: number;
  maxMs: number;
  /** Backstop poll when nothing kicks the pass. */
  pollMs: number;
}

export class PeerCancels {
  private readonly loop: PassLoop;
  /** The poll bounds, doubling without jitter (a pass sends due cancels in batches anyway). */
  private readonly backoff: Backoff;

  constructor(private readonly opts: PeerCancelsOptions) {
    this.backoff = { maxAttempts: MAX_ATTEMPTS, baseDelayMs: opts.minMs, maxDelayMs: opts.maxMs, jitter: 'none' };
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => {
        opts.logger.error({ err }, 'peer cancel pass failed');
        return opts.pollMs;
      },
    );
  }

  start(): void {
    this.loop.start();
  }

  /** A run was cancelled: look now. */
  kick(): void {
    this.loop.kick();
  }

  stop(): void {
    this.loop.stop();
  }

  private async pass(): Promise<number> {
    const due = await this.opts.waits.dueCancels(BATCH);
    await Promise.all(due.map((w) => this.cancel(w)));
    if (due.length === BATCH) return 0;
    const next = await this.opts.waits.nextCancelAt();
    return next === undefined ? this.opts.pollMs : Math.min(this.opts.pollMs, Math.max(0, next - Date.now()));
  }

  private async cancel(w: PeerWaitRecord): Promise<void> {
    const taskId = w.peerTaskId ?? '(unrecorded)';
    try {
      const client = await this.opts.resolve(w.target, { runId: w.runId, callerAgentId: this.opts.callerAgentId });
      if (w.peerTaskId !== undefined) await client.cancelTask(w.peerTaskId);
      else await this.cancelUnrecorded(client, w);
      await this.opts.waits.finish(w.waitId);
    } catch (err) {
      if (!(err instanceof PeerError)) throw err;
      const f = err.failure;
      const over = f.kind === 'peer' && OVER.has(f.code);
      const retryAfter = f.kind === 'transport' ? f.retryAfterMs : undefined;
      const wait = over || f.kind === 'refused' ? null : nextWaitMs(this.backoff, w.attempts + 1, retryAfter);
      if (wait === null) {
        if (!over) this.opts.logger.warn({ runId: w.runId, taskId, err: err.message }, 'peer cancel dropped');
        await this.opts.waits.finish(w.waitId);
        return;
      }
      await this.opts.waits.retryCancel(w.waitId, Date.now() + wait);
    }
  }

  /** The tasks a lost send may have made: every open task of the call's context. */
  private async cancelUnrecorded(client: PeerClient, w: PeerWaitRecord): Promise<void> {
    // The node's idempotency key (src/engine/step.ts), from which it derived the context it sent.
    const contextId = contextIdFor(`${w.runId}:${w.nodeId}:${w.ordinal}`);
    try {
      const cancelled = await client.cancelContext(contextId);
      if (cancelled.length > 0)
        this.opts.logger.info({ runId: w.runId, cancelled }, 'peer tasks of a lost send cancelled');
    } catch (err) {
      if (!(err instanceof PeerError) || !unsupported(err)) throw err;
      this.opts.logger.warn(
        { runId: w.runId, nodeId: w.nodeId },
        'peer cancel: the send was not answered and the peer cannot list tasks; a task it made stays open',
      );
    }
  }
}
