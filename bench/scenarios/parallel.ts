// Parallel work (issue 32): what a fork costs and what it saves, each as a ratio of two workflows
// measured in the same run on one Handoff (SQLite, pinned to core 0, its own data dir; the
// harness's `handoff` target idles beside it, as in http-chain).
//
//   1. fan-out: 64 `core.transform` branches of one `core.parallel`, merged by one `core.join`
//      (all), against the same 64 transforms in one line. Runs one at a time, the two workflows in
//      alternating windows (A B B A …) so the VM's drift falls on both; wall time per run (POST to
//      run.completed) and server CPU per run, as ratios fan-out ÷ line.
//   2. parallel I/O: two `http.request` nodes in sibling branches, against a loopback server that
//      answers one after 200 ms and the other after 300 ms, against the same two calls in a line.
//      The fork should take about max() = 300 ms, the line the sum = 500 ms.
//   3. forEach: a 1,000-item `core.forEach` of the `echo` child at concurrency 16 against the same
//      1,000 children one after another (concurrency 1), wall and server CPU per run.
//
// A run's end is seen by a long-poll of its event log parked after its next-to-last event (a
// warm-up run counts a workflow's events), so watching a run costs the server a request or two.
// What the nodes do (concurrency, joins, withdrawal) is asserted in test/.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nowMs } from '../lib/clock.js';
import { type HandoffServer, startHandoffSqlite } from '../lib/handoff-server.js';
import { http, jsonOf } from '../lib/http.js';
import { readCpuUs } from '../lib/proc.js';
import { type Figures, registerScenario, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, fmtMs, fmtTimes, type Section } from '../lib/report.js';
import { median } from '../lib/stats.js';

const NAME = 'parallel';
const TARGET = 'handoff';
const BRANCHES = 64;
const DELAYS_MS = [200, 300] as const;

/** Runs per window, windows per workflow (alternating), warm-up runs per workflow. */
const FAN = { full: { window: 10, windows: 10, warmup: 10 }, quick: { window: 3, windows: 2, warmup: 2 } };
const IO = { full: { runs: 10, warmup: 2 }, quick: { runs: 3, warmup: 1 } };

/** forEach runs per side (alternating) and items per run. */
const EACH = { full: { runs: 3, items: 1_000 }, quick: { runs: 1, items: 100 } };
const EACH_CONCURRENCY = 16;

const position = { x: 0, y: 0 };
const node = (id: string, typeId: string, config: Record<string, unknown>) => ({
  id,
  typeId,
  name: id,
  position,
  config,
  inputs: {},
});

function workflow(id: string, nodes: object[], edges: Array<[string, string]>): object {
  return {
    id,
    name: id,
    version: '1',
    nodes,
    edges: edges.map(([from, to], i) => ({ id: `e${i}`, sourceNodeId: from, targetNodeId: to })),
    triggers: [],
    variables: [],
    metadata: {},
    settings: {},
  };
}

const transform = (i: number) => node(`t${i}`, 'core.transform', { output: { i, text: '{{ inputs.text }} #' + i } });
const call = (ms: number) =>
  node(`wait${ms}`, 'http.request', { method: 'GET', url: `{{ inputs.url }}/${ms}`, retry: { attempts: 1 } });
const ids = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

/** fork → t0 … t63 → join (all). */
const fanOut = workflow(
  'bench-fan-out',
  [
    node('fork', 'core.parallel', {}),
    ...ids(BRANCHES).map((_, i) => transform(i)),
    node('all', 'core.join', { mode: 'all' }),
  ],
  [
    ...ids(BRANCHES).map((t): [string, string] => ['fork', t]),
    ...ids(BRANCHES).map((t): [string, string] => [t, 'all']),
  ],
);

/** t0 → t1 → … → t63. */
const fanLine = workflow(
  'bench-fan-line',
  ids(BRANCHES).map((_, i) => transform(i)),
  ids(BRANCHES)
    .slice(1)
    .map((t, i): [string, string] => [`t${i}`, t]),
);

/** fork → wait200, wait300 → join (all). */
const ioFork = workflow(
  'bench-io-fork',
  [node('fork', 'core.parallel', {}), ...DELAYS_MS.map(call), node('all', 'core.join', { mode: 'all' })],
  [
    ...DELAYS_MS.map((ms): [string, string] => ['fork', `wait${ms}`]),
    ...DELAYS_MS.map((ms): [string, string] => [`wait${ms}`, 'all']),
  ],
);

