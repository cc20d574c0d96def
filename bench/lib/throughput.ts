// The request/response scenario kind behind `send`, `send-c1`, `get` and `approval`: closed-loop
// JSON-RPC load for a fixed time on a fresh server (lib/load.ts), server CPU around the measured
// window only (warm-up excluded), and one RESULTS.md table with a ratio row per target against the SDK.
import { measureLoad, measurePaired, type FlowContext, type PairedSide, type Step } from './load.js';
import {
  listTargets,
  skillsOf,
  type CellResult,
  type Figures,
  type Scenario,
  type RunMode,
  type ScenarioContext,
  type ScenarioResult,
} from './registry.js';
import { fmtFixed, fmtInt, fmtMs, fmtRatio, fmtTimes, rateCell, type Section } from './report.js';
import { medians, spread, total } from './stats.js';
import { scrapeMetrics } from './metrics-text.js';

/** The target every ratio is taken against. */
const REFERENCE = 'sdk';
/** The build being measured, and the one HANDOFF_BENCH_BEFORE adds to measure it against (targets.ts). */
const CURRENT = 'handoff';
const BEFORE = 'handoff-before';
/** The durable floor (baselines/sqlite-floor-server.ts): `handoff` is paired with it directly. */
const FLOOR = 'floor';

/** One JSON-RPC request of a flow, POSTed to the target's JSON-RPC endpoint. */
export interface RpcStep {
  /** The request body; undefined abandons the flow (an earlier step failed). */
  body(flow: FlowContext): unknown;
  /** A substring every correct answer contains; others count as `unexpected`. */
  expect?: string;
  /** Pulls what later steps need out of the answer. */
  capture?(body: string, flow: FlowContext): void;
}

export interface ThroughputOptions {
  name: string;
  description: string;
  order: number;
  connections: number;
  /** Steps per flow (2+ = a multi-request flow, reported as flows/s too). */
  flowSteps?: number;
  /** Per-run set-up on the fresh server (e.g. create the task to read); returns the flow's steps. */
  prepare(ctx: ScenarioContext): Promise<RpcStep[]>;
}

export function throughputScenario(opts: ThroughputOptions): Scenario {
  return {
    name: opts.name,
    description: opts.description,
    order: opts.order,
    run: (ctx) => measure(ctx, opts),
    runLimitS,
    section: (result) => throughputSection(result, (opts.flowSteps ?? 1) > 1),
  };
}

/**
 * The harness's default limit, plus the SDK pairing (the SDK loaded alone as long as this target,
 * then the windows), the floor pairing and the pairing with the build before (warm-up and
 * windows each), if any.
 */
function runLimitS(mode: RunMode): number {
  const own = mode.warmupS + mode.durationS;
  const pairing = 2 * own + mode.durationS + 20;
  const before = listTargets().some((t) => t.name === BEFORE) ? pairing : 0;
  return own + 30 + own + pairing + before;
}

/** The flow as load steps on `url` (the JSON-RPC endpoint); every answer to the last step ends a flow. */
function loadSteps(url: string, steps: RpcStep[]): { base: string; steps: Step[] } {
  const { origin, pathname } = new URL(url);
  return {
    base: origin,
    steps: steps.map(
      (s, i): Step => ({
        request: (flow) => {
          const body = s.body(flow);
          return body === undefined ? undefined : { method: 'POST', path: pathname, body };
        },
        ...(s.expect === undefined ? {} : { check: (b) => b.includes(s.expect as string) }),
        ...(s.capture ? { capture: s.capture } : {}),
        ...(i === steps.length - 1 ? { completes: () => true } : {}),
      }),
    ),
  };
}

