// Benchmark harness: every registered scenario against every registered target, rounds
// alternating the target order, medians into bench/RESULTS.md and raw figures into
// bench/results.json (local only: git ignores it).
//
//   npm run bench                              full: 3 rounds × 8 s (+2 s warm-up) per run
//   node --import tsx bench/run.ts --quick     smoke: 1 round × 2 s (+0.5 s warm-up), < 60 s in all
//   … --rounds N --duration S --warmup S --scenarios send,get --targets sdk,bare --budget S
//
// Targets come from bench/targets.ts (registerTarget); scenarios from every module in
// bench/scenarios/ (registerScenario), loaded by file name, so adding one needs no edit here.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { header, methodSection, perRunSection, type RunInfo } from './lib/document.js';
import { BENCH_RUN, BENCH_SRC, FROM_SOURCE, machine } from './lib/env.js';
import { pinSelf, readPeakRssMiB } from './lib/proc.js';
import {
  listScenarios,
  listSections,
  listTargets,
  skillsOf,
  type CellResult,
  type RunMode,
  type Scenario,
  type ScenarioResult,
  type Target,
} from './lib/registry.js';
import { fmtInt, fmtMs, shortError, writeReport } from './lib/report.js';
import './targets.js';

interface Options {
  mode: RunMode;
  /** Stop starting new runs after this many seconds (0 = no limit); quick mode must stay < 60 s. */
  budgetS: number;
  scenarios?: string[];
  targets?: string[];
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      scenarios: { type: 'string' },
      targets: { type: 'string' },
      budget: { type: 'string' },
    },
  });
  const quick = values.quick ?? false;
  const num = (v: string | undefined, dflt: number): number => (v === undefined ? dflt : Number(v));
  const mode: RunMode = {
    quick,
    rounds: num(values.rounds, quick ? 1 : 3),
    durationS: num(values.duration, quick ? 2 : 8),
    warmupS: num(values.warmup, quick ? 0.5 : 2),
  };
  if (!(mode.rounds >= 1 && mode.durationS > 0 && mode.warmupS >= 0)) {
    throw new Error(`bad --rounds/--duration/--warmup: ${JSON.stringify(mode)}`);
  }
  const list = (v: string | undefined): string[] | undefined =>
    v
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const budgetS = num(values.budget, quick ? 45 : 0);
  return {
    mode,
    budgetS,
    ...(values.scenarios ? { scenarios: list(values.scenarios) } : {}),
    ...(values.targets ? { targets: list(values.targets) } : {}),
  };
}

/** Import every scenario module of this run's flavour (.ts via tsx, .js from dist). */
async function loadScenarios(): Promise<void> {
  const dir = join(BENCH_RUN, 'scenarios');
  const ext = FROM_SOURCE ? '.ts' : '.js';
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(ext) && !f.endsWith('.d.ts'))
    .sort();
  for (const f of files) await import(pathToFileURL(join(dir, f)).href);
}

function pick<T extends { name: string }>(all: T[], names?: string[]): T[] {
  const unknown = names?.filter((n) => !all.some((x) => x.name === n)) ?? [];
  if (unknown.length) throw new Error(`unknown: ${unknown.join(', ')} (have: ${all.map((x) => x.name).join(', ')})`);
  return names ? all.filter((x) => names.includes(x.name)) : all;
}

/** Round r starts at target r: each target leads, follows and trails once over three rounds. */
const rotate = <T>(xs: T[], r: number): T[] => xs.map((_, i) => xs[(i + r) % xs.length] as T);

/** No single run may hang the harness: warm-up + measure + generous slack for set-up. */
function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} exceeded ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

const log = (msg: string): void => console.log(`[bench] ${msg}`);

/** Targets that failed to start once are not retried (saves time; "not available" for all). */
const unavailable = new Map<string, string>();

/** Last start-up time per target, to predict whether one more run fits the time budget. */
const lastStartMs = new Map<string, number>();

function fitsBudget(target: Target, mode: RunMode, deadline: number): boolean {
  if (!deadline) return true;
  const runMs = (mode.warmupS + mode.durationS) * 1000 + (lastStartMs.get(target.name) ?? 1500) + 500;
  return Date.now() + runMs <= deadline;
}