/** One `core.forEach` of `echo` over `inputs.n` items, `concurrency` children unfinished at once. */
const forEachOf = (id: string, concurrency: number) =>
  workflow(
    id,
    [
      node('each', 'core.forEach', {
        items: '{{ [1..inputs.n] }}',
        workflowId: 'echo',
        inputs: { prompt: 'item {{ item }}' },
        concurrency,
      }),
    ],
    [],
  );
const eachParallel = forEachOf('bench-each-parallel', EACH_CONCURRENCY);
const eachSequential = forEachOf('bench-each-sequential', 1);

/** wait200 → wait300. */
const ioLine = workflow('bench-io-line', DELAYS_MS.map(call), [[`wait${DELAYS_MS[0]}`, `wait${DELAYS_MS[1]}`]]);

/** Answers GET /<ms> after <ms> milliseconds; counts how many requests it held at once. */
function startDelayServer(): Promise<{ server: Server; url: string; maxInFlight(): number }> {
  let inFlight = 0;
  let max = 0;
  const server = createServer((req, res) => {
    inFlight++;
    max = Math.max(max, inFlight);
    setTimeout(
      () => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      },
      Number((req.url ?? '').slice(1)) || 0,
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, maxInFlight: () => max }),
    ),
  );
}

interface PollAnswer {
  events?: Array<{ type: string; sequence: number }>;
}

/**
 * One run from POST to run.completed: the wall time, and the event count it ended with. With
 * `events` known (from a warm-up run), one long-poll parked after the next-to-last event sees the
 * end; without, the log is read page by page.
 */
async function runOnce(
  base: string,
  workflowId: string,
  inputs: Record<string, unknown>,
  events?: number,
  /** How long the run may take. */
  limitMs = 30_000,
): Promise<{ ms: number; events: number; inPost: boolean }> {
  const t0 = nowMs();
  const created = await http('POST', `${base}/v1/runs`, { body: { workflowId, inputs } });
  const answer = jsonOf<{ runId?: string; status?: string }>(created.text);
  const runId = answer?.runId;
  if (created.status !== 201 || !runId)
    throw new Error(`POST /v1/runs ${workflowId}: ${created.status} ${created.text}`);
  let last = events === undefined ? -1 : events - 2;
  // A long-poll also answers, with no event, when the run changes without one (a lease taken).
  for (const deadline = t0 + limitMs; nowMs() < deadline; ) {
    const url = `${base}/v1/runs/${runId}/events/poll?lastSequence=${last}&timeout=30&limit=1000`;
    const page = jsonOf<PollAnswer>((await http('GET', url, { timeoutMs: 40_000 })).text)?.events ?? [];
    const end = page.find((e) => e.type.startsWith('run.') && e.type !== 'run.started');
    if (end) {
      if (end.type !== 'run.completed') throw new Error(`${workflowId} run ${runId} ended ${end.type}`);
      return { ms: nowMs() - t0, events: end.sequence + 1, inPost: answer?.status === 'completed' };
    }
    last = page.at(-1)?.sequence ?? last;
  }
  throw new Error(`${workflowId} run ${runId} did not end within ${limitMs / 1000} s`);
}

/** A workflow's event count, from `n` warm-up runs (which must all agree). */
async function warmUp(base: string, workflowId: string, inputs: Record<string, unknown>, n: number): Promise<number> {
  const counts = new Set<number>();
  for (let i = 0; i < n; i++) counts.add((await runOnce(base, workflowId, inputs)).events);
  if (counts.size !== 1) throw new Error(`${workflowId}: runs ended with different event counts ${[...counts]}`);
  return [...counts][0] as number;
}

