// The OpenWOP REST run API, Handoff only — the SDK and bare baselines have no such API,
// so these scenarios run on the `handoff` target alone (on other targets they stop at once with
// "not applicable"; `--targets handoff` avoids starting those servers at all).
//
//   runs-create    POST /v1/runs {workflowId:'approval', inputs:{prompt:'x'}} (run parks at its gate)
//   runs-echo      POST /v1/runs {workflowId:'echo'}, then GET /v1/runs/{id} until completed
//                  (only when the POST did not already answer `completed`): completed runs/s
//   send-stores    A2A blocking message/send of the echo skill (the `send` scenario's request): the
//                  Handoff CPU per send on SQLite and on PostgreSQL, side by side (issue 17)
//   runs-get       GET /v1/runs/{id} with 1,000 and with 100,000 (10,000 with --quick) completed
//                  echo runs stored, measured in alternating windows (A B B A) so both see the
//                  same machine noise; reports both and the ratio large/small
//
// create/echo/send-stores measure SQLite on the harness's server (fresh temp dir) and PostgreSQL on a server
// this module starts (throwaway schema, dropped after). runs-get seeds two data dirs directly
// (lib/seed-runs.ts, once per harness process, reused by later rounds: GETs do not write) and
// starts two fresh servers on them each round. All servers pinned to core 0, 50 connections.
// Each scenario's section has the full figures; the "OpenWOP run API" section gathers
// the headline tables.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TERMINAL_STATUSES } from '../../src/store/model.js';
import { PG_URL, probePg, startHandoffPg, startHandoffSqlite, type PgInfo } from '../lib/handoff-server.js';
import { measureLoad, measurePaired, type Step } from '../lib/load.js';
import {
  prefixed,
  registerScenario,
  registerSection,
  type CellResult,
  type Figures,
  type ScenarioContext,
  type ScenarioResult,
} from '../lib/registry.js';
import {
  fmtFixed,
  fmtInt,
  fmtMs,
  fmtTimes,
  mdTable,
  perRun,
  rateCell,
  shortError,
  type Section,
} from '../lib/report.js';
import { sendNew } from '../lib/rpc.js';
import { seedInChild, type SeedSummary } from '../lib/seed-runs.js';
import { medians, total } from '../lib/stats.js';

const CONNECTIONS = 50;
const TARGET = 'handoff';
const SMALL = 1_000;
const LARGE = (quick: boolean): number => (quick ? 10_000 : 100_000);
/** Distinct run ids the GET scenarios rotate through. */
const ROTATE = 1_000;
/** Follow-up GETs an echo flow makes at most before it gives up on the run. */
const POLLS = 50;

const NAMES = { create: 'runs-create', echo: 'runs-echo', get: 'runs-get', send: 'send-stores' } as const;

// ─── what the section needs besides numbers (figures are numeric only) ───
let pgInfo: PgInfo | undefined;
/** Why PostgreSQL figures are missing, per scenario (last reason seen). */
const pgMissing = new Map<string, string>();

function requireHandoff(ctx: ScenarioContext): void {
  roundsRun = ctx.mode.rounds;
  if (ctx.target.name !== TARGET) {
    throw new Error(
      `not applicable: the OpenWOP run API is Handoff-only (--targets ${TARGET} skips ${ctx.target.name})`,
    );
  }
}

/**
 * When the harness gives up on this run (run.ts: warm-up + measured + 30 s), less a margin. Work
 * started after that would go on unobserved next to the following runs, so it is not started.
 */
function deadlineOf(ctx: ScenarioContext): number {
  return Date.now() + (ctx.mode.warmupS + ctx.mode.durationS + 30) * 1000 - 3000;
}

function ensureTime(deadline: number, needS: number, what: string): void {
  const leftS = (deadline - Date.now()) / 1000;
  if (leftS < needS)
    throw new Error(
      `${what} skipped: ${Math.max(0, leftS).toFixed(1)} s left of the harness's per-run ` +
        `limit, ${needS.toFixed(1)} s needed (slow set-up: machine busy?)`,
    );
}

