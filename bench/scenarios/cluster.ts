// Cluster mode: 1, 2 and 3 Handoff instances (separate `dist/src/cli/main.js serve`
// processes) on ONE PostgreSQL, each cluster on a fresh schema dropped afterwards (lib/cluster.ts).
//
// Per round, for each cluster size N (order rotated per round so no size always comes first):
//   send    blocking A2A `message/send` of the `echo` skill, 48 closed-loop connections split evenly
//           over the instances (48/N each: round-robin by connection) — tasks/s, p50/p99.
//   steps   `steps` runs {steps: 3, stepMs: 10} created through `POST /v1/runs`, 24 closed-loop
//           slots split evenly over the instances; a slot creates a run, waits until it is
//           `completed` (at most 3 s: then the run counts as stalled and the slot moves on),
//           creates the next. Completion is seen on Handoff's own PostgreSQL bus
//           (LISTEN on the cluster's channel: one NOTIFY per committed change, with the instance
//           that committed it), with a slow poll of the runs table as a backstop — no load on the
//           instances. Each 10 ms timer releases the run and any instance may claim the next
//           step, so this exercises the cross-instance claim path (SKIP LOCKED + NOTIFY wake-ups).
// and the ratios N/1 of both. Then one takeover measurement:
//   takeover  a fresh cluster of 2 instances with HANDOFF_LEASE_MS=2000,
//           HANDOFF_POLL_MS=200; K `steps` runs {steps: 10000, stepMs: 0} created on instance A
//           (a 0 ms step never sleeps, so A's worker holds each run's lease continuously — a run
//           with a real delay holds no lease while it sleeps and belongs to no instance then);
//           after a settle, SIGKILL A; for every run A held a lease on at the kill: time from the
//           kill until another instance commits a step of it (seen on the bus).
//
// Handoff only: other targets are reported as "not applicable". The harness's own `handoff`
// server (SQLite) idles while this runs. Everything fits the harness's per-run limit (warm-up +
// duration + 30 s): the measured windows are sized from it, and parts that no longer fit are
// skipped (and said so in the section) rather than overrun; the takeover's time is kept in reserve.
import { Agent } from 'node:http';
import { cpus } from 'node:os';
import { TERMINAL_STATUSES } from '../../src/store/model.js';
import { sleep } from '../lib/clock.js';
import { startCluster, type Cluster, type Notice } from '../lib/cluster.js';
import { PG_URL, probePg, type PgInfo } from '../lib/handoff-server.js';
import { http } from '../lib/http.js';
import { closedLoop, runLoad, type Step } from '../lib/load.js';
import { loadAverages, readCpuUs, readSystemCpu } from '../lib/proc.js';
import {
  prefixed,
  registerScenario,
  type CellResult,
  type Figures,
  type ScenarioContext,
  type ScenarioResult,
} from '../lib/registry.js';
import { fmtFixed, fmtInt, fmtMs, mdTable, perRun, rateCell, shortError, type Section } from '../lib/report.js';
import { sendNew } from '../lib/rpc.js';
import { median, medians, percentile, pooled, total } from '../lib/stats.js';

const NAME = 'cluster';
const TARGET = 'handoff';
const SIZES = [1, 2, 3] as const;
/** Closed-loop connections of `send` in all, split evenly over the instances: divisible by 1, 2, 3. */
const CONNECTIONS = 48;
/** Runs in flight of `steps` in all (closed-loop slots), split evenly. Fewer than CONNECTIONS: a run
 * takes ≥ 3 timer round trips, and 24 in flight already keep the cluster saturated (runs queue for
 * the workers) while the pipeline fills faster in a short warm-up. */
const SLOTS = 24;
const STEPS_INPUTS = { steps: 3, stepMs: 10 };
const TAKEOVER = {
  leaseMs: 2000,
  pollMs: 200,
  inputs: { steps: 10_000, stepMs: 0 },
  instances: 2,
  runs: (quick: boolean): number => (quick ? 4 : 6),
  settleMs: (quick: boolean): number => (quick ? 600 : 800),
  /** Give up waiting for a takeover this long after the lease would have expired. */
  graceMs: 5000,
};
/** Renewal interval of src/engine/runner.ts: leaseMs / 3. */
const RENEW_MS = Math.max(50, Math.floor(TAKEOVER.leaseMs / 3));
/** Run statuses after which a run never changes (Handoff's own list). */
const TERMINAL: ReadonlySet<string> = TERMINAL_STATUSES;

// ─── time plan ───────────────────────────────────────────────────────────────────────────────────

/** Rough cost of the fixed parts of a round (s), on a busy 2-core box: cluster starts (1, 2, 3
 * instances, in parallel; replaced by what was seen when larger), the takeover (start of 2, settle,
 * lease, reads), stop + schema drop per cluster, drain per steps window, and a safety margin. */
const FIXED_S = { start: [2, 3, 4], takeover: 3, stop: 0.4, drain: 1, margin: 3 };
/** Start time (s) per cluster size seen so far (the largest), to size the windows of later runs. */
const seenStartS = new Map<number, number>();
const startEstimateS = (n: number): number => Math.max(FIXED_S.start[n - 1] ?? 5, seenStartS.get(n) ?? 0);

interface Plan {
  warmS: number;
  measureS: number;
}

/** The shortest windows a busy machine may force (see runCluster). */
const MIN_WINDOW: Plan = { warmS: 0.3, measureS: 0.8 };

/** Six measured windows (send + steps × 3 sizes) share what the harness's per-run limit leaves. */
function plan(ctx: ScenarioContext): Plan {
  const limitS = ctx.mode.warmupS + ctx.mode.durationS + 30;
  const starts = SIZES.reduce((a, n) => a + startEstimateS(n), 0) + startEstimateS(TAKEOVER.instances);
  const fixed =
    starts +
    TAKEOVER.settleMs(ctx.mode.quick) / 1000 +
    FIXED_S.takeover +
    4 * FIXED_S.stop +
    3 * (FIXED_S.drain + WARM_EXTRA_S / 2) +
    FIXED_S.margin;
  const windowS = Math.max(1, (limitS - fixed) / 6);
  const warmS = Math.min(ctx.mode.warmupS, Math.max(0.3, 0.25 * windowS));
  return { warmS, measureS: Math.max(0.5, Math.min(ctx.mode.durationS, windowS - warmS)) };
}

// ─── CPU accounting over a window ────────────────────────────────────────────────────────────────

