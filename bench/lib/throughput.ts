// The request/response scenario kind behind `send`, `send-c1`, `get` and `approval`: closed-loop
// load for a fixed time on a fresh server, server CPU from /proc around the measured window only
// (warm-up excluded), and one RESULTS.md table with a ratio row per target against the SDK.
import { runLoad, type LoadSpec, type Step } from './load.js';
import { readCpuUs, readSystemCpu } from './proc.js';
import {
  listTargets,
  skillsOf,
  type CellResult,
  type Figures,
  type Scenario,
  type ScenarioContext,
  type ScenarioResult,
} from './registry.js';
import { fmtFixed, fmtInt, fmtMs, fmtRatio, fmtTimes, type Section } from './report.js';
import { medians, spread } from './stats.js';

/** The target every ratio is taken against. */
export const REFERENCE = 'sdk';

export interface ThroughputOptions {
  name: string;
  description: string;
  order: number;
  connections: number;
  /** Steps per flow (2+ = a multi-request flow, reported as flows/s too). */
  flowSteps?: number;
  /** Per-run set-up on the fresh server (e.g. create the task to read); returns the flow's steps. */
  prepare(ctx: ScenarioContext): Promise<Step[]>;
}

export function throughputScenario(opts: ThroughputOptions): Scenario {
  return {
    name: opts.name,
    description: opts.description,
    order: opts.order,
    run: (ctx) => measure(ctx, opts),
    section: (result) => throughputSection(result, (opts.flowSteps ?? 1) > 1),
  };
}

async function measure(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  const spec: Omit<LoadSpec, 'durationS'> = {
    url: ctx.running.url,
    connections: opts.connections,
    steps: await opts.prepare(ctx),
  };
  if (ctx.mode.warmupS > 0) await runLoad({ ...spec, durationS: ctx.mode.warmupS });
  const cpu0 = readCpuUs(ctx.running.pid);
  const sys0 = readSystemCpu();
  const t0 = performance.now();
  const load = await runLoad({ ...spec, durationS: ctx.mode.durationS });
  const wallUs = (performance.now() - t0) * 1000;
  const cpuUs = readCpuUs(ctx.running.pid) - cpu0;
  const sys1 = readSystemCpu();
  const usPerReq = cpuUs / load.requests;
  const pct = (us: number): number => (us / wallUs) * 100;
  const serverCpuPct = pct(cpuUs);
  return {
    ...load,
    failures: load.errors + load.non2xx + load.unexpected,
    serverCpuPct,
    // CPU burnt by anything but the server and the load generator (other jobs on the box):
    // a run where this is high is contaminated — rerun it or distrust it.
    otherCpuPct: Math.max(0, pct(sys1.busyUs - sys0.busyUs) - serverCpuPct - load.loadGenCpuPct),
    stealPct: pct(sys1.stealUs - sys0.stealUs),
    serverCpuUsPerReq: usPerReq,
    reqPerBusyCore: 1e6 / usPerReq, // capacity of one fully used core, even when load-gen bound
    flowsPerBusyCore: (1e6 / usPerReq) * (load.flowsPerSec / load.reqPerSec),
    ...(ctx.target.name === REFERENCE ? {} : await pairedWithReference(ctx, opts)),
  };
}

/** Windows per side in the paired measurement (A B B A …). */
const PAIRED_WINDOWS = 4;

/**
 * This VM's CPU speed drifts from minute to minute, so a target and the SDK measured a minute
 * apart can differ by 1.5× for no reason of their own. Here the SDK runs beside the (warm) target,
 * both pinned to the server core, and they are loaded in alternating windows (A B B A …, the
 * measured time split between them); the capacity ratio comes from CPU summed per side.
 */
async function pairedWithReference(ctx: ScenarioContext, opts: ThroughputOptions): Promise<Figures> {
  const ref = listTargets().find((t) => t.name === REFERENCE);
  if (!ref) return {};
  const running = await ref.start();
  try {
    const refCtx: ScenarioContext = { ...ctx, target: ref, running, skills: skillsOf(ref) };
    const sides = [
      {
        pid: ctx.running.pid,
        spec: { url: ctx.running.url, connections: opts.connections, steps: await opts.prepare(ctx) },
        cpuUs: 0,
        requests: 0,
      },
      {
        pid: running.pid,
        spec: { url: running.url, connections: opts.connections, steps: await opts.prepare(refCtx) },
        cpuUs: 0,
        requests: 0,
      },
    ];
    if (ctx.mode.warmupS > 0) await runLoad({ ...sides[1]!.spec, durationS: ctx.mode.warmupS });
    const windowS = ctx.mode.durationS / (2 * PAIRED_WINDOWS);
    for (let w = 0; w < 2 * PAIRED_WINDOWS; w++) {
      const side = sides[[0, 1, 1, 0][w % 4]!]!;
      const cpu0 = readCpuUs(side.pid);
      const load = await runLoad({ ...side.spec, durationS: windowS });
      side.cpuUs += readCpuUs(side.pid) - cpu0;
      side.requests += load.requests;
    }
    const [mine, sdk] = sides as [(typeof sides)[0], (typeof sides)[0]];
    return {
      pairedCpuUsPerReq: mine.cpuUs / mine.requests,
      pairedRefCpuUsPerReq: sdk.cpuUs / sdk.requests,
      // > 1: this target serves more requests than the SDK per second of server CPU.
      pairedCapacityRatio: sdk.cpuUs / sdk.requests / (mine.cpuUs / mine.requests),
    };
  } finally {
    await running.stop();
  }
}

const sum = (runs: Figures[], key: string): number => runs.reduce((a, r) => a + (r[key] ?? 0), 0);

function targetRow(cell: CellResult, flows: boolean): string[] {
  const m = medians(cell.runs);
  const rps = spread(cell.runs, 'reqPerSec');
  return [
    cell.reason ? `${cell.target} (${cell.reason})` : cell.target,
    `**${fmtInt(rps.median)}** (${fmtInt(rps.min)}–${fmtInt(rps.max)})`,
    ...(flows ? [`**${fmtInt(m.flowsPerSec)}**`] : []),
    fmtMs(m.p50Ms),
    fmtMs(m.p90Ms),
    fmtMs(m.p99Ms),
    `${fmtInt(sum(cell.runs, 'failures'))} / ${fmtInt(sum(cell.runs, 'requests'))}`,
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

export function throughputSection(result: ScenarioResult, flows: boolean): Section {
  const columns = flows ? [...COLUMNS.slice(0, 2), 'flows/s', ...COLUMNS.slice(2)] : COLUMNS;
  const blank = (): string[] => columns.slice(2).map(() => '');
  const ok = result.cells.filter((c) => c.runs.length > 0);
  const ref = ok.find((c) => c.target === REFERENCE);
  const rows = result.cells.map((c) =>
    c.runs.length > 0 ? targetRow(c, flows) : [c.target, `${c.status}${c.reason ? `: ${c.reason}` : ''}`, ...blank()],
  );
  for (const c of ok) if (ref && c !== ref) rows.push(ratioRow(c, ref, flows));
  return { title: `${result.name}`, intro: result.description, columns, rows };
}
