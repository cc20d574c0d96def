// The worker: claims runnable runs with a lease, executes their nodes one committed step at a
// time, and hands the lease back when a run sleeps, suspends or ends. A crash loses at most the
// step in flight: its node runs again (at-least-once), but a committed completion never repeats.
import type { Logger } from 'pino';
import type { ChangeBus } from '../bus/bus.js';
import type { Metrics } from '../metrics.js';
import { ConflictError } from '../store/errors.js';
import type { RunRecord } from '../store/model.js';
import { isTerminal } from '../store/model.js';
import type { Store } from '../store/store.js';
import { PassLoop } from '../pass-loop.js';
import { type Clock, systemClock } from './clock.js';
import type { LocalWorker } from './engine.js';
import { definitionOf, type WorkflowSource } from './workflow/source.js';
import type { NodeServices } from './nodes/services.js';
import { BranchDrive } from './branch-drive.js';
import { isForked } from './branches.js';
import { type StepContext, workerStep } from './step.js';

export interface RunnerOptions {
  instanceId: string;
  logger: Logger;
  metrics: Metrics;
  clock?: Clock;
  /** How long a claim lasts without renewal; a crashed holder's runs are retaken after it. */
  leaseMs?: number;
  /** Fallback poll for due timers and expired leases when no wake-up arrives. */
  pollMs?: number;
  /** Runs executed at once by this instance. */
  concurrency?: number;
  /** Lent to the nodes this worker executes (NodeServices: outbound calls, other agents). */
  services?: NodeServices;
  /** Branches one run may have live at once (HANDOFF_MAX_BRANCHES). */
  maxBranches?: number;
  /** The executors by typeId (default: NODE_TYPES; see StepContext). */
  nodeTypes?: StepContext['nodeTypes'];
}