interface CpuWindow {
  wallUs: number;
  /** Sum over the instances. */
  handoffUs: number;
  perInstanceUs: number[];
  /** PostgreSQL backends serving the instances (by application_name, looked up at the start). */
  dbUs: number;
  dbBackends: number;
  loadGenUs: number;
  /** Machine-wide busy time (all cores). */
  busyUs: number;
}

function tryCpu(pid: number): number | undefined {
  try {
    return readCpuUs(pid);
  } catch {
    return undefined;
  }
}

async function cpuWindow(cluster: Cluster): Promise<() => CpuWindow> {
  const backends = await cluster.backendPids();
  const db0 = new Map(backends.map((p) => [p, tryCpu(p)] as const));
  const inst0 = cluster.instances.map((i) => i.cpuUs());
  const sys0 = readSystemCpu();
  const lg0 = process.cpuUsage();
  const t0 = performance.now();
  return () => {
    const wallUs = (performance.now() - t0) * 1000;
    const lg = process.cpuUsage(lg0);
    const per = cluster.instances.map((i, k) => i.cpuUs() - (inst0[k] ?? NaN));
    let dbUs = 0;
    for (const [pid, before] of db0) {
      const after = tryCpu(pid);
      if (before !== undefined && after !== undefined) dbUs += after - before;
    }
    return {
      wallUs,
      handoffUs: per.filter(Number.isFinite).reduce((a, b) => a + b, 0),
      perInstanceUs: per,
      dbUs,
      dbBackends: backends.length,
      loadGenUs: lg.user + lg.system,
      busyUs: readSystemCpu().busyUs - sys0.busyUs,
    };
  };
}

/** CPU figures of a window, per unit of work (`units`: tasks or completed runs). */
function cpuFigures(w: CpuWindow, units: number): Figures {
  const pct = (us: number): number => (us / w.wallUs) * 100;
  return {
    handoffCpuPct: pct(w.handoffUs),
    handoffCpuUsPerUnit: w.handoffUs / units,
    dbCpuPct: pct(w.dbUs),
    dbCpuUsPerUnit: w.dbUs / units,
    dbBackends: w.dbBackends,
    loadGenCpuPct: pct(w.loadGenUs),
    /** Busy time of the whole machine in % of all its cores. */
    machineBusyPct: pct(w.busyUs) / cpus().length,
    otherCpuPct: Math.max(0, pct(w.busyUs - w.handoffUs - w.dbUs - w.loadGenUs)),
  };
}

// ─── (a) message/send ────────────────────────────────────────────────────────────────────────────

const sendSteps = (): Step[] => [
  {
    request: () => ({ method: 'POST', path: '/v1/a2a', body: sendNew('echo') }),
    check: (b) => b.includes('"state":"completed"'),
    completes: (b) => b.includes('"state":"completed"'),
  },
];

async function sendPhase(cluster: Cluster, p: Plan): Promise<Figures> {
  const per = CONNECTIONS / cluster.instances.length;
  const all = (durationS: number) =>
    Promise.all(
      cluster.instances.map((i) => runLoad({ baseUrl: i.base, connections: per, durationS, steps: sendSteps() })),
    );
  if (p.warmS > 0) await all(p.warmS);
  const end = await cpuWindow(cluster);
  const loads = await all(p.measureS);
  const w = end();
  const latencies = pooled(loads.map((l) => l.samples));
  const requests = latencies.length;
  const durationS = Math.max(...loads.map((l) => l.durationS));
  const ok = loads.reduce((n, l) => n + l.flows, 0);
  const failures = loads.reduce((n, l) => n + l.errors + l.non2xx + l.unexpected, 0);
  const shares = loads.map((l) => l.requests / Math.max(1, requests));
  return {
    reqPerSec: requests / durationS,
    okPerSec: ok / durationS,
    requests,
    failures,
    p50Ms: percentile(latencies, 50),
    p90Ms: percentile(latencies, 90),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    minShare: Math.min(...shares),
    maxShare: Math.max(...shares),
    measureS: durationS,
    ...cpuFigures(w, requests),
  };
}

// ─── (b) steps runs ──────────────────────────────────────────────────────────────────────────────

/** POST /v1/runs: the answer's HTTP status (0: no answer) and run id. */
async function postRun(agent: Agent, base: string, body: unknown): Promise<{ status: number; runId?: string }> {
  const res = await http('POST', `${base}/v1/runs`, { body, agent }).catch(() => ({ status: 0, text: '' }));
  const runId = /"runId":"([^"]+)"/.exec(res.text)?.[1];
  return runId ? { status: res.status, runId } : { status: res.status };
}

interface Pending {
  createdAt: number;
  resolve(status: string): void;
}

/** A slot stops waiting for its run after this long and starts the next one; the run is "stalled". */
const STALL_MS = 3000;
/** The steps warm-up may run this much longer than planned, until SLOTS runs have completed. */
const WARM_EXTRA_S = 1;
/** After the window, runs in flight get this long to complete before they are examined. */
const DRAIN_MS = 1500;

