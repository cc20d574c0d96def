// Push notifications: delivery throughput and outbox lag of Handoff's push worker to a
// local HTTPS receiver.
//
// The harness's `handoff` target cannot take extra environment, and pushes need two settings
// (HANDOFF_PUSH_ALLOW_CIDRS=127.0.0.0/8 so the egress guard lets a loopback receiver through,
// HANDOFF_PUSH_CA_FILE so the receiver's throw-away CA is trusted). So for the `handoff` target
// this scenario starts its own server — same binary (dist/src/cli/main.js serve), same pinning
// (core 0, bench/lib/proc.ts), a fresh data dir — and leaves the harness's instance idle.
// Other targets are reported as not applicable (no push worker to measure).
//
// One run, on one server:
//   0. warm-up: a few approval tasks started and approved, their pushes drained (not counted);
//   1. throughput: N `approval` tasks started over A2A `message/send` (blocking, 50 at a time)
//      with configuration.pushNotificationConfig {url: https://127.0.0.1:<port>/hook, token}; each
//      returns at input-required and causes one push. Pushes/s and commit→receipt delay;
//   2. lag under load: those N tasks — paused at input-required, their pushes drained — are all
//      approved at once (`message/send` {taskId, data {action:'accept'}}, 50 at a time); time until
//      every `completed` push arrived, its delay, the outbox lag the server reports on /metrics
//      (polled every 200 ms) and the backlog seen from the receiver.
// N = 1,000 (quick: 200). Delay = receipt time − status.timestamp of the pushed
// TaskStatusUpdateEvent (the transition's commit time, whole ms; same host clock). What a push
// carries (body, token headers, one per transition) is tested in test/e2e/push.test.ts; here it is
// only counted and timed.
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { nowMs, sleep } from '../lib/clock.js';
import { handoffCells, handoffOrigin } from '../lib/handoff-only.js';
import { type HandoffServer, startHandoffSqlite } from '../lib/handoff-server.js';
import { http, jsonOf } from '../lib/http.js';
import { closedLoop } from '../lib/load.js';
import { scrapeMetrics } from '../lib/metrics-text.js';
import { cpuWindow, loadAverages, readRssMiB } from '../lib/proc.js';
import { makePushCerts, startPushReceiver, type PushReceipt, type PushReceiver } from '../lib/push-receiver.js';
import { registerScenario, type Figures, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, fmtInt, fmtMs, mdTable, perRun, type Section } from '../lib/report.js';
import { sendDecision, sendNew } from '../lib/rpc.js';
import { ascending, medians, percentile, total } from '../lib/stats.js';

// ─── sizes ───────────────────────────────────────────────────────────────────────────────────────

const tasksFor = (quick: boolean): number => (quick ? 200 : 1000);
const warmupFor = (quick: boolean): number => (quick ? 10 : 20);
/** Requests in flight at a time (like the autocannon scenarios' 50 connections). */
const CONCURRENCY = 50;
const LAG_POLL_MS = 200;

// ─── small helpers ───────────────────────────────────────────────────────────────────────────────

/** `n` jobs, `concurrency` at a time; no job is started after `stopAt` (epoch ms). */
const pool = (n: number, concurrency: number, stopAt: number, job: (i: number) => Promise<void>): Promise<number> =>
  closedLoop({ workers: concurrency, jobs: n, more: () => nowMs() < stopAt }, job);

/** A JSON-RPC answer's task id and state, or the error. */
function taskOf(text: string): { id?: string; state?: string; error?: string } {
  const doc = jsonOf<{
    result?: { kind?: string; id?: string; status?: { state?: string } };
    error?: { code?: number; message?: string };
  }>(text);
  if (!doc) return { error: `not JSON: ${text.slice(0, 200)}` };
  if (doc.error) return { error: `${doc.error.code ?? '?'} ${doc.error.message ?? ''}`.slice(0, 200) };
  if (doc.result?.kind !== 'task') return { error: `not a task: ${text.slice(0, 200)}` };
  return {
    ...(doc.result.id ? { id: doc.result.id } : {}),
    ...(doc.result.status?.state ? { state: doc.result.status.state } : {}),
  };
}

interface PushMetrics {
  lagS: number;
  delivered: number;
  retry: number;
  dead: number;
  cancelled: number;
  serverLagCount: number;
  serverLagSum: number;
}

async function readMetrics(base: string): Promise<PushMetrics> {
  const m = await scrapeMetrics(base);
  const attempts = (outcome: string): number =>
    m.value(new RegExp(`^handoff_push_attempts_total\\{outcome="${outcome}"\\} (\\S+)$`, 'm')) || 0;
  return {
    lagS: m.value(/^handoff_push_outbox_lag_seconds (\S+)$/m),
    delivered: attempts('delivered'),
    retry: attempts('retry'),
    dead: attempts('dead'),
    cancelled: attempts('cancelled'),
    serverLagCount: m.value(/^handoff_push_delivery_lag_seconds_count (\S+)$/m) || 0,
    serverLagSum: m.value(/^handoff_push_delivery_lag_seconds_sum (\S+)$/m) || 0,
  };
}

/** Polls /metrics' handoff_push_outbox_lag_seconds every LAG_POLL_MS (one scrape at a time). */
function lagPoller(base: string): {
  stop(): Promise<{ maxS: number; samples: number; failed: number; scrapeP50Ms: number; scrapeMaxMs: number }>;
} {
  const scrapes: number[] = [];
  let maxS = 0;
  let samples = 0;
  let failed = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const t = nowMs();
      try {
        const m = await readMetrics(base);
        scrapes.push(nowMs() - t);
        if (Number.isFinite(m.lagS)) {
          maxS = Math.max(maxS, m.lagS);
          samples++;
        } else failed++;
      } catch {
        failed++;
      }
      await sleep(Math.max(0, LAG_POLL_MS - (nowMs() - t)));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      const s = ascending(scrapes);
      return { maxS, samples, failed, scrapeP50Ms: percentile(s, 50), scrapeMaxMs: percentile(s, 100) };
    },
  };
}

