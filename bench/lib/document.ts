// The fixed parts of RESULTS.md around the scenario tables: the header (when, where, how) and
// the per-run and method sections. Registered sections (registerSection) go between them.
import type { Machine } from './env.js';
import type { RunMode, ScenarioResult, Target } from './registry.js';
import { fmtInt, type Section } from './report.js';

export interface RunInfo {
  machine: Machine;
  mode: RunMode;
  /** Load generator pinned to CPU 1 and servers to CPU 0. */
  pinned: boolean;
  fromSource: boolean;
  targets: Target[];
}

function modeText(mode: RunMode): string {
  const kind = mode.quick ? 'quick' : 'full';
  return (
    `**${kind}**: ${mode.rounds} round(s), ${mode.durationS} s measured + ` +
    `${mode.warmupS} s warm-up per run, targets alternated per round`
  );
}

export function header(info: RunInfo): string {
  const m = info.machine;
  const pkgs = Object.entries(m.packages)
    .map(([n, v]) => `${n} ${v}`)
    .join(', ');
  const rows = [
    ['date', m.date],
    ['mode', modeText(info.mode)],
    ['machine', `${m.nproc} CPU(s), ${m.cpuModel}`],
    ['Node', m.node],
    ['packages', pkgs],
    [
      'pinning',
      info.pinned
        ? 'server on CPU 0 (`taskset -c 0`), load generator (autocannon, in the harness process) on CPU 1'
        : '**not pinned** (taskset missing or fewer than 2 CPUs): server and load generator share cores',
    ],
    [
      'servers run from',
      info.fromSource ? 'sources via tsx (`node --import tsx bench/run.ts`)' : 'compiled dist/ (`npm run bench`)',
    ],
    ...info.targets.map((t) => [`target \`${t.name}\``, t.description]),
  ];
  return [
    '# Handoff benchmark results',
    '',
    'Written by `bench/run.ts` (`npm run bench`; `--quick` for a smoke run). ' +
      'Raw figures: `bench/results.json`, written beside this file by every run (not committed).',
    '',
    '| | |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
  ].join('\n');
}

/** req/s of every run, so the spread behind each median is visible. */
export function perRunSection(results: ScenarioResult[]): Section {
  const rows = results.flatMap((r) =>
    r.cells
      .filter((c) => c.runs.length > 0)
      .map((c) => [r.name, c.target, c.runs.map((f) => fmtInt(f.reqPerSec)).join(', ')]),
  );
  return { title: 'Per-run figures (req/s, in run order)', columns: ['scenario', 'server', 'req/s'], rows };
}

export function methodSection(): Section {
  return {
    title: 'How these figures are measured',
    columns: [],
    rows: [],
    after: [
      '- Every run starts a fresh server process (empty store), pinned to one core; ' +
        'autocannon runs closed-loop (each connection sends its next request when the ' +
        'previous answer arrives) over HTTP/1.1 keep-alive; a warm-up run precedes the ' +
        'measured run on the same process.',
      '- Figures per target are medians over rounds; req/s also shows min–max. "errors" = ' +
        'socket errors + timeouts + non-2xx + 2xx answers lacking the expected state ' +
        '(JSON-RPC errors are HTTP 200), summed over all runs.',
      '- Latency = time from writing a request to its complete response, per request ' +
        '(sub-ms precision). For `approval` it mixes both requests of the flow.',
      '- Server CPU µs/req = server CPU time (utime+stime of the process, all threads ' +
        'incl. GC, from /proc/<pid>/stat) during the measured run / responses. "req/s per ' +
        'busy core" = 10⁶ / that: the capacity of one fully used core, meaningful even when ' +
        'the load generator was the limit (load-gen CPU % near 100 with server CPU % below ' +
        '100 — then req/s is a lower bound).',
      '- "other CPU %" = machine-wide busy CPU (/proc/stat) minus server minus load ' +
        'generator during the measured run, in % of one core: work of other processes on the ' +
        'box. A run with a high figure there was disturbed; the medians over rounds are ' +
        'meant to absorb that, but a quick (1-round) run cannot.',
      '- Peak RSS = VmHWM of the server at the end of the run (warm-up included). ' +
        'bytes/resp = response bytes on the wire incl. status line and headers. start ms = ' +
        'spawn until the agent card answers 2xx.',
      '- Ratio rows (`x/sdk`): req/s and per-core capacity as plain ratios (> 1 = more than ' +
        "the SDK); latency, RSS and CPU cost as × (< 1 = better). The machine's speed drifts " +
        'between runs, so compare targets measured in the same run.',
      '- "paired" (req/s per busy core, ratio rows of the request/response scenarios): ' +
        'after its own measurement, each target runs again beside a fresh SDK server (both ' +
        'pinned to the server core, the SDK first loaded alone for as long as the target was), ' +
        'and the two are loaded in alternating windows (A B B A A B B A, the measured time split evenly between them); ' +
        "the ratio is SDK CPU per request ÷ this target's CPU per request, summed over its " +
        'windows. Shown: the median over runs and the per-run range. It cancels the ' +
        "minute-to-minute drift of this VM's CPU speed that the unpaired ratio (of medians " +
        'taken at different times) carries.',
      '- "handoff against floor" (intro of `send`, `get`, `approval`): `handoff` and a fresh ' +
        'floor server, both loaded in alternating windows for as long as `handoff` was, then ' +
        "measured the same way; Handoff's CPU per request ÷ the floor's (1× = it costs no more " +
        'than the rows it commits).',
    ].join('\n'),
  };
}