const originOf = (ctx: ScenarioContext): string => new URL(ctx.running.url).origin;
const statusOf = (body: string): string | undefined => /"status":"([a-z-]+)"/.exec(body)?.[1];
const runIdOf = (body: string): string | undefined => /"runId":"([^"]+)"/.exec(body)?.[1];
/** Run statuses after which a run never changes (Handoff's own list). */
const TERMINAL: ReadonlySet<string> = TERMINAL_STATUSES;

/** Top-level copies for the harness's log line and per-run table. */
function headline(f: Figures): Figures {
  const keys = ['reqPerSec', 'p50Ms', 'p99Ms', 'serverCpuUsPerReq', 'otherCpuPct', 'failures', 'requests'];
  return Object.fromEntries(keys.filter((k) => f[k] !== undefined).map((k) => [k, f[k] as number]));
}

function logLine(ctx: ScenarioContext, what: string, f: Figures): void {
  const db = f.dbCpuUsPerReq !== undefined ? ` + db ${fmtInt(f.dbCpuUsPerReq)} µs/req` : '';
  ctx.log(
    `  ${what.padEnd(24)} ${fmtInt(f.reqPerSec).padStart(7)} req/s  ` +
      `${fmtInt(f.flowsPerSec).padStart(7)} flows/s  p50 ${fmtMs(f.p50Ms)} ms  p99 ` +
      `${fmtMs(f.p99Ms)} ms  cpu ${fmtInt(f.serverCpuUsPerReq)} µs/req${db}  other-cpu ` +
      `${fmtInt(f.otherCpuPct)}%  failures ${fmtInt(f.failures)}`,
  );
}

// ─── workloads ───

const createSteps = (): Step[] => [
  {
    request: () => ({ method: 'POST', path: '/v1/runs', body: { workflowId: 'approval', inputs: { prompt: 'x' } } }),
    check: (b) => runIdOf(b) !== undefined,
    completes: (b) => runIdOf(b) !== undefined,
    tally: (b) => statusOf(b) ?? 'none',
  },
];

/** POST a run; if the answer is not yet `completed`, GET the run until it is (at most POLLS times). */
const completionSteps = (body: Record<string, unknown>): Step[] => [
  {
    request: () => ({ method: 'POST', path: '/v1/runs', body }),
    check: (b) => runIdOf(b) !== undefined && !['failed', 'cancelled'].includes(statusOf(b) ?? ''),
    capture: (b, flow) => {
      flow.runId = runIdOf(b);
      flow.done = TERMINAL.has(statusOf(b) ?? '') ? '1' : undefined;
    },
    completes: (b) => statusOf(b) === 'completed',
    tally: (b) => `post-${statusOf(b) ?? 'none'}`,
  },
  ...Array.from(
    { length: POLLS },
    (_, i): Step => ({
      request: (flow) => (flow.done || !flow.runId ? undefined : { method: 'GET', path: `/v1/runs/${flow.runId}` }),
      check: (b) => statusOf(b) !== undefined && !['failed', 'cancelled'].includes(statusOf(b) ?? ''),
      capture: (b, flow) => {
        if (TERMINAL.has(statusOf(b) ?? '')) flow.done = '1';
      },
      completes: (b) => statusOf(b) === 'completed',
      tally: (b) => (i === POLLS - 1 && statusOf(b) !== 'completed' ? 'gave-up' : 'get'),
    }),
  ),
];
const echoSteps = (): Step[] => completionSteps({ workflowId: 'echo' });

/** A2A message/send of the echo skill, answered `completed` (a fresh messageId each time). */
const a2aSendSteps = (): Step[] => [
  {
    request: () => ({ method: 'POST', path: '/v1/a2a', body: sendNew('echo') }),
    check: (b) => b.includes('"state":"completed"'),
    completes: (b) => b.includes('"state":"completed"'),
  },
];