async function runOnce(scenario: Scenario, target: Target, mode: RunMode, cell: CellResult): Promise<void> {
  let running: Awaited<ReturnType<Target['start']>>;
  const t0 = performance.now();
  try {
    running = await target.start();
  } catch (err) {
    unavailable.set(target.name, shortError(err, 200));
    log(`${target.name}: not available — ${shortError(err, 200)}`);
    return;
  }
  const startMs = performance.now() - t0; // spawn → card answers 2xx (cold start incl. migrations)
  lastStartMs.set(target.name, startMs);
  try {
    const ctx = { target, running, skills: skillsOf(target), mode, log };
    const budget = (scenario.runLimitS?.(mode) ?? mode.warmupS + mode.durationS + 30) * 1000;
    const figures = await withDeadline(scenario.run(ctx), budget, `${scenario.name}/${target.name}`);
    figures.peakRssMiB = readPeakRssMiB(running.pid); // before stop: /proc entry goes with the process
    figures.startMs = startMs;
    cell.runs.push(figures);
    log(
      `${scenario.name.padEnd(9)} ${target.name.padEnd(8)} ` +
        `${fmtInt(figures.reqPerSec).padStart(7)} req/s  p50 ${fmtMs(figures.p50Ms)} ms  p99 ` +
        `${fmtMs(figures.p99Ms)} ms  cpu ${fmtInt(figures.serverCpuUsPerReq)} µs/req  ` +
        `other-cpu ${fmtInt(figures.otherCpuPct)}%  failures ${figures.failures ?? 0}`,
    );
  } catch (err) {
    cell.reason = `${cell.runs.length + 1}. run failed: ${shortError(err, 200)}`;
    log(`${scenario.name} ${target.name}: FAILED — ${shortError(err, 200)}`);
  } finally {
    await running.stop();
  }
}

function finalize(results: ScenarioResult[]): void {
  for (const cell of results.flatMap((r) => r.cells)) {
    const missing = unavailable.get(cell.target);
    if (cell.runs.length > 0) cell.status = 'ok';
    else if (missing !== undefined) Object.assign(cell, { status: 'not available', reason: missing });
    else cell.status = cell.reason === SKIPPED || cell.reason === NOT_APPLICABLE ? 'skipped' : 'failed';
  }
}

const SKIPPED = 'time budget (--budget) used up';
const NOT_APPLICABLE = 'not applicable to this target';

const applies = (scenario: Scenario, target: Target): boolean =>
  (!target.only || target.only.includes(scenario.name)) && scenario.appliesTo?.(target) !== false;

async function measureAll(
  scenarios: Scenario[],
  targets: Target[],
  mode: RunMode,
  budgetS: number,
): Promise<ScenarioResult[]> {
  const deadline = budgetS > 0 ? Date.now() + budgetS * 1000 : 0;
  const results: ScenarioResult[] = scenarios.map((s) => ({
    name: s.name,
    description: s.description,
    cells: targets.map((t) => ({ target: t.name, status: 'failed' as const, runs: [] })),
  }));
  for (let round = 0; round < mode.rounds; round++) {
    log(`round ${round + 1}/${mode.rounds}`);
    for (const [i, scenario] of scenarios.entries()) {
      if (round > 0 && scenario.oneRound) continue;
      for (const target of rotate(targets, round)) {
        if (unavailable.has(target.name)) continue;
        const cell = results[i]!.cells.find((c) => c.target === target.name)!;
        if (!applies(scenario, target)) cell.reason = NOT_APPLICABLE;
        else if (fitsBudget(target, mode, deadline)) await runOnce(scenario, target, mode, cell);
        else if (cell.runs.length === 0) cell.reason = SKIPPED;
      }
    }
  }
  finalize(results);
  return results;
}

function write(info: RunInfo, scenarios: Scenario[], results: ScenarioResult[]): void {
  const sections = [
    ...scenarios.map((s, i) => s.section(results[i]!)),
    ...listSections().flatMap((src) => src.build(results)),
    perRunSection(results),
    methodSection(),
  ];
  writeReport(join(BENCH_SRC, 'RESULTS.md'), header(info), sections);
  const json = { ...info, targets: info.targets.map((t) => ({ name: t.name, description: t.description })), results };
  writeFileSync(join(BENCH_SRC, 'results.json'), JSON.stringify(json, null, 2) + '\n');
  log(`wrote ${join(BENCH_SRC, 'RESULTS.md')} and results.json`);
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  await loadScenarios();
  // An opt-in scenario runs only when named (bench/README.md).
  const scenarios = pick(
    listScenarios().filter((s) => !s.optIn || opts.scenarios?.includes(s.name)),
    opts.scenarios,
  );
  const targets = pick(listTargets(), opts.targets);
  const pinned = pinSelf();
  const info: RunInfo = { machine: machine(), mode: opts.mode, pinned, fromSource: FROM_SOURCE, targets };
  log(`${scenarios.map((s) => s.name).join(', ')} × ${targets.map((t) => t.name).join(', ')}; pinned: ${pinned}`);
  const started = Date.now();
  const results = await measureAll(scenarios, targets, opts.mode, opts.budgetS);
  write(info, scenarios, results);
  log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
}

main().then(
  () => process.exit(0), // autocannon/http leftovers must not keep the harness alive
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