/** Waits for runs to end, from the bus (NOTIFY) and, as a backstop, a slow poll of the runs table. */
class Completions {
  private readonly pending = new Map<string, Pending>();
  /** Terminal notices of runs not (yet) registered: the POST answer may come after the notice. */
  private readonly early = new Map<string, string>();
  commitsBy = new Map<string, number>();
  counting = false;
  /** Completions the poll saw first; `late` of them got their notice afterwards (slow, not lost). */
  backstopHits = 0;
  late = 0;
  /** Largest delay seen from a run's commit (completed_at) to its notice, among backstop hits. */
  maxNoticeLagMs = 0;
  private readonly byBackstop = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly cluster: Cluster) {}

  onNotice = (n: Notice): void => {
    if (this.counting) this.commitsBy.set(n.origin, (this.commitsBy.get(n.origin) ?? 0) + 1);
    if (!TERMINAL.has(n.status)) return;
    const polledAt = this.byBackstop.get(n.runId);
    if (polledAt !== undefined) {
      this.byBackstop.delete(n.runId);
      this.late++;
      this.maxNoticeLagMs = Math.max(this.maxNoticeLagMs, Date.now() - polledAt);
      return;
    }
    this.settle(n.runId, n.status);
  };

  private settle(runId: string, status: string): boolean {
    const p = this.pending.get(runId);
    if (!p) {
      this.early.set(runId, status);
      return false;
    }
    this.pending.delete(runId);
    p.resolve(status);
    return true;
  }

  /** The run's end state, or 'stalled' after STALL_MS (the run stays on the stalled list). */
  wait(runId: string, createdAt: number): Promise<string> {
    const early = this.early.get(runId);
    if (early) {
      this.early.delete(runId);
      return Promise.resolve(early);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(runId);
        this.stalled.add(runId);
        resolve('stalled');
      }, STALL_MS);
      this.pending.set(runId, {
        createdAt,
        resolve: (s) => {
          clearTimeout(timer);
          resolve(s);
        },
      });
    });
  }

  /** Runs a slot gave up on, and runs still waited on at the end. */
  readonly stalled = new Set<string>();

  pendingIds(): string[] {
    return [...this.pending.keys()];
  }

  /** Every 250 ms: runs waited on for > 1 s that the store says have ended (a slow or lost NOTIFY). */
  startBackstop(): void {
    const tick = async (): Promise<void> => {
      const old = [...this.pending].filter(([, p]) => performance.now() - p.createdAt > 1000).map(([id]) => id);
      if (old.length) {
        try {
          const rows = await this.cluster.query<{ run_id: string; status: string; completed_at: string | null }>(
            `select run_id, status, completed_at from runs where run_id = any($1) and status in ` +
              `('completed', 'failed', 'cancelled')`,
            [old],
          );
          for (const r of rows) {
            if (this.settle(r.run_id, r.status)) {
              this.backstopHits++;
              this.byBackstop.set(r.run_id, r.completed_at ? Date.parse(r.completed_at) : Date.now());
            }
          }
        } catch {
          // the schema may be going away at the end; the drain reports what is left
        }
      }
      this.timer = setTimeout(() => void tick(), 250);
    };
    this.timer = setTimeout(() => void tick(), 250);
  }

  stop(): void {
    clearTimeout(this.timer);
    for (const p of this.pending.values()) p.resolve('unfinished');
    this.pending.clear();
  }
}

async function stepsPhase(cluster: Cluster, p: Plan): Promise<Figures> {
  const n = cluster.instances.length;
  const perInstance = SLOTS / n;
  const agents = cluster.instances.map(() => new Agent({ keepAlive: true, maxSockets: perInstance }));
  const done = new Completions(cluster);
  const unlisten = await cluster.listen(done.onNotice);
  done.startBackstop();
  const body = { workflowId: 'steps', inputs: STEPS_INPUTS };
  let creating = true;
  let window: { t0: number; t1: number } | undefined;
  const latencies: number[] = [];
  let created = 0;
  let createErrors = 0;
  let failed = 0;
  let stalledInWindow = 0;
  let completedAll = 0;

  // One run of slot k: created on instance k mod N, awaited on the bus.
  const oneRun = async (_: number, k: number): Promise<void> => {
    const i = k % n;
    const t = performance.now();
    const res = await postRun(agents[i]!, cluster.instances[i]!.base, body);
    if (res.status !== 201 || !res.runId) {
      createErrors++;
      await sleep(50);
      return;
    }
    created++;
    const status = await done.wait(res.runId, t);
    const end = performance.now();
    const inWindow = window !== undefined && end >= window.t0 && (window.t1 === 0 || end <= window.t1);
    if (status === 'stalled' || status === 'unfinished') {
      if (inWindow) stalledInWindow++;
    } else if (status !== 'completed') failed++;
    else {
      completedAll++;
      if (inWindow) latencies.push(end - t);
    }
  };

  const slots = closedLoop({ workers: SLOTS, more: () => creating }, oneRun);
  // Warm-up: at least warmS, and until the pipeline has turned over once (SLOTS runs completed),
  // so the window sees steady state rather than the first runs' fill — but at most WARM_EXTRA_S more.
  const warmT0 = performance.now();
  await sleep(p.warmS * 1000);
  while (completedAll < SLOTS && performance.now() - warmT0 < (p.warmS + WARM_EXTRA_S) * 1000) await sleep(20);
  const warmedS = (performance.now() - warmT0) / 1000;
  const end = await cpuWindow(cluster);
  done.counting = true;
  window = { t0: performance.now(), t1: 0 };
  const createdBefore = created;
  await sleep(p.measureS * 1000);
  window.t1 = performance.now();
  done.counting = false;
  const w = end();
  const createdInWindow = created - createdBefore;
  creating = false;
  // Drain: the runs in flight end on their own (≤ a second or so on a busy box, unless stuck).
  const drainT0 = performance.now();
  while (done.pendingIds().length > 0 && performance.now() - drainT0 < DRAIN_MS) await sleep(20);
  const drainMs = performance.now() - drainT0;
  const unfinished = done.pendingIds();
  await sleep(200); // late notices of backstop completions
  done.stop();
  await slots;
  await unlisten();
  for (const a of agents) a.destroy();

  const measuredS = (window.t1 - window.t0) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const commits = cluster.instances.map((i) => done.commitsBy.get(i.id) ?? 0);
  const totalCommits = commits.reduce((a, b) => a + b, 0);
  const shares = commits.map((c) => c / Math.max(1, totalCommits));
  return {
    runsPerSec: sorted.length / measuredS,
    completed: sorted.length,
    createdPerSec: createdInWindow / measuredS,
    created,
    createErrors,
    failedRuns: failed,
    /** Runs a slot gave up on after STALL_MS (whole phase), and runs still open after the drain. */
    stalled: done.stalled.size,
    stalledInWindow,
    unfinished: unfinished.length,
    failures: createErrors + failed,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: percentile(sorted, 100),
    minShare: Math.min(...shares),
    maxShare: Math.max(...shares),
    backstopHits: done.backstopHits,
    backstopLate: done.late,
    /** Completions never announced on the bus (backstop hits whose notice did not follow). */
    noticeLost: done.backstopHits - done.late,
    maxNoticeLagMs: done.maxNoticeLagMs,
    drainMs,
    warmS: warmedS,
    measureS: measuredS,
    ...cpuFigures(w, sorted.length),
  };
}

// ─── (d) takeover ────────────────────────────────────────────────────────────────────────────────