/** GET /v1/runs/{id}, rotating through `ids` (one counter shared by all connections). */
function getSteps(ids: string[]): Step[] {
  let next = 0;
  return [
    {
      request: () => ({ method: 'GET', path: `/v1/runs/${ids[next++ % ids.length]}` }),
      check: (b) => b.includes('"status":"completed"') && b.includes('"workflowId":"echo"'),
      completes: () => true,
    },
  ];
}

/** `backendPids` only for a server on PostgreSQL (its backends' CPU is reported separately). */
async function measureOn(
  ctx: ScenarioContext,
  server: { base: string; pid: number; backendPids?: () => Promise<number[]> },
  steps: Step[],
): Promise<Figures> {
  return measureLoad(
    { baseUrl: server.base, connections: CONNECTIONS, steps },
    {
      pid: server.pid,
      warmupS: ctx.mode.warmupS,
      durationS: ctx.mode.durationS,
      ...(server.backendPids ? { helperPids: server.backendPids } : {}),
    },
  );
}

/** The same workload on SQLite (the harness's fresh server) and on PostgreSQL (our own). */
async function sqliteAndPg(ctx: ScenarioContext, scenario: string, steps: () => Step[]): Promise<Figures> {
  requireHandoff(ctx);
  const deadline = deadlineOf(ctx);
  const sqlite = await measureOn(ctx, { base: originOf(ctx), pid: ctx.running.pid }, steps());
  logLine(ctx, `${scenario} sqlite`, sqlite);
  let pg: Figures = { available: 0 };
  try {
    pgInfo ??= await probePg();
    const server = await startHandoffPg();
    try {
      ensureTime(deadline, ctx.mode.warmupS + ctx.mode.durationS + 2, 'PostgreSQL measurement');
      pg = { available: 1, ...(await measureOn(ctx, server, steps())) };
      logLine(ctx, `${scenario} postgres`, pg);
    } finally {
      await server.stop();
    }
  } catch (err) {
    pgMissing.set(scenario, shortError(err));
    ctx.log(`  ${scenario} postgres: not available — ${shortError(err)}`);
  }
  return { ...headline(sqlite), ...prefixed('sqlite', sqlite), ...prefixed('pg', pg) };
}

// Seeded data dirs, one per size, made once per harness process (the first round pays for it) and
// removed when the harness exits.
const seeds = new Map<number, Promise<{ dir: string; seed: SeedSummary }>>();
const seedDirs = new Set<string>();
process.once('exit', () => {
  for (const d of seedDirs) rmSync(d, { recursive: true, force: true });
});

function seeded(stored: number): Promise<{ dir: string; seed: SeedSummary }> {
  let p = seeds.get(stored);
  if (!p) {
    const dir = mkdtempSync(join(tmpdir(), `handoff-bench-seed-${stored}-`));
    seedDirs.add(dir);
    p = seedInChild(dir, stored, ROTATE).then(
      (seed) => ({ dir, seed }),
      (err: unknown) => {
        seeds.delete(stored); // a later round starts over in a fresh dir
        seedDirs.delete(dir);
        rmSync(dir, { recursive: true, force: true });
        throw err;
      },
    );
    seeds.set(stored, p);
  }
  return p;
}

