// The protocol scenario kind behind `send-v1`, `get-v1` and `approval-v1`: one request/response
// workload over every A2A binding a target serves (0.3 JSON-RPC, 1.0 JSON-RPC, 1.0 REST), beside
// the reference servers (`sdk` for 0.3, `sdk-v1` for 1.0), all loaded in alternating windows so
// that every ratio (1.0 ÷ 0.3 on one server, target ÷ SDK per binding) is free of the VM's drift.
//
// A run of target T: T (fresh, started by the harness) and a fresh reference server per binding
// it is not itself the reference for; a "side" = one server × one binding, each warmed up, then
// windows in the order A B C …, … C B A (twice per side); the measured time, 2 × --duration, is
// split evenly between the sides. Figures per side under `<binding>.` (the target's) and
// `ref.<binding>.` (the reference's); the top-level ones are the target's 1.0 JSON-RPC side.
import { http } from './http.js';
import { type LoadRequest, measureAlternating, type Step } from './load.js';
import { ALL_PROTOCOLS, type Protocol, PROTOCOLS, type ProtocolId, protocolsOf } from './protocols.js';
import {
  listTargets,
  prefixed,
  type CellResult,
  type Figures,
  type Running,
  type Scenario,
  type ScenarioContext,
  type ScenarioResult,
  type SkillIds,
  skillsOf,
} from './registry.js';
import { fmtFixed, fmtInt, fmtMs, type Section } from './report.js';
import { spread, medians, total } from './stats.js';

/** The reference server of each binding. */
const REFERENCE: Readonly<Record<ProtocolId, string>> = {
  'jsonrpc-0.3': 'sdk',
  'jsonrpc-1.0': 'sdk-v1',
  'rest-1.0': 'sdk-v1',
};

/** Windows per side: A B C … then … C B A. */
const WINDOWS = 2;

export interface ProtocolScenarioOptions {
  name: string;
  description: string;
  order: number;
  connections: number;
  /** Steps per flow (2+ = a multi-request flow, reported as flows/s too). */
  flowSteps?: number;
  /** Per-side set-up on the server (e.g. create the task to read); returns the flow's steps. */
  prepare(protocol: Protocol, server: Running, skills: SkillIds): Promise<Step[]>;
}

export function protocolScenario(opts: ProtocolScenarioOptions): Scenario {
  return {
    name: opts.name,
    description: opts.description,
    order: opts.order,
    appliesTo: (target) => protocolsOf(target).includes('jsonrpc-1.0'),
    run: (ctx) => measure(ctx, opts),
    section: (result) => protocolSection(result, (opts.flowSteps ?? 1) > 1),
  };
}

/** One request of `protocol` sent outside the load (set-up), with its headers. */
export async function callOnce(server: Running, req: LoadRequest): Promise<string> {
  const url = new URL(req.path, server.url).href;
  const res = await http(req.method, url, { body: req.body, ...(req.headers ? { headers: req.headers } : {}) });
  if (res.status < 200 || res.status >= 300) throw new Error(`${req.method} ${url}: HTTP ${res.status} ${res.text}`);
  return res.text;
}

interface Side {
  key: string;
  protocol: ProtocolId;
  server: Running;
  skills: SkillIds;
}

async function measure(ctx: ScenarioContext, opts: ProtocolScenarioOptions): Promise<Figures> {
  const own = protocolsOf(ctx.target);
  const refProtocols = ALL_PROTOCOLS.filter((p) => REFERENCE[p] !== ctx.target.name);
  const refs = new Map<string, { running: Running; skills: SkillIds }>();
  try {
    for (const name of new Set(refProtocols.map((p) => REFERENCE[p]))) {
      const target = listTargets().find((t) => t.name === name);
      if (target) refs.set(name, { running: await target.start(), skills: skillsOf(target) });
    }
    const sides: Side[] = [
      ...own.map((p) => ({ key: p, protocol: p, server: ctx.running, skills: ctx.skills })),
      ...refProtocols.flatMap((p) => {
        const ref = refs.get(REFERENCE[p]);
        return ref ? [{ key: `ref.${p}`, protocol: p, server: ref.running, skills: ref.skills }] : [];
      }),
    ];
    const loads = [];
    for (const s of sides) {
      loads.push({
        base: new URL(s.server.url).origin,
        pid: s.server.pid,
        steps: await opts.prepare(PROTOCOLS[s.protocol], s.server, s.skills),
        warmupS: ctx.mode.warmupS,
      });
    }
    const measured = await measureAlternating(loads, {
      connections: opts.connections,
      windowS: ctx.mode.durationS / sides.length,
      windows: WINDOWS,
    });
    const bySide = new Map(sides.map((s, i) => [s.key, measured[i] as Figures]));
    for (const s of sides) logSide(ctx, s, bySide.get(s.key) as Figures);
    return figuresOf(own, bySide);
  } finally {
    await Promise.all([...refs.values()].map((r) => r.running.stop()));
  }
}

function logSide(ctx: ScenarioContext, side: Side, f: Figures): void {
  const who = side.key.startsWith('ref.') ? REFERENCE[side.protocol] : ctx.target.name;
  ctx.log(
    `  ${who.padEnd(8)} ${PROTOCOLS[side.protocol].label.padEnd(12)} ${fmtInt(f.reqPerSec).padStart(7)} req/s  ` +
      `p50 ${fmtMs(f.p50Ms)} ms  cpu ${fmtInt(f.serverCpuUsPerReq)} µs/req  failures ${f.failures ?? 0}`,
  );
}