async function measureFanOut(ctx: ScenarioContext, server: HandoffServer): Promise<Figures> {
  const plan = ctx.mode.quick ? FAN.quick : FAN.full;
  const inputs = { text: 'bench' };
  const side = (id: string) => ({ id, walls: [] as number[], cpuUs: 0, inPost: 0, events: 0 });
  const sides = [side('bench-fan-out'), side('bench-fan-line')];
  for (const s of sides) s.events = await warmUp(server.base, s.id, inputs, plan.warmup);
  // A B B A A B …: each side leads as often as it follows.
  for (let w = 0; w < plan.windows * 2; w++) {
    const s = sides[(w + (w >> 1)) % 2] as ReturnType<typeof side>;
    const cpu0 = readCpuUs(server.pid);
    for (let r = 0; r < plan.window; r++) {
      const one = await runOnce(server.base, s.id, inputs, s.events);
      s.walls.push(one.ms);
      if (one.inPost) s.inPost++;
    }
    s.cpuUs += readCpuUs(server.pid) - cpu0;
  }
  const [fork, line] = sides as [ReturnType<typeof side>, ReturnType<typeof side>];
  const runs = plan.window * plan.windows;
  const f: Figures = {
    'fan.runs': runs,
    'fan.forkWallMs': median(fork.walls),
    'fan.lineWallMs': median(line.walls),
    'fan.forkCpuMs': fork.cpuUs / runs / 1000,
    'fan.lineCpuMs': line.cpuUs / runs / 1000,
    'fan.forkInPost': fork.inPost,
    'fan.lineInPost': line.inPost,
  };
  f['fan.wallRatio'] = (f['fan.forkWallMs'] as number) / (f['fan.lineWallMs'] as number);
  f['fan.cpuRatio'] = (f['fan.forkCpuMs'] as number) / (f['fan.lineCpuMs'] as number);
  ctx.log(`${NAME} fan-out: ${JSON.stringify(f)}`);
  return f;
}

async function measureIo(ctx: ScenarioContext, server: HandoffServer, url: string): Promise<Figures> {
  const plan = ctx.mode.quick ? IO.quick : IO.full;
  const sides = [
    { id: 'bench-io-fork', walls: [] as number[], events: 0 },
    { id: 'bench-io-line', walls: [] as number[], events: 0 },
  ];
  for (const side of sides) side.events = await warmUp(server.base, side.id, { url }, plan.warmup);
  for (let r = 0; r < plan.runs * 2; r++) {
    const side = sides[(r + (r >> 1)) % 2] as (typeof sides)[number];
    side.walls.push((await runOnce(server.base, side.id, { url }, side.events)).ms);
  }
  const [fork, line] = sides as [(typeof sides)[number], (typeof sides)[number]];
  const f = { 'io.forkWallMs': median(fork.walls), 'io.lineWallMs': median(line.walls), 'io.runs': plan.runs * 2 };
  ctx.log(`${NAME} I/O: ${JSON.stringify(f)}`);
  return f;
}

async function measureForEach(ctx: ScenarioContext, server: HandoffServer): Promise<Figures> {
  const plan = ctx.mode.quick ? EACH.quick : EACH.full;
  const inputs = { n: plan.items };
  const side = (id: string) => ({ id, walls: [] as number[], cpuUs: 0, events: 0 });
  const sides = [side('bench-each-parallel'), side('bench-each-sequential')];
  for (const s of sides) s.events = (await runOnce(server.base, s.id, inputs, undefined, 600_000)).events;
  for (let r = 0; r < plan.runs * 2; r++) {
    const s = sides[(r + (r >> 1)) % 2] as ReturnType<typeof side>;
    const cpu0 = readCpuUs(server.pid);
    s.walls.push((await runOnce(server.base, s.id, inputs, s.events, 600_000)).ms);
    s.cpuUs += readCpuUs(server.pid) - cpu0;
  }
  const [par, seq] = sides as [ReturnType<typeof side>, ReturnType<typeof side>];
  const f: Figures = {
    'each.items': plan.items,
    'each.runs': plan.runs,
    'each.parWallMs': median(par.walls),
    'each.seqWallMs': median(seq.walls),
    'each.parCpuMs': par.cpuUs / plan.runs / 1000,
    'each.seqCpuMs': seq.cpuUs / plan.runs / 1000,
  };
  ctx.log(`${NAME} forEach: ${JSON.stringify(f)}`);
  return f;
}