/** Largest number of pushes committed but not yet received, from the receipts alone. */
function peakBacklog(receipts: readonly PushReceipt[]): number {
  const events: [number, number][] = [];
  for (const r of receipts) {
    if (!Number.isFinite(r.commitAt)) continue;
    events.push([r.commitAt, +1], [r.at, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let open = 0;
  let peak = 0;
  for (const [, d] of events) {
    open += d;
    peak = Math.max(peak, open);
  }
  return peak;
}

// ─── one run ─────────────────────────────────────────────────────────────────────────────────────

interface TaskInfo {
  /** message/send of the task answered at input-required. */
  paused: boolean;
  /** The approval answered completed. */
  completed: boolean;
  /** When the approval's message/send answer arrived (epoch ms). */
  answeredAt?: number;
  /** When the starting message/send answer (at input-required) arrived. */
  startAnsweredAt: number;
}

interface Tally {
  expected: number;
  received: number;
  lost: number;
  duplicates: number;
  delays: number[];
  firstAt: number;
  lastAt: number;
  firstCommit: number;
  lastCommit: number;
  receipts: PushReceipt[];
}

/** Receipts of `state` for the given tasks: expected = tasks, received = distinct tasks pushed. */
function tally(rx: PushReceiver, ids: readonly string[], state: string): Tally {
  const want = new Set(ids);
  const seenDelivery = new Set<string>();
  const gotTask = new Set<string>();
  const t: Tally = {
    expected: want.size,
    received: 0,
    lost: 0,
    duplicates: 0,
    delays: [],
    firstAt: Infinity,
    lastAt: -Infinity,
    firstCommit: Infinity,
    lastCommit: -Infinity,
    receipts: [],
  };
  for (const r of rx.receipts) {
    const id = r.taskId ?? r.bodyTaskId;
    if (!id || !want.has(id) || r.state !== state) continue;
    if (r.deliveryId === undefined || seenDelivery.has(r.deliveryId) || gotTask.has(id)) {
      t.duplicates++;
      continue;
    }
    seenDelivery.add(r.deliveryId);
    gotTask.add(id);
    t.receipts.push(r);
    if (Number.isFinite(r.commitAt)) {
      t.delays.push(r.at - r.commitAt);
      t.firstCommit = Math.min(t.firstCommit, r.commitAt);
      t.lastCommit = Math.max(t.lastCommit, r.commitAt);
    }
    t.firstAt = Math.min(t.firstAt, r.at);
    t.lastAt = Math.max(t.lastAt, r.at);
  }
  t.received = gotTask.size;
  t.lost = t.expected - t.received;
  t.delays.sort((a, b) => a - b);
  return t;
}

interface Delivery {
  deliveryId: string;
  taskId: string;
  createdAt: string;
  deliveredAt: string | null;
  attempts: number;
}

/** The deliveries the server holds in `state` (the operator API caps the page at 1,000). */
async function deliveries(base: string, state: 'pending' | 'dead' | 'delivered'): Promise<Delivery[]> {
  const res = await http('GET', `${base}/v1/a2a/deliveries?state=${state}&limit=1000`, { timeoutMs: 15_000 });
  if (res.status !== 200) throw new Error(`GET /v1/a2a/deliveries answered HTTP ${res.status}`);
  return jsonOf<{ deliveries?: Delivery[] }>(res.text)?.deliveries ?? [];
}

/**
 * What became of the pushes that had not arrived when a phase stopped waiting: arrived since
 * (late), still owed by the server (pending: late too), dead-lettered, or gone without a trace
 * (lost). Read once at the end of the run.
 */
function accountFor(
  rx: PushReceiver,
  ids: readonly string[],
  state: string,
  inTime: Tally,
  pending: ReadonlySet<string>,
  dead: ReadonlySet<string>,
): { late: number; pending: number; dead: number; lost: number } {
  const got = new Set(tally(rx, ids, state).receipts.map((r) => r.taskId ?? r.bodyTaskId));
  const missing = ids.filter((id) => !got.has(id));
  const stillPending = missing.filter((id) => pending.has(id)).length;
  const deadHere = missing.filter((id) => dead.has(id)).length;
  return {
    late: got.size - inTime.received,
    pending: stillPending,
    dead: deadHere,
    lost: missing.length - stillPending,
  };
}

/**
 * Where the lag goes, per `completed` push: the server's outbox row (read back once, after the
 * phase) has `createdAt` (enqueued, inside the transition's transaction) and `deliveredAt`
 * (outcome recorded); with the receipt and status.timestamp that splits commit→receipt into
 * stamp→enqueued, enqueued→received (commit, claim, config + token reads, the POST) and
 * received→settled. Also receipt − the approval's own answer: < 0 = the push beat the reply.
 */
async function breakdown(
  base: string,
  receipts: readonly PushReceipt[],
  tasks: Map<string, TaskInfo>,
): Promise<Figures> {
  const rows = new Map((await deliveries(base, 'delivered')).map((d) => [d.deliveryId, d] as const));
  const stampToEnqueue: number[] = [];
  const enqueueToReceipt: number[] = [];
  const receiptToSettled: number[] = [];
  const pushMinusAnswer: number[] = [];
  let matched = 0;
  let multi = 0;
  for (const r of receipts) {
    const answeredAt = tasks.get(r.taskId ?? '')?.answeredAt;
    if (answeredAt !== undefined) pushMinusAnswer.push(r.at - answeredAt);
    const row = r.deliveryId ? rows.get(r.deliveryId) : undefined;
    if (!row) continue;
    matched++;
    if (row.attempts > 1) multi++;
    const enq = Date.parse(row.createdAt);
    stampToEnqueue.push(enq - r.commitAt);
    enqueueToReceipt.push(r.at - enq);
    if (row.deliveredAt) receiptToSettled.push(Date.parse(row.deliveredAt) - r.at);
  }
  const q = (xs: number[], p: number): number => percentile(ascending(xs), p);
  return {
    'l.breakdownRows': matched,
    'l.multiAttempt': multi,
    'l.stampToEnqueueP50Ms': q(stampToEnqueue, 50),
    'l.stampToEnqueueP99Ms': q(stampToEnqueue, 99),
    'l.enqueueToReceiptP50Ms': q(enqueueToReceipt, 50),
    'l.enqueueToReceiptP99Ms': q(enqueueToReceipt, 99),
    'l.receiptToSettledP50Ms': q(receiptToSettled, 50),
    'l.receiptToSettledP99Ms': q(receiptToSettled, 99),
    'l.pushMinusAnswerP50Ms': q(pushMinusAnswer, 50),
    'l.pushMinusAnswerP99Ms': q(pushMinusAnswer, 99),
    'l.pushBeforeAnswer': pushMinusAnswer.filter((d) => d < 0).length,
  };
}

async function runPush(ctx: ScenarioContext): Promise<Figures> {
  // Applies to the Handoff targets only, but measures a server of its own (see the header).
  handoffOrigin(ctx, "Handoff's push worker");
  const started = nowMs();
  // The harness abandons a run after (warm-up + duration + 30) s (bench/run.ts); every wait below
  // ends before that, leaving a few seconds to read the end state and stop the server.
  const hardStop = started + (ctx.mode.warmupS + ctx.mode.durationS + 30) * 1000 - 5000;
  const n = tasksFor(ctx.mode.quick);
  const [loadAvg1, loadAvg5, loadAvg15] = loadAverages();
  const figures: Figures = {
    tasks: n,
    startedAtMs: Date.now(),
    quick: ctx.mode.quick ? 1 : 0,
    budgetS: (hardStop - started) / 1000,
    loadAvg1,
    loadAvg5,
    loadAvg15,
  };

  const certs = makePushCerts();
  let rx: PushReceiver | undefined;
  let server: HandoffServer | undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    rx = await startPushReceiver(certs);
    const receiver = rx;
    const t0 = nowMs();
    server = await startHandoffSqlite({
      env: { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.0/8', HANDOFF_PUSH_CA_FILE: certs.caFile },
    });
    figures.startMs = nowMs() - t0;
    const { base, pid } = server;
    const rpcUrl = `${base}/v1/a2a`;
    const hook = receiver.url('/hook');
    const tasks = new Map<string, TaskInfo>();
    const left = (): number => Math.max(1000, hardStop - nowMs());

    const startTask = async (errors: string[], latencies?: number[]): Promise<string | undefined> => {
      const token = randomBytes(12).toString('base64url');
      const body = sendNew(ctx.skills.approval, 'Please approve this push benchmark request.');
      body.params.configuration = { blocking: true, pushNotificationConfig: { url: hook, token } };
      const t = nowMs();
      try {
        const res = await http('POST', rpcUrl, { body, timeoutMs: left(), agent });
        latencies?.push(nowMs() - t);
        const task = taskOf(res.text);
        if (!task.id) {
          errors.push(task.error ?? `HTTP ${res.status}`);
          return undefined;
        }
        tasks.set(task.id, {
          paused: task.state === 'input-required',
          completed: false,
          startAnsweredAt: nowMs(),
        });
        if (task.state !== 'input-required') errors.push(`answered ${task.state ?? '?'}`);
        return task.id;
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
        return undefined;
      }
    };
    const approve = async (id: string, errors: string[], latencies?: number[]): Promise<void> => {
      const t = nowMs();
      try {
        const res = await http('POST', rpcUrl, { body: sendDecision(id, 'accept'), timeoutMs: left(), agent });
        latencies?.push(nowMs() - t);
        const task = taskOf(res.text);
        const info = tasks.get(id)!;
        info.answeredAt = nowMs();
        if (task.state === 'completed') info.completed = true;
        else errors.push(task.error ?? `answered ${task.state ?? '?'}`);
      } catch (err) {
        errors.push(err instanceof Error ? err.message : String(err));
      }
    };
    // Task ids pushed per state, updated from the receipts not yet looked at (cheap enough to run
    // after every receipt, which happens in this process too).
    let scanned = 0;
    const pushedIds = new Map<string, Set<string>>();
    const pushedOf = (ids: readonly string[], state: string): number => {
      for (; scanned < receiver.receipts.length; scanned++) {
        const r = receiver.receipts[scanned]!;
        const id = r.taskId ?? r.bodyTaskId;
        if (!id || !r.state) continue;
        let set = pushedIds.get(r.state);
        if (!set) {
          set = new Set();
          pushedIds.set(r.state, set);
        }
        set.add(id);
      }
      const set = pushedIds.get(state);
      return set ? ids.reduce((k, id) => k + (set.has(id) ? 1 : 0), 0) : 0;
    };

    // ── 0. warm-up (JIT, the worker's TLS connections, SQLite pages); not counted ──
    const warm = warmupFor(ctx.mode.quick);
    const warmErrors: string[] = [];
    const warmIds: string[] = [];
    await pool(warm, 10, hardStop, async () => {
      const id = await startTask(warmErrors);
      if (id) warmIds.push(id);
    });
    await pool(warmIds.length, 10, hardStop, (i) => approve(warmIds[i]!, warmErrors));
    await receiver.waitFor(() => pushedOf(warmIds, 'completed') >= warmIds.length, Math.min(10_000, left()));
    if (warmErrors.length) ctx.log(`push warm-up: ${warmErrors.length} errors, first: ${warmErrors[0]}`);
    await sleep(300);

    // ── 1. throughput: N tasks started, each pushed once at input-required ──
    const ids1: string[] = [];
    const errors1: string[] = [];
    const sendLat: number[] = [];
    const tls0 = receiver.stats();
    const cpu1 = cpuWindow(pid);
    const lag1 = lagPoller(base);
    const p1Start = nowMs();
    // Stop starting tasks at 45 % of the time left so the approval phase keeps its share (a busy
    // machine gets fewer tasks, reported as "tasks paused k of N", rather than a failed run).
    const p1StopAt = p1Start + (hardStop - p1Start) * 0.45;
    const attempted1 = await pool(n, CONCURRENCY, p1StopAt, async () => {
      const id = await startTask(errors1, sendLat);
      if (id) ids1.push(id);
    });
    const p1SendsDone = nowMs();
    const paused = ids1.filter((id) => tasks.get(id)!.paused);
    const drained1 = await receiver.waitFor(
      () => pushedOf(paused, 'input-required') >= paused.length,
      Math.min(15_000, left()),
    );
    const usage1 = cpu1();
    const lagRes1 = await lag1.stop();
    const t1 = tally(receiver, paused, 'input-required');
    const m1 = await readMetrics(base);
    const tls1 = receiver.stats();
    if (errors1.length) ctx.log(`push throughput: ${errors1.length} send errors, first: ${errors1[0]}`);
    if (attempted1 < n) ctx.log(`push throughput: time budget reached after ${attempted1} of ${n} tasks`);
    const sendSorted = ascending(sendLat);
    // Receipt − the starting message/send's answer: < 0 = the push beat the reply.
    const pushMinusStart = ascending(
      t1.receipts.map((r) => r.at - (tasks.get(r.taskId ?? '')?.startAnsweredAt ?? NaN)).filter(Number.isFinite),
    );
    Object.assign(figures, {
      't.attempted': attempted1,
      't.paused': paused.length,
      't.sendErrors': errors1.length,
      't.expected': t1.expected,
      't.received': t1.received,
      't.notInTime': t1.lost,
      't.duplicates': t1.duplicates,
      't.drained': drained1 ? 1 : 0,
      't.sendPhaseMs': p1SendsDone - p1Start,
      't.tasksPerSec': (paused.length / (p1SendsDone - p1Start)) * 1000,
      't.pushesPerSec': (t1.received / (t1.lastAt - p1Start)) * 1000,
      't.commitsPerSec': (t1.received / (t1.lastCommit - p1Start)) * 1000,
      't.lastPushAfterLastSendMs': t1.lastAt - p1SendsDone,
      't.delayP50Ms': percentile(t1.delays, 50),
      't.delayP90Ms': percentile(t1.delays, 90),
      't.delayP99Ms': percentile(t1.delays, 99),
      't.delayMaxMs': percentile(t1.delays, 100),
      't.sendP50Ms': percentile(sendSorted, 50),
      't.sendP99Ms': percentile(sendSorted, 99),
      't.peakBacklog': peakBacklog(t1.receipts),
      't.pushMinusAnswerP50Ms': percentile(pushMinusStart, 50),
      't.pushMinusAnswerP99Ms': percentile(pushMinusStart, 99),
      't.scrapeP50Ms': lagRes1.scrapeP50Ms,
      't.scrapeMaxMs': lagRes1.scrapeMaxMs,
      't.maxLagS': lagRes1.maxS,
      't.lagSamples': lagRes1.samples,
      't.retries': m1.retry,
      't.handshakes': tls1.handshakes - tls0.handshakes,
      't.connsUsed': new Set(t1.receipts.map((r) => r.conn)).size,
      't.resumed': tls1.resumed - tls0.resumed,
      't.openPeak': tls1.openPeak,
      't.serverCpuPct': usage1.serverCpuPct,
      't.harnessCpuPct': usage1.harnessCpuPct,
      't.otherCpuPct': usage1.otherCpuPct,
    });
    ctx.log(
      `push throughput: ${paused.length}/${n} tasks paused in ` +
        `${fmtInt(p1SendsDone - p1Start)} ms (${fmtInt(figures['t.tasksPerSec'])}/s); pushes ` +
        `${t1.received}/${t1.expected} in time, dup ${t1.duplicates}, ` +
        `${fmtInt(figures['t.pushesPerSec'])}/s; delay p50 ${fmtMs(figures['t.delayP50Ms'])} ` +
        `p99 ${fmtMs(figures['t.delayP99Ms'])} max ${fmtMs(figures['t.delayMaxMs'])} ms; ` +
        `message/send p50 ${fmtMs(figures['t.sendP50Ms'])} p99 ` +
        `${fmtMs(figures['t.sendP99Ms'])} ms; push − answer p50 ` +
        `${fmtMs(figures['t.pushMinusAnswerP50Ms'])} p99 ` +
        `${fmtMs(figures['t.pushMinusAnswerP99Ms'])} ms; lag max ` +
        `${fmtFixed(lagRes1.maxS, 3)} s (/metrics scrape p50 ${fmtInt(lagRes1.scrapeP50Ms)} ` +
        `max ${fmtInt(lagRes1.scrapeMaxMs)} ms), backlog peak ${figures['t.peakBacklog']}; ` +
        `TLS handshakes ${figures['t.handshakes']}; server CPU ` +
        `${fmtInt(usage1.serverCpuPct)}%, other ${fmtInt(usage1.otherCpuPct)}%`,
    );

    // ── 2. lag under load: every paused task (pushes drained) approved at once ──
    await sleep(500); // the worker idle, /metrics lag back at 0
    const ready = paused.filter((id) => pushedOf([id], 'input-required') === 1);
    const errors2: string[] = [];
    const approveLat: number[] = [];
    const rss0 = readRssMiB(pid);
    const cpu2 = cpuWindow(pid);
    const lag2 = lagPoller(base);
    const tls2 = receiver.stats();
    const p2Start = nowMs();
    const attempted2 = await pool(ready.length, CONCURRENCY, hardStop, (i) => approve(ready[i]!, errors2, approveLat));
    const p2RepliesDone = nowMs();
    const done = ready.filter((id) => tasks.get(id)!.completed);
    const drained2 = await receiver.waitFor(
      () => pushedOf(done, 'completed') >= done.length,
      Math.max(0, hardStop - nowMs()),
    );
    const usage2 = cpu2();
    const lagRes2 = await lag2.stop();
    const rss1 = readRssMiB(pid);
    const t2 = tally(receiver, done, 'completed');
    const m2 = await readMetrics(base);
    const tls3 = receiver.stats();
    if (errors2.length) ctx.log(`push lag: ${errors2.length} approval errors, first: ${errors2[0]}`);
    const approveSorted = ascending(approveLat);
    // Whatever did not arrive: still owed by the server (pending), or given up (dead)?
    const taskIds = (state: 'pending' | 'dead'): Promise<string[] | undefined> =>
      deliveries(base, state).then(
        (ds) => ds.map((d) => d.taskId),
        () => undefined,
      );
    const pendingIds = await taskIds('pending');
    const deadIds = await taskIds('dead');
    const pendingEnd = pendingIds?.length ?? NaN;
    const deadEnd = deadIds?.length ?? NaN;
    const pendingSet = new Set(pendingIds ?? []);
    const deadSet = new Set(deadIds ?? []);
    const acc1 = accountFor(receiver, paused, 'input-required', t1, pendingSet, deadSet);
    const acc2 = accountFor(receiver, done, 'completed', t2, pendingSet, deadSet);
    const split = await breakdown(base, t2.receipts, tasks).catch((err: unknown) => {
      ctx.log(`push lag: no breakdown (${err instanceof Error ? err.message : String(err)})`);
      return {} as Figures;
    });
    Object.assign(figures, {
      'l.paused': ready.length,
      'l.attempted': attempted2,
      'l.approveErrors': errors2.length,
      'l.expected': t2.expected,
      'l.received': t2.received,
      'l.notInTime': t2.lost,
      'l.duplicates': t2.duplicates,
      'l.drained': drained2 ? 1 : 0,
      'l.approvePhaseMs': p2RepliesDone - p2Start,
      'l.allPushedMs': t2.lastAt - p2Start,
      'l.commitWindowMs': t2.lastCommit - t2.firstCommit,
      'l.lastPushAfterLastReplyMs': t2.lastAt - p2RepliesDone,
      'l.approvalsPerSec': (done.length / (p2RepliesDone - p2Start)) * 1000,
      'l.pushesPerSec': (t2.received / (t2.lastAt - p2Start)) * 1000,
      'l.delayP50Ms': percentile(t2.delays, 50),
      'l.delayP90Ms': percentile(t2.delays, 90),
      'l.delayP99Ms': percentile(t2.delays, 99),
      'l.delayMaxMs': percentile(t2.delays, 100),
      'l.approveP50Ms': percentile(approveSorted, 50),
      'l.approveP99Ms': percentile(approveSorted, 99),
      'l.peakBacklog': peakBacklog(t2.receipts),
      'l.maxLagS': lagRes2.maxS,
      'l.lagSamples': lagRes2.samples,
      'l.lagFailed': lagRes2.failed,
      'l.scrapeP50Ms': lagRes2.scrapeP50Ms,
      'l.scrapeMaxMs': lagRes2.scrapeMaxMs,
      'l.retries': m2.retry - m1.retry,
      'l.handshakes': tls3.handshakes - tls2.handshakes,
      'l.connsUsed': new Set(t2.receipts.map((r) => r.conn)).size,
      'l.connsReused': new Set(t2.receipts.filter((r) => r.conn <= tls2.handshakes).map((r) => r.conn)).size,
      'l.serverCpuPct': usage2.serverCpuPct,
      'l.harnessCpuPct': usage2.harnessCpuPct,
      'l.otherCpuPct': usage2.otherCpuPct,
      'l.rssBeforeMiB': rss0,
      'l.rssAfterMiB': rss1,
      ...split,
      't.late': acc1.late + acc1.pending,
      't.pendingEnd': acc1.pending,
      't.lost': acc1.lost,
      't.dead': acc1.dead,
      'l.late': acc2.late + acc2.pending,
      'l.pendingEnd': acc2.pending,
      'l.lost': acc2.lost,
      'l.dead': acc2.dead,
      // whole run
      pendingEnd,
      deadEnd,
      // Same delivery id received more than once (at-least-once: a retry after a lost answer).
      dupEnd: receiver.receipts.length - new Set(receiver.receipts.map((r) => r.deliveryId)).size,
      attemptsDelivered: m2.delivered,
      attemptsRetry: m2.retry,
      attemptsDead: m2.dead,
      serverLagMeanMs: (m2.serverLagSum / m2.serverLagCount) * 1000,
      handshakes: tls3.handshakes,
      resumed: tls3.resumed,
      receiverRequests: tls3.requests,
    });
    ctx.log(
      `push lag: ${done.length}/${ready.length} approved in ` +
        `${fmtInt(p2RepliesDone - p2Start)} ms; completed pushes ` +
        `${t2.received}/${t2.expected} in time (late ${acc2.late + acc2.pending}, of which ` +
        `still pending ${acc2.pending}; lost ${acc2.lost}; throughput phase: late ` +
        `${acc1.late + acc1.pending}, lost ${acc1.lost}), last in-time one after ` +
        `${fmtInt(figures['l.allPushedMs'])} ms; delay p50 ${fmtMs(figures['l.delayP50Ms'])} ` +
        `p99 ${fmtMs(figures['l.delayP99Ms'])} max ${fmtMs(figures['l.delayMaxMs'])} ms; ` +
        `outbox lag max ${fmtFixed(lagRes2.maxS, 3)} s (/metrics, scrape p50 ` +
        `${fmtInt(lagRes2.scrapeP50Ms)} max ${fmtInt(lagRes2.scrapeMaxMs)} ms), backlog peak ` +
        `${figures['l.peakBacklog']}; pending at end ${pendingEnd}, dead ${deadEnd}; TLS ` +
        `handshakes ${tls3.handshakes} (resumed ${tls3.resumed}; this phase ` +
        `${figures['l.handshakes']} new, ${figures['l.connsUsed']} used of which ` +
        `${figures['l.connsReused']} older; peak open ${tls3.openPeak}) for ${tls3.requests} ` +
        `pushes; server CPU ${fmtInt(usage2.serverCpuPct)}%, other ` +
        `${fmtInt(usage2.otherCpuPct)}%`,
    );
    ctx.log(
      `push lag breakdown (p50 / p99 ms): stamp→enqueued ` +
        `${fmtMs(figures['l.stampToEnqueueP50Ms'])} / ` +
        `${fmtMs(figures['l.stampToEnqueueP99Ms'])}, enqueued→received ` +
        `${fmtMs(figures['l.enqueueToReceiptP50Ms'])} / ` +
        `${fmtMs(figures['l.enqueueToReceiptP99Ms'])}, received→settled ` +
        `${fmtMs(figures['l.receiptToSettledP50Ms'])} / ` +
        `${fmtMs(figures['l.receiptToSettledP99Ms'])}; push receipt − approval answer ` +
        `${fmtMs(figures['l.pushMinusAnswerP50Ms'])} / ` +
        `${fmtMs(figures['l.pushMinusAnswerP99Ms'])} ` +
        `(${fmtInt(figures['l.pushBeforeAnswer'])} pushes before their answer); rows matched ` +
        `${fmtInt(figures['l.breakdownRows'])}, attempts > 1: ` +
        `${fmtInt(figures['l.multiAttempt'])}`,
    );
    return figures;
  } finally {
    agent.destroy();
    await server?.stop();
    await rx?.close();
    certs.cleanup();
  }
}

// ─── report ──────────────────────────────────────────────────────────────────────────────────────

const secs = (ms: number | undefined): string => fmtFixed(ms === undefined ? undefined : ms / 1000, 2);

function pushSection(result: ScenarioResult): Section {
  const { cells, skipped } = handoffCells(result);
  const rows1: string[][] = [];
  const rows2: string[][] = [];
  const notes: string[] = [];
  for (const cell of cells) {
    if (cell.runs.length === 0) {
      const why = `${cell.status}${cell.reason ? `: ${cell.reason}` : ''}`;
      rows1.push([cell.target, why, ...Array<string>(10).fill('')]);
      rows2.push([cell.target, why, ...Array<string>(10).fill('')]);
      continue;
    }
    const runs = cell.runs;
    const m = medians(runs);
    rows1.push([
      `${cell.target} (${runs.length} run${runs.length > 1 ? 's' : ''})`,
      `${fmtInt(m['t.paused'])} of ${fmtInt(m.tasks)}`,
      `${fmtInt(total(runs, 't.received'))} / ${fmtInt(total(runs, 't.expected'))}`,
      `${fmtInt(total(runs, 't.late'))} / **${fmtInt(total(runs, 't.lost'))}**`,
      `**${fmtInt(m['t.pushesPerSec'])}** (${perRun(runs, 't.pushesPerSec', fmtInt)})`,
      fmtInt(m['t.tasksPerSec']),
      `${fmtMs(m['t.delayP50Ms'])} / **${fmtMs(m['t.delayP99Ms'])}** / ${fmtMs(m['t.delayMaxMs'])}`,
      `${fmtInt(m['t.sendP50Ms'])} / ${fmtInt(m['t.sendP99Ms'])}`,
      `${fmtFixed(m['t.maxLagS'], 2)} (${fmtInt(m['t.lagSamples'])} samples) / ${fmtInt(m['t.peakBacklog'])}`,
      `${fmtInt(total(runs, 't.retries'))} / ${fmtInt(total(runs, 't.duplicates'))}`,
      `${fmtInt(m['t.serverCpuPct'])} / ${fmtInt(m['t.otherCpuPct'])}`,
      fmtInt(m['t.handshakes']),
    ]);
    rows2.push([
      `${cell.target} (${runs.length} run${runs.length > 1 ? 's' : ''})`,
      fmtInt(m['l.paused']),
      `${fmtInt(total(runs, 'l.received'))} / ${fmtInt(total(runs, 'l.expected'))}`,
      `${fmtInt(total(runs, 'l.late'))} / **${fmtInt(total(runs, 'l.lost'))}**`,
      `${secs(m['l.approvePhaseMs'])} / **${secs(m['l.allPushedMs'])}** (${perRun(runs, 'l.allPushedMs', secs)})`,
      `${fmtInt(m['l.approvalsPerSec'])} / ${fmtInt(m['l.pushesPerSec'])}`,
      `${fmtMs(m['l.delayP50Ms'])} / **${fmtMs(m['l.delayP99Ms'])}** / ${fmtMs(m['l.delayMaxMs'])}`,
      `**${fmtFixed(m['l.maxLagS'], 2)}** ` +
        `(${perRun(runs, 'l.maxLagS', (x) => fmtFixed(x, 2))}; ${fmtInt(m['l.lagSamples'])} ` +
        `samples)`,
      fmtInt(m['l.peakBacklog']),
      `${fmtInt(m['l.approveP50Ms'])} / ${fmtInt(m['l.approveP99Ms'])}`,
      `${fmtInt(m['l.serverCpuPct'])} / ${fmtInt(m['l.otherCpuPct'])}`,
      `${fmtFixed(m['l.rssBeforeMiB'], 1)} → ${fmtFixed(m['l.rssAfterMiB'], 1)}`,
    ]);
    const bad = ['t.sendErrors', 'l.approveErrors', 'l.duplicates']
      .map((k) => [k, total(runs, k)] as const)
      .filter(([, v]) => v > 0);
    const worstP99 = Math.max(...runs.map((r) => r['l.delayP99Ms'] ?? Infinity));
    const other = Math.max(m['t.otherCpuPct'] ?? 0, m['l.otherCpuPct'] ?? 0);
    const late = total(runs, 'l.late');
    const lateNote = late
      ? `; **${fmtInt(late)} pushes over all runs came only after the run's time budget**, ` +
        'so "all arrived" is the last in-time one'
      : '';
    notes.push(
      `- **${cell.target}, headline** (medians over ${runs.length} run(s)): ` +
        `**${fmtInt(m['t.pushesPerSec'])} pushes/s** delivered to the local receiver while ` +
        `${fmtInt(m.tasks)} tasks were started (${fmtInt(m['t.tasksPerSec'])} tasks/s), ` +
        `commit→receipt p99 **${fmtMs(m['t.delayP99Ms'])} ms**; ${fmtInt(m['l.paused'])} ` +
        `paused tasks approved at once: every \`completed\` push in after ` +
        `**${secs(m['l.allPushedMs'])} s** (approvals answered after ` +
        `${secs(m['l.approvePhaseMs'])} s${lateNote}), ` +
        `commit→receipt p99 **${fmtMs(m['l.delayP99Ms'])} ms**, max outbox lag ` +
        `**${fmtFixed(m['l.maxLagS'], 2)} s**, up to ${fmtInt(m['l.peakBacklog'])} pushes ` +
        `owed at once; lost (neither received nor still pending at the end): ` +
        `${fmtInt(total(runs, 't.lost') + total(runs, 'l.lost'))}, dead-lettered: ` +
        `${fmtInt(total(runs, 't.dead') + total(runs, 'l.dead'))}.` +
        (other > 30
          ? ` **Disturbed**: other processes used ${fmtInt(other)} % of a core during the phases ` +
            `(median), so the server got ${fmtInt(m['t.serverCpuPct'])} / ` +
            `${fmtInt(m['l.serverCpuPct'])} % of its core: absolute figures are pessimistic.`
          : ''),
    );
    notes.push(
      `- ${cell.target}: pushes left pending / dead-lettered on the server at the end of ` +
        `each run: ${perRun(runs, 'pendingEnd', fmtInt)} / ` +
        `${perRun(runs, 'deadEnd', fmtInt)}; attempts counted by the server ` +
        `(\`handoff_push_attempts_total\`, whole run incl. warm-up): delivered ` +
        `${perRun(runs, 'attemptsDelivered', fmtInt)}, retry ` +
        `${perRun(runs, 'attemptsRetry', fmtInt)}, dead ` +
        `${perRun(runs, 'attemptsDead', fmtInt)}; same delivery received twice or more ` +
        `(whole run, counted at the end): ${perRun(runs, 'dupEnd', fmtInt)}; server-side ` +
        `mean commit→delivered (\`handoff_push_delivery_lag_seconds\`) ` +
        `${perRun(runs, 'serverLagMeanMs', fmtMs)} ms; TLS handshakes at the receiver ` +
        `${perRun(runs, 'handshakes', fmtInt)} (resumed ${perRun(runs, 'resumed', fmtInt)}) ` +
        `for ${perRun(runs, 'receiverRequests', fmtInt)} pushes; worst run's p99 after the ` +
        `mass approval ${fmtMs(worstP99)} ms; where the mass approval's delay goes (p50 / ` +
        `p99 ms, median over runs; from the outbox rows read back): stamp→enqueued ` +
        `${fmtMs(m['l.stampToEnqueueP50Ms'])} / ${fmtMs(m['l.stampToEnqueueP99Ms'])}, ` +
        `enqueued→received ${fmtMs(m['l.enqueueToReceiptP50Ms'])} / ` +
        `${fmtMs(m['l.enqueueToReceiptP99Ms'])}, received→settled (row still pending, worker ` +
        `slot held) ${fmtMs(m['l.receiptToSettledP50Ms'])} / ` +
        `${fmtMs(m['l.receiptToSettledP99Ms'])}; push receipt − the approval's own ` +
        `\`message/send\` answer ${fmtMs(m['l.pushMinusAnswerP50Ms'])} / ` +
        `${fmtMs(m['l.pushMinusAnswerP99Ms'])} (throughput phase, push − the starting ` +
        `\`message/send\` answer: ${fmtMs(m['t.pushMinusAnswerP50Ms'])} / ` +
        `${fmtMs(m['t.pushMinusAnswerP99Ms'])}); a \`/metrics\` scrape took p50 ` +
        `${fmtInt(m['t.scrapeP50Ms'])} / max ${fmtInt(m['t.scrapeMaxMs'])} ms (throughput) ` +
        `and ${fmtInt(m['l.scrapeP50Ms'])} / ${fmtInt(m['l.scrapeMaxMs'])} ms (lag); ` +
        (runs.some((r) => (r['t.attempted'] ?? 0) < (r.tasks ?? 0))
          ? `**time budget**: tasks started per run ${perRun(runs, 't.attempted', fmtInt)} of ` +
            `${fmtInt(m.tasks)} (the harness gives a run warm-up + duration + 30 s; task ` +
            `creation stops at 45 % of it); `
          : '') +
        (bad.length
          ? `**problems**: ${bad.map(([k, v]) => `${k} ${fmtInt(v)}`).join(', ')}; `
          : 'no send or approval error, no push received twice; ') +
        `server start ${perRun(runs, 'startMs', fmtInt)} ms; load average 1/5/15 min at the ` +
        `start of each run: ` +
        `${runs.map((r) => [r.loadAvg1, r.loadAvg5, r.loadAvg15].map((x) => fmtFixed(x, 2)).join('/')).join(', ')}.`,
    );
  }
  const cols1 = [
    'server',
    'tasks paused',
    'pushes received in time / expected (all runs)',
    'late / lost (all runs)',
    'pushes/s median (per run)',
    'tasks started/s',
    'commit→receipt p50 / p99 / max ms',
    'message/send p50 / p99 ms',
    'max outbox lag s (/metrics) / peak backlog',
    'retries / duplicates (all runs)',
    'server / other CPU %',
    'TLS handshakes',
  ];
  const cols2 = [
    'server',
    'paused tasks approved',
    '`completed` pushes received in time / expected (all runs)',
    'late / lost (all runs)',
    'approvals answered / all pushes arrived s (per run)',
    'approvals/s / pushes/s',
    'commit→receipt p50 / p99 / max ms',
    'max outbox lag s (/metrics, per run)',
    'peak backlog (receiver)',
    'approval message/send p50 / p99 ms',
    'server / other CPU %',
    'server RSS MiB before → after',
  ];
  const allRuns = cells.flatMap((c) => c.runs);
  const sizes = allRuns.map((r) => fmtInt(r.tasks));
  // This section may end up spliced into a RESULTS.md whose header describes another run.
  const when = allRuns.length
    ? `Measured ` +
      `${new Date(Math.min(...allRuns.map((r) => r.startedAtMs ?? Infinity))).toISOString()} ` +
      `– ${new Date(Math.max(...allRuns.map((r) => r.startedAtMs ?? 0))).toISOString()} ` +
      `(run starts), ${allRuns[0]?.quick ? '**quick**' : '**full**'} mode, ` +
      `${allRuns.length} run(s), each with a time budget of ${fmtInt(allRuns[0]?.budgetS)} ` +
      `s.`
    : '';
  return {
    title: 'Push notifications',
    intro: [
      `Scenario \`${result.name}\`: ${result.description}` +
        (skipped.length ? ` Not applicable to ${skipped.join(', ')} (no push worker).` : '') +
        (when ? ` ${when}` : ''),
      '',
      `**Throughput** — ${sizes[0] ?? 'N'} \`approval\` tasks started over ` +
        `\`message/send\` (blocking, 50 in flight), each with an inline ` +
        `\`pushNotificationConfig\`; each returns at input-required and causes one push.`,
      '',
      mdTable(cols1, rows1),
      '',
      `**Lag under load** — the same tasks, paused at input-required with their pushes ` +
        `drained, all approved at once (\`message/send\` {taskId, data {action:"accept"}}, ` +
        `50 in flight); one \`completed\` push each.`,
    ].join('\n'),
    columns: cols2,
    rows: rows2,
    after: [
      ...notes,
      '',
      "**Method.** Handoff only, and not the harness's own `handoff` instance: that one is " +
        'started without extra environment, and pushes to a loopback receiver need ' +
        '`HANDOFF_PUSH_ALLOW_CIDRS=127.0.0.0/8` (the egress guard refuses private addresses ' +
        "otherwise) and `HANDOFF_PUSH_CA_FILE` (the receiver's CA). So each run starts its " +
        'own `dist/src/cli/main.js serve` with those two settings (every other `HANDOFF_*` ' +
        'variable removed, default retry schedule, worker defaults: 32 deliveries in flight, ' +
        '5 s timeout), a fresh SQLite data dir, pinned to core 0 like every server here; the ' +
        "harness's instance stays idle. " +
        'The receiver (`bench/lib/push-receiver.ts`) is a `node:https` server on 127.0.0.1 ' +
        'in the harness process (core 1) with a throw-away CA and a certificate for IP ' +
        '127.0.0.1 made by `openssl` into a temp dir per run; it answers 200 with an empty ' +
        'body at once, keep-alive, and records for every request the receipt time (body ' +
        'fully read; epoch ms with sub-ms precision), the delivery id, the task id and the ' +
        'pushed state and timestamp. Each task gets its own random token; a push counts as ' +
        'received once per delivery id and task (its body and token headers are checked by ' +
        'test/e2e/push.test.ts, not here). ' +
        'Delay (commit→receipt) = receipt time − `status.timestamp` of the pushed ' +
        "TaskStatusUpdateEvent, which is the transition's `updatedAt`, stamped (whole ms) " +
        'when the transaction that writes the outbox row begins; same host clock. ' +
        'A warm-up of 20 tasks (quick: 10) started and approved, pushes drained, precedes ' +
        'both phases and is not counted. Throughput: pushes/s = pushes received ÷ (last ' +
        'receipt − first `message/send` written); tasks started/s = tasks answered at ' +
        'input-required ÷ the sending time; if pushes/s ≈ tasks/s the worker kept up and the ' +
        'figure is bounded by how fast Handoff creates tasks, not by delivery. Lag: after ' +
        "the throughput phase's pushes are all in (+0.5 s), every paused task is approved, " +
        '50 replies in flight; "all pushes arrived" = last `completed` receipt − first ' +
        'approval written. Max outbox lag = largest `handoff_push_outbox_lag_seconds` (age ' +
        'of the oldest pending outbox row) seen by polling `/metrics` (one scrape at a time, ' +
        'the next ≥ 200 ms after the previous one started) during the phase; under load a ' +
        'scrape itself waits for the server (scrape times are in the notes), so there may be ' +
        'few samples, and the gauge computes the age with a `now` taken before its SQL query ' +
        "waits for the store's single SQLite connection (src/store/repos/push-outbox.ts " +
        '`oldestPendingAgeMs`), so it can read low — the max commit→receipt delay is the ' +
        'receiver-side bound; peak backlog = most pushes committed (by `status.timestamp`) ' +
        'but not yet received at any instant, from the receipts alone. Expected = tasks ' +
        'answered input-required (throughput) or `completed` (lag); "in time" = received ' +
        "before the phase stopped waiting (all expected pushes in, or the run's time " +
        "budget); at the end of the run the receipts are counted again and the server's " +
        'pending and dead-lettered deliveries read (`GET /v1/a2a/deliveries`): late = ' +
        'arrived after the wait or still pending, lost = neither received nor pending ' +
        '(dead-lettered ones included). Server CPU % = Handoff process utime+stime over the ' +
        'phase in % of one core; other CPU % = machine busy time minus Handoff minus the ' +
        'harness, in % of one core (other processes on the box).',
    ].join('\n'),
  };
}

registerScenario({
  name: 'push',
  description:
    'Push notifications: 1,000 `approval` tasks (quick: 200) with an inline push config ' +
    'to a local HTTPS receiver — pushes/s and commit→receipt delay at input-required, ' +
    'then all of them approved at once: time until every `completed` push arrived, its ' +
    'delay, and the outbox lag.',
  order: 70,
  run: runPush,
  section: pushSection,
});