async function measure(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  const { base, steps } = loadSteps(ctx.running.url, await opts.prepare(ctx));
  const figures = await measureLoad(
    { baseUrl: base, connections: opts.connections, steps },
    { pid: ctx.running.pid, warmupS: ctx.mode.warmupS, durationS: ctx.mode.durationS },
  );
  const commits = await groupCommits(ctx);
  if (ctx.target.name === REFERENCE) return { ...figures, ...commits };
  // The SDK pairing first: the extra load of the build-vs-build pairing would change this
  // target's history, and with it its SDK figure (docs/decisions.md).
  const sdk = await pairedWithReference(ctx, opts);
  return {
    ...figures,
    ...commits,
    ...sdk,
    ...(await pairedWithFloor(ctx, opts)),
    ...(await pairedWithBefore(ctx, opts)),
  };
}

/**
 * Handoff on SQLite: store transactions per COMMIT over the run (warm-up included), from its
 * `handoff_store_group_commit_transactions` histogram. Other targets have no such metric.
 */
async function groupCommits(ctx: ScenarioContext): Promise<Figures> {
  if (!ctx.target.name.startsWith('handoff')) return {};
  const metrics = await scrapeMetrics(new URL(ctx.running.url).origin);
  const sum = metrics.value(/^handoff_store_group_commit_transactions_sum (\S+)$/m);
  const count = metrics.value(/^handoff_store_group_commit_transactions_count (\S+)$/m);
  return count > 0 ? { txPerCommit: sum / count } : {};
}

/** Windows per side in the paired measurement (A B B A …). */
const PAIRED_WINDOWS = 4;

/**
 * This VM's CPU speed drifts from minute to minute, so a target and the SDK measured a minute
 * apart can differ by 1.5× for no reason of their own. Here the SDK runs beside the (warm) target,
 * both pinned to the server core, and they are loaded in alternating windows (A B B A …, the
 * measured time split between them); the capacity ratio comes from CPU summed per side.
 *
 * The fresh SDK is first loaded alone for as long as the target was (warm-up + run): a server's
 * CPU per request moves with the load it has served (its JIT, its heap), so both enter the windows
 * with the same history. Warmed for the warm-up time only, an SDK paired against an SDK that had
 * served its run measured 0.973 (8 pairs); with equal history, 1.004 (docs/decisions.md).
 */
async function pairedWithReference(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  const paired = await pairedWith(ctx, opts, REFERENCE, { aloneS: ctx.mode.warmupS + ctx.mode.durationS });
  if (!paired) return {};
  return {
    pairedCpuUsPerReq: paired.mine,
    pairedRefCpuUsPerReq: paired.other,
    // > 1: this target serves more requests than the SDK per second of server CPU.
    pairedCapacityRatio: paired.other / paired.mine,
  };
}

/**
 * `handoff` against the floor, paired the same way as with the build before (both loaded in
 * alternating windows first): Handoff's distance from what its writes cost, measured directly.
 * The quotient of the two targets' SDK pairings, taken minutes apart, moved with the machine:
 * from one VM to the next the three servers' CPU per request moved by different amounts (a
 * tasks/get: the SDK's by under 5 %, Handoff's by 40 %), so the SDK did not cancel the drift.
 */
async function pairedWithFloor(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  const floor = listTargets().find((t) => t.name === FLOOR);
  if (ctx.target.name !== CURRENT || !floor?.only?.includes(opts.name)) return {};
  const paired = await pairedWith(ctx, opts, FLOOR, { alternatingS: ctx.mode.warmupS + ctx.mode.durationS });
  // > 1: Handoff spends more CPU per request than the floor.
  return paired ? { pairedFloorCostRatio: paired.mine / paired.other } : {};
}

/**
 * With HANDOFF_BENCH_BEFORE set, `handoff` is also paired with `handoff-before` the same way: a
 * change's effect on CPU per request, without the drift between two targets' separate runs. Both
 * are first loaded in alternating windows for as long as `handoff` has been (warm-up + run):
 * Handoff's CPU per request keeps falling for several seconds after it starts (JIT), and rises
 * again after it has idled a few seconds, so a side that warmed up alone while the other idled
 * measured 0.75-1.34x its copy (bench/README.md). Both are loaded only after the SDK pairing.
 */