async function takeoverPhase(ctx: ScenarioContext): Promise<Figures> {
  const size = TAKEOVER.instances;
  const settle = TAKEOVER.settleMs(ctx.mode.quick);
  const k = TAKEOVER.runs(ctx.mode.quick);
  const cluster = await startCluster(size, {
    HANDOFF_LEASE_MS: String(TAKEOVER.leaseMs),
    HANDOFF_POLL_MS: String(TAKEOVER.pollMs),
  });
  seenStartS.set(size, Math.max(seenStartS.get(size) ?? 0, cluster.startMs / 1000));
  try {
    const [a, ...survivors] = cluster.instances;
    if (!a) throw new Error('no instance');
    const notices: Notice[] = [];
    let killAt = Infinity;
    const firstAfter = new Map<string, Notice>();
    const stolenBefore = new Set<string>();
    let ours = new Set<string>();
    const unlisten = await cluster.listen((nt) => {
      if (!ours.has(nt.runId)) return;
      if (nt.origin === a.id) {
        if (nt.at < killAt) notices.push(nt);
        return;
      }
      if (nt.at < killAt) stolenBefore.add(nt.runId);
      else if (!firstAfter.has(nt.runId)) firstAfter.set(nt.runId, nt);
    });
    try {
      const agent = new Agent({ keepAlive: true, maxSockets: k });
      const created = await Promise.all(
        Array.from({ length: k }, () => postRun(agent, a.base, { workflowId: 'steps', inputs: TAKEOVER.inputs })),
      );
      agent.destroy();
      const ids = created.map((c) => c.runId).filter((x): x is string => x !== undefined);
      if (ids.length !== k) throw new Error(`only ${ids.length} of ${k} runs created on ${a.id}`);
      ours = new Set(ids);
      // Settle: A drives the runs; the survivors only watch (their CPU here is the cost of that).
      const survivorCpu0 = survivors.map((s) => s.cpuUs());
      const settleT0 = performance.now();
      await sleep(settle);
      const settleMs = performance.now() - settleT0;
      const survivorCpuPct =
        (survivors.reduce((sum, s, i) => sum + (s.cpuUs() - (survivorCpu0[i] ?? NaN)), 0) / (settleMs * 1000)) * 100;
      const aCommitsPerSec = (notices.filter((nt) => nt.at >= settleT0).length / settleMs) * 1000;

      killAt = performance.now();
      const killEpoch = Date.now();
      a.kill();
      const rows = await cluster.query<{
        run_id: string;
        lease_owner: string | null;
        lease_expires_at: string | null;
        next_seq: number;
        status: string;
      }>('select run_id, lease_owner, lease_expires_at, next_seq, status from runs where run_id = any($1)', [ids]);
      const orphans = rows.filter((r) => r.lease_owner === a.id);
      const remaining = orphans.map((r) => Number(r.lease_expires_at) - killEpoch);
      const deadline = killAt + TAKEOVER.leaseMs + TAKEOVER.graceMs;
      while (performance.now() < deadline && orphans.some((r) => !firstAfter.has(r.run_id))) await sleep(10);
      const took = orphans.flatMap((r) => {
        const nt = firstAfter.get(r.run_id);
        return nt ? [{ ms: nt.at - killAt, remaining: Number(r.lease_expires_at) - killEpoch, by: nt.origin }] : [];
      });
      const ms = took.map((t) => t.ms).sort((x, y) => x - y);
      const excess = took.map((t) => t.ms - t.remaining).sort((x, y) => x - y);
      const by = new Map<string, number>();
      for (const t of took) by.set(t.by, (by.get(t.by) ?? 0) + 1);
      // Runs not taken over: still there and unfinished? (Read once more, after the wait.)
      const after = await cluster.query<{
        run_id: string;
        lease_owner: string | null;
        status: string;
        next_seq: number;
      }>('select run_id, lease_owner, status, next_seq from runs where run_id = any($1)', [
        orphans.map((r) => r.run_id),
      ]);
      const advanced = after.filter(
        (r) => r.next_seq > (orphans.find((o) => o.run_id === r.run_id)?.next_seq ?? Infinity),
      ).length;
      const f: Figures = {
        instances: size,
        runs: k,
        leaseMs: TAKEOVER.leaseMs,
        pollMs: TAKEOVER.pollMs,
        renewMs: RENEW_MS,
        settleMs: settle,
        orphans: orphans.length,
        notOnAAtKill: rows.length - orphans.length,
        stolenBeforeKill: stolenBefore.size,
        takenOver: took.length,
        notTakenOver: orphans.length - took.length,
        advancedInStore: advanced,
        medianMs: median(ms),
        minMs: ms.length ? ms[0]! : NaN,
        maxMs: ms.length ? ms[ms.length - 1]! : NaN,
        remainingLeaseMedianMs: median(remaining),
        remainingLeaseMinMs: remaining.length ? Math.min(...remaining) : NaN,
        remainingLeaseMaxMs: remaining.length ? Math.max(...remaining) : NaN,
        excessMedianMs: median(excess),
        excessMaxMs: excess.length ? excess[excess.length - 1]! : NaN,
        survivorCpuPct,
        aCommitsPerSec,
        maxBySurvivor: by.size ? Math.max(...by.values()) : 0,
        survivorsUsed: by.size,
        startMs: cluster.startMs,
      };
      for (const t of took) f[`sample.${took.indexOf(t)}`] = t.ms;
      return f;
    } finally {
      await unlisten();
    }
  } finally {
    await cluster.stop();
  }
}

// ─── the run ─────────────────────────────────────────────────────────────────────────────────────

let pgInfo: PgInfo | undefined;
let round = 0;
let lastPlan: Plan | undefined;
let firstRunAt: string | undefined;
let lastRunAt: string | undefined;
let mode: ScenarioContext['mode'] | undefined;
/** Why parts were skipped or failed, per part, over all runs (shown in the section). */
const problems: string[] = [];