async function run(ctx: ScenarioContext): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-bench-parallel-'));
  for (const wf of [fanOut, fanLine, ioFork, ioLine, eachParallel, eachSequential]) {
    writeFileSync(join(dir, `${(wf as { id: string }).id}.json`), JSON.stringify(wf));
  }
  const delays = await startDelayServer();
  let server: HandoffServer | undefined;
  try {
    server = await startHandoffSqlite({ env: { HANDOFF_WORKFLOWS: dir, HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1' } });
    const fan = await measureFanOut(ctx, server);
    const io = await measureIo(ctx, server, delays.url);
    const each = await measureForEach(ctx, server);
    return { ...fan, ...io, ...each, 'io.maxInFlight': delays.maxInFlight() };
  } finally {
    await server?.stop();
    delays.server.closeAllConnections();
    await new Promise((r) => delays.server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
}

function parallelSection(result: ScenarioResult): Section {
  const cell = result.cells.find((c) => c.target === TARGET);
  const m = cell?.status === 'ok' ? cell.runs[0] : undefined;
  const title = 'Parallel work: fork against line';
  if (!m)
    return {
      title,
      columns: [],
      rows: [],
      after: `${cell?.status ?? 'not run'}${cell?.reason ? `: ${cell.reason}` : ''}`,
    };
  const [fast, slow] = DELAYS_MS;
  const sum = fast + slow;
  return {
    title,
    intro:
      `${result.description} Every figure of a row comes from the same run of one Handoff (SQLite), the ` +
      'two workflows of a row alternating, one run at a time; wall = POST /v1/runs until run.completed is ' +
      "seen (a parked long-poll), CPU = the server process's CPU time over the runs of that workflow.",
    columns: ['figure', 'fork', 'line', 'fork ÷ line', 'note'],
    rows: [
      [
        `${BRANCHES} transforms: wall per run (ms)`,
        fmtMs(m['fan.forkWallMs']),
        fmtMs(m['fan.lineWallMs']),
        `**${fmtTimes(m['fan.wallRatio'])}**`,
        `median of ${fmtFixed(m['fan.runs'], 0)} runs each; completed within their POST: fork ` +
          `${fmtFixed(m['fan.forkInPost'], 0)}, line ${fmtFixed(m['fan.lineInPost'], 0)}`,
      ],
      [
        `${BRANCHES} transforms: server CPU per run (ms)`,
        fmtMs(m['fan.forkCpuMs']),
        fmtMs(m['fan.lineCpuMs']),
        `**${fmtTimes(m['fan.cpuRatio'])}**`,
        'fork + join + 64 branches against 64 nodes in a row',
      ],
      [
        `two calls (${fast} ms, ${slow} ms): wall per run (ms)`,
        fmtMs(m['io.forkWallMs']),
        fmtMs(m['io.lineWallMs']),
        `**${fmtTimes((m['io.forkWallMs'] ?? NaN) / (m['io.lineWallMs'] ?? NaN))}**`,
        `max() = ${slow}, sum = ${sum} (${fmtTimes(slow / sum)}); fork ÷ sum ${fmtTimes((m['io.forkWallMs'] ?? NaN) / sum)}; ` +
          `at most ${fmtFixed(m['io.maxInFlight'], 0)} calls in flight at once`,
      ],
      [
        `forEach of ${fmtFixed(m['each.items'], 0)} \`echo\` children: wall per run (ms)`,
        fmtMs(m['each.parWallMs']),
        fmtMs(m['each.seqWallMs']),
        `**${fmtTimes((m['each.parWallMs'] ?? NaN) / (m['each.seqWallMs'] ?? NaN))}**`,
        `concurrency ${EACH_CONCURRENCY} against 1; median of ${fmtFixed(m['each.runs'], 0)} runs each`,
      ],
      [
        `forEach of ${fmtFixed(m['each.items'], 0)} \`echo\` children: server CPU per run (ms)`,
        fmtMs(m['each.parCpuMs']),
        fmtMs(m['each.seqCpuMs']),
        `**${fmtTimes((m['each.parCpuMs'] ?? NaN) / (m['each.seqCpuMs'] ?? NaN))}**`,
        'every child is a run and an A2A task of its own',
      ],
    ],
    after:
      '"Completed within their POST": runs whose `POST /v1/runs` answered `completed`, executed whole inside ' +
      "the request's own transaction (inline steps); the others were finished by the worker. In the forEach " +
      'rows, "line" is the same forEach at concurrency 1: the children one after another.',
  };
}

registerScenario({
  name: NAME,
  description:
    `A fork of ${BRANCHES} \`core.transform\` branches joined by one \`core.join\` (all) against the same ${BRANCHES} ` +
    `transforms in one line; two \`http.request\` branches against a loopback server answering after ` +
    `${DELAYS_MS.join(' and ')} ms, against the same two calls in a line; a \`core.forEach\` of 1,000 \`echo\` ` +
    `children at concurrency ${EACH_CONCURRENCY} against the same at concurrency 1.`,
  order: 77,
  appliesTo: (target) => target.name === TARGET,
  run,
  // It alternates its own windows: one run measures enough.
  oneRound: true,
  runLimitS: (mode) => (mode.quick ? 120 : 600),
  section: parallelSection,
});