async function getPaired(ctx: ScenarioContext): Promise<Figures> {
  requireHandoff(ctx);
  const deadline = deadlineOf(ctx);
  const sizes = [SMALL, LARGE(ctx.mode.quick)] as const;
  const fresh = sizes.some((n) => !seeds.has(n));
  const [small, large] = await Promise.all(sizes.map(seeded));
  if (fresh) {
    for (const { seed } of [small!, large!]) {
      ctx.log(
        `  ${NAMES.get}: seeded ${fmtInt(seed.stored)} runs (${seed.eventsPerRun} events ` +
          `each) in ${fmtInt(seed.insertMs)} ms (+${fmtInt(seed.templateMs)} ms for the ` +
          `template run)`,
      );
    }
  }
  const t0 = performance.now();
  const started = await Promise.allSettled([small!, large!].map((s) => startHandoffSqlite({ dataDir: s.dir })));
  const startMs = performance.now() - t0;
  const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  try {
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    ensureTime(
      deadline,
      2 * ctx.mode.warmupS + ctx.mode.durationS + 3,
      'measurement (seeded data kept for the next round)',
    );
    // The measured time (durationS) is split between the two servers, in windows of ≤ 2 s.
    const windowS = Math.min(2, ctx.mode.durationS / 2);
    const windows = Math.max(1, Math.round(ctx.mode.durationS / 2 / windowS));
    const side = (i: 0 | 1, picked: string[]) => ({
      base: servers[i]!.base,
      pid: servers[i]!.pid,
      steps: getSteps(picked),
      warmupS: ctx.mode.warmupS,
    });
    const [fs, fl] = await measurePaired([side(0, small!.seed.picked), side(1, large!.seed.picked)], {
      connections: CONNECTIONS,
      windowS,
      windows,
    });
    const extra = (seed: SeedSummary): Figures => ({
      storedRuns: seed.stored,
      rotatedIds: seed.picked.length,
      seedInsertMs: seed.insertMs,
      seedTemplateMs: seed.templateMs,
      eventsPerRun: seed.eventsPerRun,
    });
    const a = { ...fs, ...extra(small!.seed) };
    const b = { ...fl, ...extra(large!.seed) };
    logLine(ctx, `${NAMES.get} (${fmtInt(a.storedRuns)})`, a);
    logLine(ctx, `${NAMES.get} (${fmtInt(b.storedRuns)})`, b);
    const ratio = (k: string): number => (b[k] ?? NaN) / (a[k] ?? NaN);
    return {
      ...headline(b),
      ...prefixed('small', a),
      ...prefixed('large', b),
      'ratio.p50Ms': ratio('p50Ms'),
      'ratio.p90Ms': ratio('p90Ms'),
      'ratio.p99Ms': ratio('p99Ms'),
      'ratio.reqPerSec': ratio('reqPerSec'),
      'ratio.serverCpuUsPerReq': ratio('serverCpuUsPerReq'),
      serversStartMs: startMs,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

// ─── report ───

const handoffCell = (r: ScenarioResult | undefined): CellResult | undefined =>
  r?.cells.find((c) => c.target === TARGET);

function errorsCell(runs: Figures[], p: string): string {
  return `${fmtInt(total(runs, `${p}failures`))} / ${fmtInt(total(runs, `${p}requests`))}`;
}

/** "waiting-approval 100 %" from tally.<label> counts, summed over runs. */
function talliesCell(runs: Figures[], p: string, filter: (label: string) => boolean = () => true): string {
  const counts = new Map<string, number>();
  for (const r of runs) {
    for (const [k, v] of Object.entries(r)) {
      if (k.startsWith(`${p}tally.`) && filter(k.slice(p.length + 6)))
        counts.set(k.slice(p.length + 6), (counts.get(k.slice(p.length + 6)) ?? 0) + v);
    }
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  if (!total) return '–';
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${fmtFixed((100 * v) / total, 1)} %`)
    .join(', ');
}

/** "other CPU %" of every run, in run order: how much the box's other work disturbed each one. */
const otherCell = (runs: Figures[], p: string): string => perRun(runs, `${p}otherCpuPct`);

/** " Runs measured: 2 of 3 (last failure: …)." when a round failed, else "". */
function failedNote(cell: CellResult | undefined, rounds: number): string {
  if (!cell?.reason || cell.runs.length === 0) return '';
  return ` Runs measured: ${cell.runs.length} of ${rounds} (last failure: ${cell.reason}).`;
}

let roundsRun = 1;

/** Runs of a cell in which the PostgreSQL part was measured. */
const pgRuns = (cell: CellResult): Figures[] => cell.runs.filter((r) => r['pg.available'] === 1);

function unavailableRow(cell: CellResult | undefined, label: string, width: number): string[] {
  const why = !cell ? 'not run' : `${cell.status}${cell.reason ? `: ${cell.reason}` : ''}`;
  return [label, why, ...Array.from({ length: width - 2 }, () => '')];
}

const DETAIL_COLUMNS = [
  'measured on',
  'req/s median (min–max)',
  'flows/s',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'max ms',
  'errors / requests (all runs)',
  'server CPU %',
  'server CPU µs/req',
  'PostgreSQL backends CPU µs/req',
  'load-gen CPU %',
  'other CPU %',
  'server RSS MiB (end)',
  'bytes/resp',
];

function detailRow(label: string, runs: Figures[], p: string): string[] {
  const m = medians(runs);
  const g = (k: string): number | undefined => m[`${p}${k}`];
  return [
    label,
    rateCell(runs, `${p}reqPerSec`),
    fmtInt(g('flowsPerSec')),
    fmtMs(g('p50Ms')),
    fmtMs(g('p90Ms')),
    fmtMs(g('p99Ms')),
    fmtMs(g('maxMs')),
    errorsCell(runs, p),
    fmtInt(g('serverCpuPct')),
    fmtInt(g('serverCpuUsPerReq')),
    fmtInt(g('dbCpuUsPerReq')),
    fmtInt(g('loadGenCpuPct')),
    fmtInt(g('otherCpuPct')),
    fmtFixed(g('rssMiB'), 1),
    fmtInt(g('bytesPerResp')),
  ];
}

/** The section of runs-create / runs-echo: one row per store. */
function storesSection(result: ScenarioResult, flowsMeaning: string): Section {
  const cell = handoffCell(result);
  const rows: string[][] = [];
  if (!cell || cell.runs.length === 0) rows.push(unavailableRow(cell, TARGET, DETAIL_COLUMNS.length));
  else {
    rows.push(detailRow('handoff, SQLite (fresh temp dir)', cell.runs, 'sqlite.'));
    const pg = pgRuns(cell);
    if (pg.length) rows.push(detailRow(`handoff, PostgreSQL (${pg.length}/${cell.runs.length} runs)`, pg, 'pg.'));
    else
      rows.push([
        'handoff, PostgreSQL',
        `not available: ${pgMissing.get(result.name) ?? '?'}`,
        ...DETAIL_COLUMNS.slice(2).map(() => ''),
      ]);
  }
  return {
    title: result.name,
    intro: result.description,
    columns: DETAIL_COLUMNS,
    rows,
    after:
      `flows/s = ${flowsMeaning}.${failedNote(cell, roundsRun)} Handoff-only scenario: ` +
      `other targets are not measured. Headline figures: section "OpenWOP run API (issue ` +
      `2)".`,
  };
}

function getSection(result: ScenarioResult): Section {
  const cell = handoffCell(result);
  const rows: string[][] = [];
  if (!cell || cell.runs.length === 0) rows.push(unavailableRow(cell, TARGET, DETAIL_COLUMNS.length));
  else {
    const m = medians(cell.runs);
    rows.push(detailRow(`handoff, SQLite, ${fmtInt(m['small.storedRuns'])} stored runs`, cell.runs, 'small.'));
    rows.push(detailRow(`handoff, SQLite, ${fmtInt(m['large.storedRuns'])} stored runs`, cell.runs, 'large.'));
  }
  const perRun = cell?.runs.map((r) => fmtTimes(r['ratio.p99Ms'])).join(', ') ?? '–';
  return {
    title: result.name,
    intro: result.description,
    columns: DETAIL_COLUMNS,
    rows,
    after:
      `p99 large/small per run (paired windows): ${perRun}.${failedNote(cell, roundsRun)} ` +
      `Handoff-only scenario: other targets are not measured. Headline figures: section ` +
      `"OpenWOP run API".`,
  };
}

registerScenario({
  name: NAMES.create,
  description:
    '`POST /v1/runs {workflowId:"approval", inputs:{prompt:"x"}}` (the run parks at its ' +
    'approval gate), 50 connections; SQLite and PostgreSQL.',
  order: 60,
  run: (ctx) => sqliteAndPg(ctx, NAMES.create, createSteps),
  section: (r) => storesSection(r, 'runs created per second (201 with a runId)'),
});

registerScenario({
  name: NAMES.send,
  description:
    'A2A `message/send` of the echo skill (blocking, answered `completed`), 50 connections; SQLite and ' +
    'PostgreSQL: the Handoff CPU per send on each store.',
  order: 61,
  run: (ctx) => sqliteAndPg(ctx, NAMES.send, a2aSendSteps),
  section: (r) => storesSection(r, 'sends answered `completed` per second'),
});

registerScenario({
  name: NAMES.echo,
  description:
    `\`POST /v1/runs {workflowId:"echo"}\`, then \`GET /v1/runs/{id}\` until ` +
    `\`completed\` when the POST did not already answer \`completed\` (≤ ${POLLS} GETs), ` +
    `50 connections; SQLite and PostgreSQL.`,
  order: 61,
  run: (ctx) => sqliteAndPg(ctx, NAMES.echo, echoSteps),
  section: (r) => storesSection(r, 'echo runs seen `completed` per second (in the POST answer or a follow-up GET)'),
});

registerScenario({
  name: NAMES.get,
  description:
    `\`GET /v1/runs/{id}\`, 50 connections, rotating through ${fmtInt(ROTATE)} run ids ` +
    `picked at random among the stored ones, on two servers: ${fmtInt(SMALL)} and ` +
    `100,000 (10,000 with --quick) completed echo runs stored (seeded before the servers ` +
    `start), measured in alternating windows (A B B A, ≤ 2 s each, the run's measured ` +
    `time split between them) so both see the same machine noise.`,
  order: 62,
  run: getPaired,
  section: getSection,
});

// ─── the issue's section ───

function storeRows(
  result: ScenarioResult | undefined,
  width: number,
  row: (label: string, runs: Figures[], p: string) => string[],
): string[][] {
  const cell = handoffCell(result);
  if (!cell || cell.runs.length === 0)
    return [unavailableRow(cell, 'SQLite', width), unavailableRow(cell, 'PostgreSQL', width)];
  const pg = pgRuns(cell);
  const pgLabel = pgInfo ? (/^PostgreSQL [\d.]+/.exec(pgInfo.version)?.[0] ?? 'PostgreSQL') : 'PostgreSQL';
  return [
    row('SQLite', cell.runs, 'sqlite.'),
    pg.length
      ? row(`${pgLabel}${pg.length < cell.runs.length ? ` (${pg.length}/${cell.runs.length} runs)` : ''}`, pg, 'pg.')
      : [
          'PostgreSQL',
          `not available: ${pgMissing.get(result!.name) ?? '?'}`,
          ...Array.from({ length: width - 2 }, () => ''),
        ],
  ];
}

function issueSection(results: ScenarioResult[]): Section[] {
  const by = (name: string): ScenarioResult | undefined => results.find((r) => r.name === name);
  const mine = Object.values(NAMES).map(by);
  if (mine.every((r) => r === undefined)) return [];
  const [create, echo, get] = mine;

  const createCols = [
    'store',
    'runs created/s median (min–max)',
    'p50 ms',
    'p99 ms',
    'Handoff CPU µs/request',
    'runs/s per busy Handoff core',
    'PostgreSQL backends CPU µs/request',
    'errors / requests (all runs)',
    'POST answered',
    'other CPU %',
  ];
  const createRows = create
    ? storeRows(create, createCols.length, (label, runs, p) => {
        const m = medians(runs);
        return [
          label,
          rateCell(runs, `${p}reqPerSec`),
          fmtMs(m[`${p}p50Ms`]),
          fmtMs(m[`${p}p99Ms`]),
          `**${fmtInt(m[`${p}serverCpuUsPerReq`])}**`,
          fmtInt(m[`${p}reqPerBusyCore`]),
          fmtInt(m[`${p}dbCpuUsPerReq`]),
          errorsCell(runs, p),
          talliesCell(runs, p),
          otherCell(runs, p),
        ];
      })
    : [['(runs-create not run)', ...createCols.slice(1).map(() => '')]];

  const echoCols = [
    'store',
    'completed runs/s median (min–max)',
    'requests/s',
    'p50 ms',
    'p99 ms',
    'Handoff CPU µs/completed run',
    'completed runs/s per busy Handoff core',
    'PostgreSQL backends CPU µs/run',
    'POST answered',
    'follow-up GETs',
    'errors / requests (all runs)',
    'other CPU %',
  ];
  const echoRows = echo
    ? storeRows(echo, echoCols.length, (label, runs, p) => {
        const m = medians(runs);
        const gaveUp = total(runs, `${p}tally.gave-up`);
        const gets = total(runs, `${p}tally.get`) + gaveUp;
        const flows = total(runs, `${p}flows`);
        const dbPerFlow =
          (m[`${p}dbCpuUsPerReq`] ?? NaN) * ((m[`${p}reqPerSec`] ?? NaN) / (m[`${p}flowsPerSec`] ?? NaN));
        return [
          label,
          rateCell(runs, `${p}flowsPerSec`),
          fmtInt(m[`${p}reqPerSec`]),
          fmtMs(m[`${p}p50Ms`]),
          fmtMs(m[`${p}p99Ms`]),
          `**${fmtInt(m[`${p}serverCpuUsPerFlow`])}**`,
          fmtInt(m[`${p}flowsPerBusyCore`]),
          fmtInt(dbPerFlow),
          talliesCell(runs, p, (l) => l.startsWith('post-')).replace(/post-/g, ''),
          `${fmtInt(gets)} (${fmtFixed(flows ? gets / flows : NaN, 3)} per run)` +
            (gaveUp ? `, ${fmtInt(gaveUp)} gave up` : ''),
          errorsCell(runs, p),
          otherCell(runs, p),
        ];
      })
    : [['(runs-echo not run)', ...echoCols.slice(1).map(() => '')]];

  const getCols = [
    'stored runs',
    'req/s median (min–max)',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'Handoff CPU µs/request',
    'req/s per busy Handoff core',
    'errors / requests (all runs)',
    'seeding (insert) s',
    'other CPU %',
  ];
  const getCell = handoffCell(get);
  const getRows: string[][] = [];
  if (!getCell || getCell.runs.length === 0)
    getRows.push(unavailableRow(getCell, get ? 'runs-get' : '(runs-get not run)', getCols.length));
  else {
    const runs = getCell.runs;
    const m = medians(runs);
    for (const p of ['small.', 'large.']) {
      getRows.push([
        `**${fmtInt(m[`${p}storedRuns`])}**`,
        rateCell(runs, `${p}reqPerSec`),
        fmtMs(m[`${p}p50Ms`]),
        fmtMs(m[`${p}p90Ms`]),
        `**${fmtMs(m[`${p}p99Ms`])}**`,
        fmtInt(m[`${p}serverCpuUsPerReq`]),
        fmtInt(m[`${p}reqPerBusyCore`]),
        errorsCell(runs, p),
        fmtFixed((m[`${p}seedInsertMs`] ?? NaN) / 1000, 1),
        otherCell(runs, p),
      ]);
    }
    getRows.push([
      `**${fmtInt(m['large.storedRuns'])} / ${fmtInt(m['small.storedRuns'])}**`,
      fmtFixed(m['ratio.reqPerSec'], 3),
      fmtTimes(m['ratio.p50Ms']),
      fmtTimes(m['ratio.p90Ms']),
      `**${fmtTimes(m['ratio.p99Ms'])}** (per run: ${runs.map((r) => fmtTimes(r['ratio.p99Ms'])).join(', ')})`,
      fmtTimes(m['ratio.serverCpuUsPerReq']),
      '',
      '',
      '',
      '',
    ]);
  }

  const pgText = pgInfo ? `${pgInfo.version} at \`${PG_URL}\` (${pgInfo.settings})` : `\`${PG_URL}\``;
  const method = [
    '**Method.** Handoff only: the A2A baselines (`sdk`, `bare`) have no run API, so ' +
      'there is no ratio here; compare with the A2A `send`/`get` scenarios (same harness, ' +
      'same method) when they are in the same run.',
    'Each figure comes from a fresh `dist/src/cli/main.js serve` pinned to core 0 ' +
      '(`taskset -c 0`), driven closed-loop by autocannon on core 1 (50 keep-alive ' +
      'connections, HTTP/1.1),',
    'a warm-up on the same process first; medians over rounds (min–max shown for rates); ' +
      'errors = socket errors + timeouts + non-2xx + 2xx answers of the wrong shape, ' +
      'summed over all runs.',
    '"Handoff CPU µs" = utime+stime of the Handoff process (all threads) over the ' +
      'measured window ÷ requests (or ÷ completed runs); "per busy core" = 10⁶ ÷ that.',
    `SQLite = the harness's fresh temp data dir (WAL, synchronous=NORMAL); PostgreSQL = ` +
      `${pgText}, a throwaway \`bench_…\` schema per run (HANDOFF_PG_SCHEMA), dropped ` +
      `afterwards; PostgreSQL itself is not pinned and shares both cores, and the CPU of ` +
      `the backends serving Handoff (found by application_name) is reported separately, ` +
      `not in the Handoff figure.`,
    `Echo: every POST that answers \`completed\` counts as a completed run; otherwise ` +
      `the same connection GETs the run until it is (≤ ${POLLS} GETs), and requests/s ` +
      `includes those GETs.`,
    `GET: two data dirs are seeded before their servers start — one real echo run ` +
      `created through \`POST /v1/runs\`, then cloned with fresh UUIDv7 ids and shifted ` +
      `timestamps (run row + its events + A2A task row) in multi-row INSERTs of 500 runs ` +
      `through the store's Kysely handle (once per harness process; every round starts two ` +
      `fresh servers on them); requests rotate through ${fmtInt(ROTATE)} distinct run ids ` +
      `picked at random among the stored runs. The two servers are measured in alternating ` +
      `windows (A B B A, ≤ 2 s each, each a new set of 50 connections; the run's measured ` +
      `time is split between the two) so that both see the same disturbances of this ` +
      `shared machine; the ratio row is the median of the per-run ratios.`,
    '`--quick` stores 10,000 instead of 100,000 runs in the large case. "other CPU %" ' +
      '(per run, in run order) = machine-wide busy CPU minus Handoff, its PostgreSQL ' +
      'backends and the load generator, in % of one core: other work on the box; runs ' +
      'above ~30 % were disturbed.',
  ].join(' ');

  return [
    {
      title: 'OpenWOP run API',
      intro:
        `${method}\n\n**Runs created/s** — \`POST /v1/runs {workflowId:"approval", ` +
        `inputs:{prompt:"x"}}\`, 50 connections (the run parks at its approval gate).`,
      columns: createCols,
      rows: createRows,
      after: [
        '**Echo runs completed/s** — `POST /v1/runs {workflowId:"echo"}` (+ `GET ' +
          '/v1/runs/{id}` until `completed` if needed), 50 connections.',
        '',
        mdTable(echoCols, echoRows),
        ...[create, echo].flatMap((r) => {
          const note = failedNote(handoffCell(r), roundsRun);
          return note ? ['', `_${r!.name}:${note}_`] : [];
        }),
        '',
        '**`GET /v1/runs/{id}` vs stored runs** (SQLite), 50 connections, one completed echo ' +
          'run per request, rotating through 1,000 ids; last row = large ÷ small, median of ' +
          'the per-run (paired) ratios (≈ 1 means the read stays flat).',
        '',
        mdTable(getCols, getRows),
        ...(failedNote(getCell, roundsRun) ? ['', `_runs-get:${failedNote(getCell, roundsRun)}_`] : []),
      ].join('\n'),
    },
  ];
}

registerSection({ order: 60, build: issueSection });