async function runCluster(ctx: ScenarioContext): Promise<Figures> {
  if (ctx.target.name !== TARGET) {
    throw new Error(`not applicable: Handoff-only scenario (--targets ${TARGET} skips ${ctx.target.name})`);
  }
  mode = ctx.mode;
  const stamp = new Date().toISOString();
  firstRunAt ??= stamp;
  lastRunAt = stamp;
  const hardStop = performance.now() + (ctx.mode.warmupS + ctx.mode.durationS + 30) * 1000 - FIXED_S.margin * 1000;
  const p = plan(ctx);
  lastPlan = p;
  pgInfo ??= await probePg();
  const order = SIZES.map((_, i) => SIZES[(i + round) % SIZES.length]!);
  const thisRound = ++round;
  const figures: Figures = { loadAvg1: loadAverages()[0], warmS: p.warmS, measureS: p.measureS };
  const leftS = (): number => (hardStop - performance.now()) / 1000;
  const note = (what: string): void => {
    problems.push(`run ${thisRound}: ${what}`);
    ctx.log(`  cluster: ${what}`);
  };

  const takeoverNeed = (): number =>
    startEstimateS(TAKEOVER.instances) + TAKEOVER.settleMs(ctx.mode.quick) / 1000 + FIXED_S.takeover;
  for (const [idx, n] of order.entries()) {
    // The takeover's time is kept in reserve: on a machine too slow for everything, a size is
    // skipped (the other runs still give its ratio) rather than the only failover figure.
    const need =
      startEstimateS(n) + 2 * (MIN_WINDOW.warmS + MIN_WINDOW.measureS) + FIXED_S.drain + FIXED_S.stop + takeoverNeed();
    if (leftS() < need) {
      note(
        `${n} instance(s) skipped: ${leftS().toFixed(1)} s left, ${need.toFixed(1)} s needed ` +
          `(incl. ${takeoverNeed().toFixed(1)} s kept for the takeover)`,
      );
      continue;
    }
    let cluster: Cluster | undefined;
    try {
      cluster = await startCluster(n);
      seenStartS.set(n, Math.max(seenStartS.get(n) ?? 0, cluster.startMs / 1000));
      figures[`n${n}.startMs`] = cluster.startMs;
      // Slow starts (a busy machine) shorten this size's windows so the later sizes and the
      // takeover still fit; never below MIN_WINDOW.
      const perSize = FIXED_S.drain + WARM_EXTRA_S / 2 + FIXED_S.stop;
      const later = order.slice(idx + 1).reduce((a, m) => a + startEstimateS(m) + perSize, 0) + takeoverNeed();
      const windowS = Math.min(p.warmS + p.measureS, (leftS() - later - perSize) / (2 * (order.length - idx)));
      const warmS = Math.min(p.warmS, Math.max(MIN_WINDOW.warmS, 0.25 * windowS));
      const q: Plan = { warmS, measureS: Math.max(MIN_WINDOW.measureS, Math.min(p.measureS, windowS - warmS)) };
      if (q.measureS < p.measureS - 0.05)
        ctx.log(
          `  cluster ${n} instance(s): windows shortened to ${q.warmS.toFixed(2)} + ` +
            `${q.measureS.toFixed(2)} s (slow starts)`,
        );
      const send = await sendPhase(cluster, q);
      Object.assign(figures, prefixed(`n${n}.send`, send));
      ctx.log(
        `  cluster ${n} instance(s): message/send ${fmtInt(send.reqPerSec)} tasks/s p50 ` +
          `${fmtMs(send.p50Ms)} p99 ${fmtMs(send.p99Ms)} ms, Handoff ` +
          `${fmtInt(send.handoffCpuUsPerUnit)} + PG ${fmtInt(send.dbCpuUsPerUnit)} µs/task, ` +
          `machine busy ${fmtInt(send.machineBusyPct)} %, failures ${fmtInt(send.failures)}`,
      );
      const stepsNeed = q.warmS + WARM_EXTRA_S / 2 + q.measureS + FIXED_S.drain + FIXED_S.stop + takeoverNeed();
      if (leftS() < stepsNeed) {
        note(
          `${n} instance(s): steps skipped, ${leftS().toFixed(1)} s left, ` +
            `${stepsNeed.toFixed(1)} s needed (incl. ${takeoverNeed().toFixed(1)} s kept for the ` +
            `takeover)`,
        );
      } else {
        const steps = await stepsPhase(cluster, q);
        Object.assign(figures, prefixed(`n${n}.steps`, steps));
        ctx.log(
          `  cluster ${n} instance(s): steps ${fmtInt(steps.runsPerSec)} runs/s p50 ` +
            `${fmtMs(steps.p50Ms)} p99 ${fmtMs(steps.p99Ms)} ms, Handoff ` +
            `${fmtInt(steps.handoffCpuUsPerUnit)} + PG ${fmtInt(steps.dbCpuUsPerUnit)} µs/run, ` +
            `machine busy ${fmtInt(steps.machineBusyPct)} %, failures ${fmtInt(steps.failures)}, ` +
            `commit share ${fmtFixed(steps.minShare, 2)}–${fmtFixed(steps.maxShare, 2)}`,
        );
      }
    } catch (err) {
      note(`${n} instance(s) failed: ${shortError(err)}`);
    } finally {
      await cluster?.stop().catch((err: unknown) => note(`${n} instance(s): stop failed: ${shortError(err)}`));
    }
  }
  for (const m of [2, 3]) {
    for (const part of ['send', 'steps'] as const) {
      const key = part === 'send' ? 'reqPerSec' : 'runsPerSec';
      const r = (figures[`n${m}.${part}.${key}`] ?? NaN) / (figures[`n1.${part}.${key}`] ?? NaN);
      if (Number.isFinite(r)) figures[`ratio${m}.${part}`] = r;
    }
  }

  if (leftS() < takeoverNeed()) {
    note(`takeover skipped: ${leftS().toFixed(1)} s left, ${takeoverNeed().toFixed(1)} s needed`);
  } else {
    try {
      const t = await takeoverPhase(ctx);
      Object.assign(figures, prefixed('takeover', t));
      ctx.log(
        `  cluster takeover (${t.instances} instances, lease ${t.leaseMs} ms, poll ` +
          `${t.pollMs} ms): ${t.takenOver}/${t.orphans} orphaned runs taken over, median ` +
          `${fmtInt(t.medianMs)} ms, max ${fmtInt(t.maxMs)} ms (lease left at kill: median ` +
          `${fmtInt(t.remainingLeaseMedianMs)} ms; takeover − lease left: median ` +
          `${fmtInt(t.excessMedianMs)}, max ${fmtInt(t.excessMaxMs)} ms)`,
      );
    } catch (err) {
      note(`takeover failed: ${shortError(err)}`);
    }
  }
  // Headline copies for the harness's log line and per-run table: the 1-instance message/send.
  for (const key of ['reqPerSec', 'p50Ms', 'p99Ms', 'failures', 'otherCpuPct'] as const) {
    const v = figures[`n1.send.${key}`];
    if (v !== undefined) figures[key] = v;
  }
  return figures;
}

// ─── report ──────────────────────────────────────────────────────────────────────────────────────

const ratioFmt = (n: number | undefined): string =>
  n !== undefined && Number.isFinite(n) ? `${fmtFixed(n, 2)}×` : '–';

/** "1.87× (1.80, 1.92, 1.95)": median of the per-run (same round) ratios, and each of them. */
function ratioCell(runs: Figures[], key: string): string {
  const m = median(runs.map((r) => r[key] ?? NaN));
  return Number.isFinite(m) ? `**${ratioFmt(m)}** (${perRun(runs, key, ratioFmt)})` : '–';
}