async function pairedWithBefore(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  if (ctx.target.name !== CURRENT) return {};
  const paired = await pairedWith(ctx, opts, BEFORE, { alternatingS: ctx.mode.warmupS + ctx.mode.durationS });
  // > 1: this build spends less CPU per request than the one before it.
  return paired ? { pairedBeforeRatio: paired.other / paired.mine } : {};
}

/**
 * CPU µs per request of this (warm) target and of a fresh `other` target in alternating windows,
 * after `other` is loaded alone for `aloneS`, or both in alternating windows for `alternatingS`.
 */
async function pairedWith(
  ctx: ScenarioContext,
  opts: ThroughputOptions,
  other: string,
  warmup: { aloneS: number } | { alternatingS: number },
): Promise<{ mine: number; other: number } | undefined> {
  const target = listTargets().find((t) => t.name === other);
  if (!target) return undefined;
  const running = await target.start();
  try {
    const otherCtx: ScenarioContext = { ...ctx, target, running, skills: skillsOf(target) };
    const mine = loadSteps(ctx.running.url, await opts.prepare(ctx));
    const theirs = loadSteps(running.url, await opts.prepare(otherCtx));
    const aloneS = 'aloneS' in warmup ? warmup.aloneS : 0;
    const sides: [PairedSide, PairedSide] = [
      { base: mine.base, pid: ctx.running.pid, steps: mine.steps, warmupS: 0 },
      { base: theirs.base, pid: running.pid, steps: theirs.steps, warmupS: aloneS },
    ];
    const windowS = ctx.mode.durationS / (2 * PAIRED_WINDOWS);
    const load = { connections: opts.connections, windowS };
    if ('alternatingS' in warmup && warmup.alternatingS > 0) {
      await measurePaired(sides, { ...load, windows: Math.ceil(warmup.alternatingS / windowS) });
    }
    const [a, b] = await measurePaired(sides, { ...load, windows: PAIRED_WINDOWS });
    return { mine: a.serverCpuUsPerReq ?? NaN, other: b.serverCpuUsPerReq ?? NaN };
  } finally {
    await running.stop();
  }
}

function targetRow(cell: CellResult, flows: boolean): string[] {
  const m = medians(cell.runs);
  return [
    cell.reason ? `${cell.target} (${cell.reason})` : cell.target,
    rateCell(cell.runs, 'reqPerSec'),
    ...(flows ? [`**${fmtInt(m.flowsPerSec)}**`] : []),
    fmtMs(m.p50Ms),
    fmtMs(m.p90Ms),
    fmtMs(m.p99Ms),
    `${fmtInt(total(cell.runs, 'failures'))} / ${fmtInt(total(cell.runs, 'requests'))}`,
    fmtFixed(m.peakRssMiB, 1),
    fmtInt(m.serverCpuPct),
    fmtInt(m.loadGenCpuPct),
    fmtInt(m.otherCpuPct),
    fmtInt(m.serverCpuUsPerReq),
    fmtInt(m.reqPerBusyCore),
    fmtInt(m.bytesPerResp),
    fmtInt(m.startMs),
  ];
}

/** target/sdk: throughput as a plain ratio (>1 = faster), latency and CPU cost as × (<1 = better). */
function ratioRow(cell: CellResult, ref: CellResult, flows: boolean): string[] {
  const a = medians(cell.runs);
  const b = medians(ref.runs);
  const r = (k: string): number => (a[k] ?? NaN) / (b[k] ?? NaN);
  return [
    `**${cell.target}/${ref.target}**`,
    `**${fmtRatio(r('reqPerSec'))}**`,
    ...(flows ? [fmtRatio(r('flowsPerSec'))] : []),
    fmtTimes(r('p50Ms')),
    '',
    fmtTimes(r('p99Ms')),
    '',
    fmtTimes(r('peakRssMiB')),
    '',
    '',
    '',
    fmtTimes(r('serverCpuUsPerReq')),
    `${fmtRatio(r('reqPerBusyCore'))}; paired **${fmtRatio(a.pairedCapacityRatio ?? NaN)}** (${pairedRange(cell)})`,
    '',
    '',
  ];
}