export class Runner implements LocalWorker {
  private readonly active = new Map<string, Promise<void>>();
  /** Runs claimed again while still active here: driven again when their drive ends. */
  private readonly reclaimed = new Map<string, RunRecord>();
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;
  /** Not started yet, or draining: no claims, no adoptions. */
  private stopping = true;
  /** Every commit of the worker requires that it still holds the run's lease. */
  private readonly step: StepContext;
  private readonly clock: Clock;
  private readonly loop: PassLoop;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: Store,
    private readonly workflows: WorkflowSource,
    private readonly bus: ChangeBus,
    private readonly opts: RunnerOptions,
  ) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.pollMs = opts.pollMs ?? 1_000;
    this.concurrency = opts.concurrency ?? 64;
    this.clock = opts.clock ?? systemClock;
    this.step = {
      clock: this.clock,
      fence: { owner: opts.instanceId },
      onExecuted: (type, outcome) => opts.metrics.nodeExecutions.inc({ type, outcome }),
      ...(opts.services ? { services: opts.services } : {}),
      ...(opts.maxBranches !== undefined ? { maxBranches: opts.maxBranches } : {}),
      ...(opts.nodeTypes ? { nodeTypes: opts.nodeTypes } : {}),
    };
    this.loop = new PassLoop(
      () => this.pass(),
      (err) => {
        this.opts.logger.error({ err }, 'claim pass failed');
        return this.pollMs;
      },
    );
  }

  /** A lease to write with a run created in this process, or undefined when there is no room. */
  reserve(): { owner: string; leaseMs: number } | undefined {
    if (this.stopping || this.active.size >= this.concurrency) return undefined;
    return { owner: this.opts.instanceId, leaseMs: this.leaseMs };
  }

  /** Drive a run this process created with a lease from `reserve` (no claim round trip). */
  adopt(run: RunRecord): void {
    this.launch(run);
  }

  start(): void {
    this.stopping = false;
    this.unsubscribe = this.bus.subscribeAll((n) => {
      if (n.status !== 'pending' && n.status !== 'running' && n.status !== 'cancelling') return;
      // Another instance's running run is leased by it, and it wakes itself for the timers it
      // sets; only a run created there without a lease (no room) is work for us. Claiming on
      // every remote step would cost each instance two queries per step of every other one.
      if (n.remote && n.status !== 'pending') return;
      // Deferred so a run this instance adopts at creation is already active: no needless claim.
      setImmediate(() => {
        if (!this.active.has(n.runId)) this.kick();
      });
    });
    this.loop.start();
  }

  /** Ask for a claim pass soon (see PassLoop: passes never overlap). */
  kick(): void {
    this.loop.kick();
  }

  /** Claim what there is room for; the delay until the next pass. */
  private async pass(): Promise<number> {
    const room = this.concurrency - this.active.size;
    // At capacity: a finishing run kicks the next pass; the poll is only a backstop.
    if (room <= 0) return this.pollMs;
    const runs = await this.store.runs.claim(this.opts.instanceId, this.leaseMs, room);
    for (const run of runs) this.launch(run);
    const next = await this.store.runs.nextWakeAt();
    // nextWakeAt already waits out leases held by others, so "due now" is at most a boundary
    // case (a timer checked a millisecond early): look again shortly, not after a whole poll.
    return next === undefined ? this.pollMs : Math.min(this.pollMs, next - this.clock.now());
  }

  private launch(run: RunRecord): void {
    if (this.active.has(run.runId)) {
      // Claimed again while its drive is finishing (it slept with a timer already due, and a
      // claim pass ran before the drive returned): the new lease is ours, so drive it once the
      // current drive is done, or it would sit leased and idle until the lease expires.
      this.reclaimed.set(run.runId, run);
      return;
    }
    this.opts.metrics.activeRuns.inc();
    const p = this.drive(run)
      .catch((err) => this.opts.logger.error({ err, runId: run.runId }, 'run execution failed'))
      .finally(() => {
        this.active.delete(run.runId);
        this.opts.metrics.activeRuns.dec();
        const again = this.reclaimed.get(run.runId);
        this.reclaimed.delete(run.runId);
        if (again && !this.stopping) this.launch(again);
        this.kick();
      });
    this.active.set(run.runId, p);
  }

  /** Execute one claimed run until it sleeps, suspends, ends, or the lease is lost. */
  private async drive(claimed: RunRecord): Promise<void> {
    const renew = setInterval(() => void this.renew(claimed.runId), Math.max(50, Math.floor(this.leaseMs / 3)));
    renew.unref();
    try {
      let run: RunRecord | undefined = claimed;
      while (run && !this.stopping) {
        run =
          isForked(run.cursor) && run.status !== 'cancelling'
            ? await new BranchDrive(this.store, definitionOf(this.workflows, run), run, this.step).drive()
            : await this.stepOrReload(run);
        // better-sqlite3 is synchronous: without a real yield a busy run would starve HTTP,
        // timers and lease renewal until it sleeps or ends.
        if (run) await new Promise((r) => setImmediate(r));
      }
    } finally {
      clearInterval(renew);
      if (this.stopping) await this.store.runs.releaseLease(claimed.runId, this.opts.instanceId).catch(() => {});
    }
  }

  private async renew(runId: string): Promise<void> {
    const ok = await this.store.runs.renewLease(runId, this.opts.instanceId, this.leaseMs).catch(() => false);
    if (!ok) this.opts.logger.warn({ runId }, 'lease lost; another worker may take the run over');
  }

  private async stepOrReload(run: RunRecord): Promise<RunRecord | undefined> {
    try {
      return await this.stepOnce(run);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      // Someone else committed first (a cancel, or a takeover): continue from what is stored.
      const fresh = await this.store.runs.get(run.runId);
      if (!fresh || fresh.leaseOwner !== this.opts.instanceId || isTerminal(fresh.status)) return undefined;
      return fresh;
    }
  }

  /** One committed step. Returns the run to keep driving, or undefined to stop. */
  private async stepOnce(run: RunRecord): Promise<RunRecord | undefined> {
    const out = await workerStep(this.store, definitionOf(this.workflows, run), run, this.step);
    if (out.kind === 'continue') return out.run;
    // Not runnable now (timer not due, suspended, terminal): hand the lease back.
    if (out.kind === 'idle') await this.store.runs.releaseLease(run.runId, this.opts.instanceId);
    return undefined;
  }

  /** Stop claiming, let in-flight steps finish (bounded), and hand every lease back. */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    this.loop.stop();
    const all = Promise.allSettled([...this.active.values()]);
    await Promise.race([all, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    await this.store.runs.releaseLeases(this.opts.instanceId);
  }
}