function shareCell(m: Figures, p: string, n: number): string {
  if (n === 1) return '1 instance';
  return (
    `${fmtFixed((m[`${p}minShare`] ?? NaN) * 100, 0)}–${fmtFixed((m[`${p}maxShare`] ?? NaN) * 100, 0)} ` +
    `% (even: ${fmtFixed(100 / n, 0)} %)`
  );
}

function throughputRows(runs: Figures[], part: 'send' | 'steps'): string[][] {
  const m = medians(runs);
  const rateKey = part === 'send' ? 'reqPerSec' : 'runsPerSec';
  return SIZES.map((n) => {
    const p = `n${n}.${part}.`;
    const measured = runs.filter((r) => r[`${p}${rateKey}`] !== undefined);
    if (measured.length === 0) return [`**${n}**`, 'not measured (see below)', ...Array.from({ length: 11 }, () => '')];
    const counts =
      part === 'send'
        ? `${fmtInt(total(measured, `${p}failures`))} / ${fmtInt(total(measured, `${p}requests`))}`
        : `${fmtInt(total(measured, `${p}failures`))} / ` +
          `${fmtInt(total(measured, `${p}created`))}; **stalled ` +
          `${fmtInt(total(measured, `${p}stalled`) + total(measured, `${p}unfinished`))}**; ` +
          `backstop first ${fmtInt(total(measured, `${p}backstopHits`))}, never notified ` +
          `${fmtInt(total(measured, `${p}noticeLost`))}`;
    return [
      `**${n}**${measured.length < runs.length ? ` (${measured.length}/${runs.length} runs)` : ''}`,
      rateCell(measured, `${p}${rateKey}`),
      n === 1 ? 'baseline' : ratioCell(measured, `ratio${n}.${part}`),
      fmtMs(m[`${p}p50Ms`]),
      `**${fmtMs(m[`${p}p99Ms`])}**`,
      counts,
      `**${fmtInt(m[`${p}handoffCpuUsPerUnit`])}**`,
      fmtInt(m[`${p}dbCpuUsPerUnit`]),
      `${fmtInt(m[`${p}handoffCpuPct`])} / ${fmtInt(m[`${p}dbCpuPct`])} / ` +
        `${fmtInt(m[`${p}loadGenCpuPct`])} / ${fmtInt(m[`${p}otherCpuPct`])}`,
      `**${fmtInt(m[`${p}machineBusyPct`])}**`,
      shareCell(m, p, n),
      part === 'steps' ? fmtInt(m[`${p}createdPerSec`]) : fmtInt(m[`n${n}.startMs`]),
    ];
  });
}

/** How many `steps` runs stalled, and how many completions the backstop poll saw first, if any. */
function stalledBullet(runs: Figures[]): string[] {
  const keys = SIZES.map((n) => `n${n}.steps.`);
  const all = (k: string): number => keys.reduce((a, p) => a + total(runs, `${p}${k}`), 0);
  const stalledOf = (n: number): number => total(runs, `n${n}.steps.stalled`) + total(runs, `n${n}.steps.unfinished`);
  const stalled = all('stalled') + all('unfinished');
  const out: string[] = [];
  if (stalled > 0) {
    const by = SIZES.map((n) => `${n} instance(s): ${fmtInt(stalledOf(n))}`).join(', ');
    // Why a run stalls is a question for the tests (e.g. test/integration/runner-reclaim.test.ts).
    out.push(`- **Stalled \`steps\` runs: ${fmtInt(stalled)} of ${fmtInt(all('created'))} created** (${by}).`);
  }
  const hits = all('backstopHits');
  if (hits > 0) {
    const lag = Math.max(
      ...runs.flatMap((r) => keys.map((p) => r[`${p}maxNoticeLagMs`] ?? NaN)).filter(Number.isFinite),
    );
    out.push(
      `- Completions seen by the backstop poll before their NOTIFY: ${fmtInt(hits)} ` +
        `(notice lost: ${fmtInt(all('noticeLost'))}; largest commit → notice delay among ` +
        `them ${fmtInt(lag)} ms — each instance sends every NOTIFY as its own query through ` +
        `a 2-connection pool, src/bus/pg.ts).`,
    );
  }
  return out;
}