/** Every side's figures, the per-run ratios, and the 1.0 JSON-RPC side's as the headline. */
function figuresOf(own: readonly ProtocolId[], bySide: Map<string, Figures>): Figures {
  const cpu = (key: string): number => bySide.get(key)?.serverCpuUsPerReq ?? NaN;
  const out: Figures = {};
  for (const [key, f] of bySide) Object.assign(out, prefixed(key, f));
  const zeroThree = own.includes('jsonrpc-0.3') ? 'jsonrpc-0.3' : 'ref.jsonrpc-0.3';
  for (const p of own) {
    // CPU per request of this binding ÷ of 0.3 (< 1 = cheaper than 0.3).
    if (p !== 'jsonrpc-0.3') out[`vs03.${p}`] = cpu(p) / cpu(zeroThree);
    // Requests per CPU second ÷ the reference's on the same binding (> 1 = more than the SDK).
    if (bySide.has(`ref.${p}`)) out[`vsRef.${p}`] = cpu(`ref.${p}`) / cpu(p);
  }
  const headline = bySide.get('jsonrpc-1.0') ?? {};
  const sum = (k: string): number => own.reduce((n, p) => n + (bySide.get(p)?.[k] ?? 0), 0);
  return { ...out, ...headline, failures: sum('failures'), requests: sum('requests') };
}

// ─── report ───

/** "**median** (min–max)" of a per-run ratio; `unit` after the median only. */
function ratioCell(runs: readonly Figures[], key: string, digits: number, unit = ''): string {
  const s = spread(runs, key);
  const f = (n: number): string => fmtFixed(n, digits);
  return Number.isFinite(s.median) ? `**${f(s.median)}${unit}** (${f(s.min)}–${f(s.max)})` : '';
}

function protocolRows(cell: CellResult, flows: boolean): string[][] {
  const m = medians(cell.runs);
  const own = ALL_PROTOCOLS.filter((p) => cell.runs.some((r) => r[`${p}.requests`] !== undefined));
  return own.map((p) => {
    const k = (f: string): string => `${p}.${f}`;
    const vs03 = ratioCell(cell.runs, `vs03.${p}`, 2, '×');
    const across = own.includes('jsonrpc-0.3') ? '' : ` vs \`${REFERENCE['jsonrpc-0.3']}\``;
    const vsRef = ratioCell(cell.runs, `vsRef.${p}`, 3);
    return [
      cell.target,
      PROTOCOLS[p].label,
      fmtInt(m[k('reqPerSec')]),
      ...(flows ? [fmtInt(m[k('flowsPerSec')])] : []),
      fmtMs(m[k('p50Ms')]),
      fmtMs(m[k('p99Ms')]),
      `${fmtInt(total(cell.runs, k('failures')))} / ${fmtInt(total(cell.runs, k('requests')))}`,
      fmtInt(m[k('otherCpuPct')]),
      fmtInt(m[k('serverCpuUsPerReq')]),
      `**${fmtInt(m[k('reqPerBusyCore')])}**`,
      vs03 && vs03 + across,
      vsRef && `${vsRef} vs \`${REFERENCE[p]}\``,
    ];
  });
}

const COLUMNS = [
  'server',
  'protocol',
  'req/s',
  'p50 ms',
  'p99 ms',
  'errors / requests (all runs)',
  'other CPU %',
  'server CPU µs/req',
  'req/s per busy core',
  'CPU/req ÷ 0.3 (same server)',
  'per-core ÷ SDK (same binding)',
];

function protocolSection(result: ScenarioResult, flows: boolean): Section {
  const columns = flows ? [...COLUMNS.slice(0, 3), 'flows/s', ...COLUMNS.slice(3)] : COLUMNS;
  const rows = result.cells.flatMap((c) =>
    c.runs.length > 0
      ? protocolRows(c, flows)
      : [[c.target, `${c.status}${c.reason ? `: ${c.reason}` : ''}`, ...columns.slice(2).map(() => '')]],
  );
  return {
    title: result.name,
    intro: result.description,
    columns,
    rows,
    after:
      'Every figure comes from the alternating windows (no unpaired run): the target over each binding ' +
      'it serves and the reference servers (`sdk` 0.3.14 for 0.3, `sdk-v1` 1.3.0 for 1.0) beside it, each ' +
      'warmed up, then loaded in turn (A B C …, … C B A), the measured time (2 × duration) split evenly. ' +
      '"CPU/req ÷ 0.3": this binding’s server CPU per request ÷ the same server’s over 0.3 JSON-RPC ' +
      '(< 1 = cheaper; for `sdk-v1`, which serves no 0.3, ÷ `sdk` 0.3.14). "per-core ÷ SDK": the ' +
      'reference’s CPU per request ÷ this one’s on the same binding (> 1 = more requests per CPU second ' +
      'than the SDK). Both: median over runs (per-run min–max). "other CPU %": the busy time of ' +
      'everything else on the machine during this side’s windows, in % of one core: high = the ' +
      'figures were taken under load.',
  };
}