/** The per-run paired ratios, min–max. */
function pairedRange(cell: CellResult): string {
  const p = spread(cell.runs, 'pairedCapacityRatio');
  return `${fmtRatio(p.min)}–${fmtRatio(p.max)}`;
}

const COLUMNS = [
  'server',
  'req/s median (min–max)',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'errors / requests (all runs)',
  'peak RSS MiB',
  'server CPU %',
  'load-gen CPU %',
  'other CPU %',
  'server CPU µs/req',
  'req/s per busy core',
  'bytes/resp',
  'start ms',
];

function throughputSection(result: ScenarioResult, flows: boolean): Section {
  const columns = flows ? [...COLUMNS.slice(0, 2), 'flows/s', ...COLUMNS.slice(2)] : COLUMNS;
  const blank = (): string[] => columns.slice(2).map(() => '');
  const ok = result.cells.filter((c) => c.runs.length > 0);
  const ref = ok.find((c) => c.target === REFERENCE);
  const rows = result.cells.map((c) =>
    c.runs.length > 0 ? targetRow(c, flows) : [c.target, `${c.status}${c.reason ? `: ${c.reason}` : ''}`, ...blank()],
  );
  for (const c of ok) if (ref && c !== ref) rows.push(ratioRow(c, ref, flows));
  return {
    title: `${result.name}`,
    intro: result.description + groupCommitNote(ok) + floorNote(ok) + beforeNote(ok),
    columns,
    rows,
  };
}

/** " handoff against floor, paired: …" where the floor serves the scenario. */
function floorNote(cells: CellResult[]): string {
  const r = currentPaired(cells, 'pairedFloorCostRatio');
  return r
    ? ` ${CURRENT} against ${FLOOR}, paired in alternating windows (its CPU per request ÷ the floor's; ` +
        `1 = no cost beyond its writes): **${r.median}×** (${r.range}).`
    : '';
}

/** " handoff ÷ handoff-before, paired: …" when the run measured a build before this one. */
function beforeNote(cells: CellResult[]): string {
  const r = currentPaired(cells, 'pairedBeforeRatio');
  return r
    ? ` ${CURRENT} against ${BEFORE}, paired in alternating windows (its CPU per request ÷ this build's; > 1 = ` +
        `this build is cheaper): **${r.median}** (${r.range}).`
    : '';
}

/** The median and min–max over `handoff`'s runs of one of its pairings, formatted; undefined if not measured. */
function currentPaired(cells: CellResult[], key: string): { median: string; range: string } | undefined {
  const cell = cells.find((c) => c.target === CURRENT);
  const ratio = cell ? medians(cell.runs)[key] : undefined;
  if (!cell || ratio === undefined || !Number.isFinite(ratio)) return undefined;
  const p = spread(cell.runs, key);
  return { median: fmtRatio(ratio), range: `${fmtRatio(p.min)}–${fmtRatio(p.max)}` };
}

/** " Transactions per SQLite COMMIT: handoff 24.1, …" for the targets that report it. */
function groupCommitNote(cells: CellResult[]): string {
  const parts = cells
    .map((c) => ({ target: c.target, tx: medians(c.runs).txPerCommit }))
    .filter((p): p is { target: string; tx: number } => p.tx !== undefined && Number.isFinite(p.tx))
    .map((p) => `${p.target} ${fmtFixed(p.tx, 1)}`);
  return parts.length > 0
    ? ` Store transactions per SQLite COMMIT (group commit, median over runs): ${parts.join(', ')}.`
    : '';
}