function clusterSection(result: ScenarioResult): Section {
  const cell: CellResult | undefined = result.cells.find((c) => c.target === TARGET);
  const runs = cell?.runs ?? [];
  const title = 'Cluster: 1–3 instances on one PostgreSQL';
  const cores = cpus().length;
  const planText = lastPlan
    ? `${fmtFixed(lastPlan.warmS, 2)} s warm-up + ${fmtFixed(lastPlan.measureS, 2)} s measured`
    : '?';
  const when = firstRunAt
    ? `Measured ${firstRunAt} – ${lastRunAt} (run starts), ` +
      `**${mode?.quick ? 'quick' : 'full'}** mode, ${runs.length} run(s), each window ` +
      `${planText} per cluster size and workload (shorter when slow cluster starts left ` +
      `less time: see below).`
    : '';
  if (runs.length === 0) {
    const why = !cell
      ? 'not run (target handoff not selected)'
      : `${cell.status}${cell.reason ? `: ${cell.reason}` : ''}`;
    return {
      title,
      intro: `Scenario \`${NAME}\`: ${why}.${problems.length ? ` ${problems.join('; ')}.` : ''}`,
      columns: [],
      rows: [],
    };
  }
  const m = medians(runs);
  const sendCols = [
    'instances',
    'message/send tasks/s median (min–max)',
    '× 1 instance (per run)',
    'p50 ms',
    'p99 ms',
    'errors / requests (all runs)',
    'Handoff CPU µs/task (all instances)',
    'PostgreSQL backends CPU µs/task',
    'CPU % Handoff / PostgreSQL / load-gen / other (of one core)',
    `machine busy % (of ${cores} cores)`,
    'requests per instance',
    'cluster start ms',
  ];
  const stepsCols = [
    'instances',
    '`steps` runs completed/s median (min–max)',
    '× 1 instance (per run)',
    'p50 ms',
    'p99 ms',
    'failed / created; stalled (all runs)',
    'Handoff CPU µs/run (all instances)',
    'PostgreSQL backends CPU µs/run',
    'CPU % Handoff / PostgreSQL / load-gen / other (of one core)',
    `machine busy % (of ${cores} cores)`,
    'step commits per instance',
    'runs created/s',
  ];

  const tk = runs.filter((r) => r['takeover.orphans'] !== undefined);
  const samples = tk
    .flatMap((r) =>
      Object.entries(r)
        .filter(([k]) => k.startsWith('takeover.sample.'))
        .map(([, v]) => v),
    )
    .sort((a, b) => a - b);
  const takeoverCols = [
    'instances (A killed)',
    'lease / poll / renewal ms',
    'hot runs on A (all runs)',
    'orphaned at the kill (lease held by A)',
    'taken over / not (all runs)',
    'takeover median ms (all samples)',
    'takeover max ms',
    'per run: median / max ms',
    'lease left at the kill ms, median (min–max)',
    'takeover − lease left ms, median / max',
    'survivors that took runs',
    'survivors CPU % before the kill (A committing /s)',
  ];
  const tkOf = (key: string): number[] => tk.map((r) => r[`takeover.${key}`] ?? NaN);
  const stolen = total(tk, 'takeover.stolenBeforeKill');
  const takeoverRows =
    tk.length === 0
      ? [['not measured (see below)', ...takeoverCols.slice(1).map(() => '')]]
      : [
          [
            `**${fmtInt(m['takeover.instances'])}**`,
            `**${fmtInt(m['takeover.leaseMs'])}** / ${fmtInt(m['takeover.pollMs'])} / ${fmtInt(m['takeover.renewMs'])}`,
            fmtInt(total(tk, 'takeover.runs')),
            fmtInt(total(tk, 'takeover.orphans')) +
              (stolen ? ` (${fmtInt(stolen)} committed by another instance before the kill)` : ''),
            `${fmtInt(total(tk, 'takeover.takenOver'))} / **${fmtInt(total(tk, 'takeover.notTakenOver'))}**`,
            `**${fmtInt(median(samples))}**`,
            `**${fmtInt(samples.at(-1))}**`,
            tk.map((r) => `${fmtInt(r['takeover.medianMs'])} / ${fmtInt(r['takeover.maxMs'])}`).join(', '),
            `${fmtInt(m['takeover.remainingLeaseMedianMs'])} ` +
              `(${fmtInt(Math.min(...tkOf('remainingLeaseMinMs')))}–` +
              `${fmtInt(Math.max(...tkOf('remainingLeaseMaxMs')))})`,
            `${fmtInt(m['takeover.excessMedianMs'])} / ${fmtInt(Math.max(...tkOf('excessMaxMs')))}`,
            perRun(tk, 'takeover.survivorsUsed'),
            `${fmtInt(m['takeover.survivorCpuPct'])} (${fmtInt(m['takeover.aCommitsPerSec'])})`,
          ],
        ];

  const bounded = SIZES.filter((n) => (m[`n${n}.send.machineBusyPct`] ?? 0) > 85);
  const pgText = pgInfo ? `${pgInfo.version} at \`${PG_URL}\` (${pgInfo.settings})` : `\`${PG_URL}\``;
  const windowsOf = (n: number): string =>
    runs.map((r) => `${fmtFixed(r[`n${n}.send.measureS`], 1)}/${fmtFixed(r[`n${n}.steps.measureS`], 1)}`).join(', ');
  const skippedParts = problems.length ? ` Skipped or failed parts: ${problems.join('; ')}.` : '';
  const headline = [
    `- **Scaling** (median of the per-run ratios, instance counts measured back to back ` +
      `in the same run): message/send 2/1 ` +
      `${ratioFmt(median(runs.map((r) => r['ratio2.send'] ?? NaN)))}, 3/1 ` +
      `${ratioFmt(median(runs.map((r) => r['ratio3.send'] ?? NaN)))}; \`steps\` runs 2/1 ` +
      `${ratioFmt(median(runs.map((r) => r['ratio2.steps'] ?? NaN)))}, 3/1 ` +
      `${ratioFmt(median(runs.map((r) => r['ratio3.steps'] ?? NaN)))}.`,
    `- **This machine has ${cores} cores** shared by every Handoff instance, PostgreSQL ` +
      `and the load generator (autocannon and the run-completion listener, in the harness ` +
      `process, pinned to core 1). ` +
      (bounded.length
        ? `With ${bounded.join(', ')} instance(s) the machine was already ≥ 85 % busy during \`message/send\`, so `
        : 'So ') +
      `adding instances adds no cores: the ratios show what a second or third process buys ` +
      `on the same ${cores} cores (overlap of I/O waits, the cost of cross-instance ` +
      `coordination), not what a cluster on separate machines would reach. The per-task ` +
      `and per-run CPU columns are the portable figures: capacity ≈ cores ÷ (Handoff + ` +
      `PostgreSQL µs per unit).`,
    `- **Takeover** after SIGKILL: with HANDOFF_LEASE_MS=${fmtInt(TAKEOVER.leaseMs)} and ` +
      `HANDOFF_POLL_MS=${fmtInt(TAKEOVER.pollMs)} (the worker renews a held lease every ` +
      `lease/3 = ${fmtInt(RENEW_MS)} ms), an orphaned run can be claimed once its lease ` +
      `expires — ≈ ${fmtInt(TAKEOVER.leaseMs - RENEW_MS)}–${fmtInt(TAKEOVER.leaseMs)} ms ` +
      `after the kill depending on when A last renewed it (less if a renewal ran late) — ` +
      `and the survivor's worker wakes at that expiry (it schedules its next pass at the ` +
      `earliest lease expiry, at most one poll of ${fmtInt(TAKEOVER.pollMs)} ms away); ` +
      `expected bound lease + poll = ${fmtInt(TAKEOVER.leaseMs + TAKEOVER.pollMs)} ms. ` +
      `Measured: median ${fmtInt(median(samples))} ms, max ${fmtInt(samples.at(-1))} ms ` +
      `over ${samples.length} orphaned runs; runs not taken over within lease + ` +
      `${fmtInt(TAKEOVER.graceMs)} ms: ${fmtInt(total(tk, 'takeover.notTakenOver'))}.`,
    ...stalledBullet(runs),
    `- Measured window per run (s; \`message/send\` / \`steps\`): ` +
      `${SIZES.map((n) => `${n} instance(s) ${windowsOf(n)}`).join('; ')}; ` +
      `cluster start ms (all instances at once): ` +
      `${SIZES.map((n) => `${n}: ${perRun(runs, `n${n}.startMs`)}`).join('; ')}.`,
    `- Load average (1 min) at the start of each run: ` +
      `${perRun(runs, 'loadAvg1', (v) => fmtFixed(v, 2))}.${skippedParts}`,
  ].join('\n');

  const method = [
    `**Method.** Each cluster size gets a fresh set of \`dist/src/cli/main.js serve\` ` +
      `processes started together (they share one PostgreSQL schema \`bench_cluster_…\`, ` +
      `HANDOFF_PG_SCHEMA, created by their migrations and dropped afterwards; ` +
      `HANDOFF_DATABASE_URL, one HANDOFF_SECRET_KEY; each its own --data dir, port and ` +
      `HANDOFF_INSTANCE_ID; every other HANDOFF_* variable removed, so lease 30 s / poll 1 ` +
      `s / pool 10 defaults), on ${pgText}.`,
    `The instances are **not pinned** (unlike the single-server scenarios, which pin the ` +
      `server to core 0): N processes on one core would measure only that core; they and ` +
      `PostgreSQL float over all ${cores} cores, the harness stays on core 1.`,
    `Sizes are measured in rotated order per run (1 2 3, 2 3 1, 3 1 2), the ratio N/1 is ` +
      `taken within each run and its median reported. On each cluster: \`message/send\` ` +
      `first, then \`steps\`, on the same schema (the send phase leaves only completed ` +
      `runs behind).`,
    `\`message/send\`: blocking A2A JSON-RPC (\`POST /v1/a2a\`, skill \`echo\`, fresh ` +
      `messageId each), ${CONNECTIONS} closed-loop keep-alive connections split evenly ` +
      `over the instances (${CONNECTIONS}/N each: round-robin by connection), a warm-up, ` +
      `then the measured window; p50/p99 over the pooled latencies of all instances; ` +
      `errors = socket errors + non-2xx + answers without \`"state":"completed"\`.`,
    `\`steps\`: \`POST /v1/runs {workflowId:"steps", ` +
      `inputs:${JSON.stringify(STEPS_INPUTS)}}\` — ${STEPS_INPUTS.steps} durable 10 ms ` +
      `timers per run; each timer releases the run and whichever instance claims it first ` +
      `runs the next step, so runs wander between instances. ${SLOTS} closed-loop slots ` +
      `split evenly over the instances (${SLOTS}/N each), each creating a run and waiting ` +
      `until it is \`completed\` before creating the next; completion is seen on Handoff's ` +
      `own bus (the harness LISTENs on the cluster's NOTIFY channel: one notice per ` +
      `committed change, naming the committing instance), with a poll of the runs table ` +
      `every 250 ms as a backstop for runs waited on > 1 s ("seen by the backstop poll ` +
      `first" = the notice was slower than the poll; "never notified" = no notice followed ` +
      `within 200 ms after the drain: a lost NOTIFY). Runs/s = runs seen completed inside ` +
      `the window; latency = POST written → completion notice received. A slot gives up on ` +
      `a run after ${STALL_MS / 1000} s and starts the next ("stalled"); after the window ` +
      `no run is started and the ones in flight get ${DRAIN_MS / 1000} s to complete ` +
      `(those that do not count as stalled too). "step commits per instance" = share of ` +
      `the committed changes (notices) each instance made during the window: how evenly ` +
      `the work spread; "runs created/s" = POSTs answered 201 in the window.`,
    `CPU (both workloads): utime+stime of every instance (/proc) over the measured ` +
      `window, summed ("Handoff CPU µs/task" = sum ÷ tasks or completed runs), the ` +
      `PostgreSQL backends serving the instances (found by application_name in ` +
      `pg_stat_activity) likewise, the harness's own CPU (load-gen), "other" = machine ` +
      `busy − the three (other processes on the box), all in % of one core; "machine busy" ` +
      `= machine-wide busy time in % of all ${cores} cores: near 100 % means the machine, ` +
      `not Handoff, set the limit.`,
    `Takeover: a fresh cluster of ${TAKEOVER.instances} instances (A and B) with ` +
      `HANDOFF_LEASE_MS=${TAKEOVER.leaseMs}, HANDOFF_POLL_MS=${TAKEOVER.pollMs}; ` +
      `${TAKEOVER.runs(false)} runs (quick: ${TAKEOVER.runs(true)}) of \`steps\` ` +
      `${JSON.stringify(TAKEOVER.inputs)} created on instance A — a 0 ms step never ` +
      `sleeps, so A executes them one committed step after another and holds their leases ` +
      `the whole time (a run with a real delay releases its lease at every timer and ` +
      `belongs to no instance while it sleeps, so a kill would orphan only the runs caught ` +
      `mid-step); after ${TAKEOVER.settleMs(false)} ms (quick: ${TAKEOVER.settleMs(true)} ` +
      `ms), A is sent SIGKILL; the runs table is read at once (orphaned = lease_owner ` +
      `still A; lease left = lease_expires_at − kill time), and takeover = kill → the ` +
      `first notice of a commit of that run by another instance (the claim and the first ` +
      `step commit back to back). "survivors CPU %" = CPU of the other instances during ` +
      `the settle, while only A worked: what watching another instance's commits costs ` +
      `(every NOTIFY of a running run triggers a claim pass on each other instance).`,
    'Raw figures per run: the local `bench/results.json` (keys `n<N>.send.*`, `n<N>.steps.*`, ' +
      "`ratio<N>.*`, `takeover.*`; the harness's per-run row shows the 1-instance " +
      '`message/send` req/s).',
  ].join(' ');

  return {
    title,
    intro:
      `Scenario \`${NAME}\`: ${result.description} ${when}\n\n**Blocking ` +
      `\`message/send\`** (echo), ${CONNECTIONS} connections split round-robin over the ` +
      `instances.`,
    columns: sendCols,
    rows: throughputRows(runs, 'send'),
    after: [
      `**\`steps\` runs completed/s** — ${JSON.stringify(STEPS_INPUTS)}, ${SLOTS} runs in ` +
        `flight split round-robin over the instances, completion seen on the bus.`,
      '',
      mdTable(stepsCols, throughputRows(runs, 'steps')),
      '',
      `**Takeover after SIGKILL** — instance A killed while executing its runs; time until ` +
        `another instance commits a step of each.`,
      '',
      mdTable(takeoverCols, takeoverRows),
      '',
      headline,
      '',
      method,
    ].join('\n'),
  };
}

registerScenario({
  name: NAME,
  description:
    `1, 2 and 3 Handoff instances on one PostgreSQL (fresh schema each): blocking ` +
    `\`message/send\` (echo) and \`steps\` runs ${JSON.stringify(STEPS_INPUTS)} ` +
    `completed/s (${CONNECTIONS} connections / ${SLOTS} runs in flight, spread ` +
    `round-robin over the instances), the ratios 2/1 and 3/1, and takeover time after ` +
    `SIGKILL of an instance (lease ${TAKEOVER.leaseMs} ms, poll ${TAKEOVER.pollMs} ms).`,
  order: 70,
  run: runCluster,
  section: clusterSection,
});
