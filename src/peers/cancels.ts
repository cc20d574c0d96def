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
import { retryWaitMs } from '../egress/retry-after.js';
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

  constructor(private readonly opts: PeerCancelsOptions) {
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
      if ((f.kind === 'peer' && OVER.has(f.code)) || f.kind === 'refused' || w.attempts + 1 >= MAX_ATTEMPTS) {
        if (f.kind !== 'peer' || !OVER.has(f.code))
          this.opts.logger.warn({ runId: w.runId, taskId, err: err.message }, 'peer cancel dropped');
        await this.opts.waits.finish(w.waitId);
        return;
      }
      const base = Math.min(this.opts.maxMs, this.opts.minMs * 2 ** w.attempts);
      const retryAfter = f.kind === 'transport' ? (f.retryAfterMs ?? 0) : 0;
      await this.opts.waits.retryCancel(w.waitId, Date.now() + retryWaitMs(base, retryAfter, this.opts.maxMs));
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
