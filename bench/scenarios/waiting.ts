// A million waiting runs (issue 38): what waiting costs as the number of runs waiting at a gate
// grows. Opt-in (`--scenarios waiting`): `npm run bench` without --scenarios leaves it out.
//
//   node dist/bench/run.js --scenarios waiting --targets handoff
//   HANDOFF_BENCH_WAITING_SIZES=1000,100000,1000000     (default; --quick: 1000,10000)
//   HANDOFF_BENCH_WAITING_CONFIGS=sqlite:1,sqlite:100,postgres:1,postgres:100   (default: all four)
//
// Per configuration (store × tenants), one database grows through the sizes: waiting `approval`
// runs (`POST /v1/runs {workflowId:'approval'}`, parked at their gate). On SQLite with one tenant
// they are created through the API up to API_MAX runs; past that, and everywhere else, directly
// through the store (lib/seed-waiting.ts: clones of a run the API made). Runs go round-robin to the
// tenants; every read is made as tenant `default` (N / tenants of the runs). At each size, on a
// server started afresh on that database (its start is the restart), in one run:
//   - restart-ready: spawn → /healthz answers (SQLite); PostgreSQL: a second instance joining the
//     running one, spawn → /healthz;
//   - median and p99 of SAMPLES sequential requests (one keep-alive connection) of each read:
//     `tasks/get` (0.3 JSON-RPC), `GET /v1/runs/{id}` (random waiting runs), ListTasks filtered by
//     state (A2A 1.0 HTTP+JSON, `status=TASK_STATE_INPUT_REQUIRED`, 50 per page) first page and
//     DEEP pages deep (fewer when there are fewer pages: the depth is reported), the inbox
//     (`/v1/runs?status=waiting-approval,waiting-input`), `/v1/a2a/tasks`;
//   - the server's RSS after those reads;
//   - a decision's cost: DECISIONS sequential `POST /v1/runs/{id}/interrupts/review` accept;
//   - disk per run: the SQLite file (checkpointed at stop) or the schema's relations
//     (pg_total_relation_size) over the runs stored;
//   - seeding throughput (runs/s) of the way this size was reached.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BENCH_SRC } from '../lib/env.js';
import {
  dropSchema,
  type HandoffServer,
  PG_URL,
  startHandoffOnPgSchema,
  startHandoffSqlite,
} from '../lib/handoff-server.js';
import { http, jsonOf } from '../lib/http.js';
import { loadAverages, readRssMiB } from '../lib/proc.js';
import { type Figures, registerScenario, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, fmtInt, fmtMs, type Section } from '../lib/report.js';
import { seedWaitingInChild } from '../lib/seed-waiting.js';
import { ascending, percentile } from '../lib/stats.js';

const NAME = 'waiting';
/** Runs created through the API at most (SQLite, one tenant); beyond, the store's write path. */
const API_MAX = 100_000;
const API_CONNECTIONS = 32;
const SAMPLES = 200;
const DECISIONS = 100;
const DEEP = 100;
/** Random waiting runs of tenant `default` the seeder hands back per size. */
const PICK = SAMPLES + DECISIONS;

interface Config {
  store: 'sqlite' | 'postgres';
  tenants: number;
}

const key = (c: Config): string => `${c.store}:${c.tenants}`;

function sizesOf(quick: boolean): number[] {
  const env = process.env.HANDOFF_BENCH_WAITING_SIZES;
  if (env) return env.split(',').map(Number);
  return quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000];
}

function configsOf(): Config[] {
  const env = process.env.HANDOFF_BENCH_WAITING_CONFIGS ?? 'sqlite:1,sqlite:100,postgres:1,postgres:100';
  return env.split(',').map((s) => {
    const [store, tenants] = s.split(':');
    if ((store !== 'sqlite' && store !== 'postgres') || !(Number(tenants) >= 1)) throw new Error(`bad config ${s}`);
    return { store, tenants: Number(tenants) };
  });
}

/** Where one configuration's database lives, and how to start a server on it. */
interface Place {
  /** `sqlite:<file>` or `pg:<schema>` (lib/seed-waiting.ts). */
  seedPlace: string;
  start(): Promise<HandoffServer>;
  diskBytes(): Promise<number>;
  remove(): Promise<void>;
}

function placeOf(c: Config): Place {
  if (c.store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'handoff-bench-waiting-'));
    const file = join(dir, 'handoff.db');
    return {
      seedPlace: `sqlite:${file}`,
      start: () => startHandoffSqlite({ dataDir: dir }),
      diskBytes: async () => statSync(file).size,
      remove: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `bench_waiting_${process.pid}_${c.tenants}`;
  return {
    seedPlace: `pg:${schema}`,
    start: () => startHandoffOnPgSchema(schema),
    diskBytes: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const r = await client.query<{ b: string }>(
          `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as b from pg_class c
           join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind = 'r'`,
          [schema],
        );
        return Number(r.rows[0]?.b ?? 0);
      } finally {
        await client.end();
      }
    },
    remove: () => dropSchema(schema),
  };
}

/** Create waiting approval runs through the API until `count` were created; runs/s. */
async function seedThroughApi(base: string, count: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: API_CONNECTIONS });
  let next = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      const res = await http('POST', `${base}/v1/runs`, {
        agent,
        body: { workflowId: 'approval', inputs: { prompt: 'Please approve the quarterly report.' } },
      });
      if (res.status !== 201 || !res.text.includes('"waiting-approval"'))
        throw new Error(`POST /v1/runs answered ${res.status}: ${res.text.slice(0, 200)}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: API_CONNECTIONS }, worker));
  } finally {
    agent.destroy();
  }
  return (count / (performance.now() - t0)) * 1000;
}

/** Median and p99 (ms) of `n` sequential requests made by `request(i)`. */
async function latencies(n: number, request: (i: number) => Promise<void>): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await request(i);
    ms.push(performance.now() - t0);
  }
  const sorted = ascending(ms);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

const LIST_BY_STATE = '/v1/a2a/rest/tasks?status=TASK_STATE_INPUT_REQUIRED&pageSize=50';
const V1 = { 'A2A-Version': '1.0' };

/** The page token of ListTasks by state `depth` pages in (fewer if the list ends): [token, depth]. */
async function deepToken(base: string, agent: Agent, depth: number): Promise<[string, number]> {
  let token = '';
  let reached = 0;
  for (let d = 0; d < depth; d++) {
    const url = `${base}${LIST_BY_STATE}${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`;
    const res = await http('GET', url, { agent, headers: V1 });
    const next = jsonOf<{ nextPageToken?: string }>(res.text)?.nextPageToken;
    if (res.status !== 200) throw new Error(`ListTasks answered ${res.status}: ${res.text.slice(0, 200)}`);
    if (!next) break;
    token = next;
    reached = d + 1;
  }
  return [token, reached];
}

async function expectOk(method: 'GET' | 'POST', url: string, agent: Agent, body?: unknown, headers = {}) {
  const res = await http(method, url, { agent, headers, ...(body === undefined ? {} : { body }) });
  if (res.status < 200 || res.status > 299)
    throw new Error(`${method} ${url} answered ${res.status}: ${res.text.slice(0, 200)}`);
  return res;
}

/** Every read of the list, then the decisions: the figures of one size. */
async function measureReads(server: HandoffServer, picked: string[]): Promise<Figures> {
  const base = server.base;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const f: Figures = {};
  // The last ones are decided; the rest are read (a tenant of few runs reads the same ones again).
  const decisions = Math.min(DECISIONS, Math.floor(picked.length / 2));
  const readable = picked.length - decisions;
  const at = (i: number) => picked[i % readable] as string;
  const put = (name: string, r: { p50: number; p99: number }) => {
    f[`${name}.p50`] = r.p50;
    f[`${name}.p99`] = r.p99;
  };
  try {
    const [token, depth] = await deepToken(base, agent, DEEP);
    f.deepPages = depth;
    const reads: Array<[string, (i: number) => Promise<unknown>]> = [
      [
        'taskGet',
        (i) =>
          expectOk('POST', `${base}/v1/a2a`, agent, {
            jsonrpc: '2.0',
            id: i,
            method: 'tasks/get',
            params: { id: at(i) },
          }),
      ],
      ['runGet', (i) => expectOk('GET', `${base}/v1/runs/${at(i)}`, agent)],
      ['listFirst', () => expectOk('GET', `${base}${LIST_BY_STATE}`, agent, undefined, V1)],
      [
        'listDeep',
        () => expectOk('GET', `${base}${LIST_BY_STATE}&pageToken=${encodeURIComponent(token)}`, agent, undefined, V1),
      ],
      ['inbox', () => expectOk('GET', `${base}/v1/runs?status=waiting-approval,waiting-input&limit=50`, agent)],
      ['a2aTasks', () => expectOk('GET', `${base}/v1/a2a/tasks?limit=50`, agent)],
    ];
    // A warm-up pass of each read (JIT, caches of the first request), then the measured ones.
    for (const [, read] of reads) for (let i = 0; i < 20; i++) await read(readable - 1 - (i % readable));
    for (const [name, read] of reads) put(name, await latencies(SAMPLES, async (i) => void (await read(i))));
    f.rssMiB = readRssMiB(server.pid);
    // The machine's load while reading (other work on the same cores shows in every latency).
    f.load1 = loadAverages()[0];
    const decide = (i: number) =>
      expectOk('POST', `${base}/v1/runs/${picked[readable + i]}/interrupts/review`, agent, {
        resumeValue: { action: 'accept' },
      });
    put('decision', await latencies(decisions, async (i) => void (await decide(i))));
  } finally {
    agent.destroy();
  }
  return f;
}

/** One configuration through every size: its figures prefixed `<store>:<tenants>.<size>.`. */
async function measureConfig(ctx: ScenarioContext, c: Config, sizes: number[]): Promise<Figures> {
  const place = placeOf(c);
  const out: Figures = {};
  try {
    // The template run (and, on SQLite with one tenant, every run up to API_MAX) through the API.
    let server = await place.start();
    await seedThroughApi(server.base, 1);
    let stored = 1;
    for (const size of sizes) {
      const f: Figures = {};
      const viaApi = c.store === 'sqlite' && c.tenants === 1 ? Math.min(size, API_MAX) - stored : 0;
      if (viaApi > 0) {
        ctx.log(`${NAME} ${key(c)}: ${fmtInt(viaApi)} runs through the API`);
        f.seedApiRunsPerS = await seedThroughApi(server.base, viaApi);
        stored += viaApi;
      }
      await server.stop();
      ctx.log(`${NAME} ${key(c)}: seeding to ${fmtInt(size)} through the store`);
      const seed = await seedWaitingInChild(place.seedPlace, size, c.tenants, PICK, 3_600_000);
      if (seed.added > 0) f.seedStoreRunsPerS = (seed.added / seed.insertMs) * 1000;
      stored = seed.stored;
      f.stored = stored;
      f.diskBytesPerRun = (await place.diskBytes()) / stored;
      const t0 = performance.now();
      server = await place.start();
      f.readyMs = performance.now() - t0;
      if (c.store === 'postgres') {
        const j0 = performance.now();
        const second = await place.start();
        f.joinMs = performance.now() - j0;
        await second.stop();
      }
      ctx.log(`${NAME} ${key(c)} ${fmtInt(size)}: ready in ${fmtInt(f.readyMs)} ms; reading`);
      Object.assign(f, await measureReads(server, seed.picked));
      for (const [k, v] of Object.entries(f)) out[`${key(c)}.${size}.${k}`] = v;
      ctx.log(
        `${NAME} ${key(c)} ${fmtInt(size)}: tasks/get p50 ${fmtMs(f['taskGet.p50'])} ms, ListTasks p50 ` +
          `${fmtMs(f['listFirst.p50'])} / deep ${fmtMs(f['listDeep.p50'])} ms, RSS ${fmtInt(f.rssMiB)} MiB, ` +
          `${fmtInt(f.diskBytesPerRun)} B/run`,
      );
      // Every figure of the size, so a run stopped before its end still leaves what it measured.
      ctx.log(
        `${NAME} figures ${JSON.stringify(Object.fromEntries(Object.entries(out).filter(([k]) => k.startsWith(`${key(c)}.${size}.`))))}`,
      );
    }
    await server.stop();
  } finally {
    await place.remove();
  }
  return out;
}

async function run(ctx: ScenarioContext): Promise<Figures> {
  const t0 = performance.now();
  const sizes = sizesOf(ctx.mode.quick);
  const figures: Figures = {};
  for (const c of configsOf()) Object.assign(figures, await measureConfig(ctx, c, sizes));
  figures.durationS = (performance.now() - t0) / 1000;
  return figures;
}

// ─── the report ───

const READS: Array<[string, string]> = [
  ['taskGet', 'tasks/get'],
  ['runGet', 'GET /v1/runs/{id}'],
  ['listFirst', 'ListTasks by state, 1st page'],
  ['listDeep', 'ListTasks by state, deep page'],
  ['inbox', 'inbox page'],
  ['a2aTasks', '/v1/a2a/tasks'],
  ['decision', 'a decision'],
];

/** Configurations and sizes present in the figures, in order. */
function layout(f: Figures): Array<{ config: string; sizes: number[] }> {
  const out = new Map<string, Set<number>>();
  for (const k of Object.keys(f)) {
    const m = /^([a-z]+:\d+)\.(\d+)\./.exec(k);
    if (m) (out.get(m[1] as string) ?? out.set(m[1] as string, new Set()).get(m[1] as string))?.add(Number(m[2]));
  }
  return [...out].map(([config, s]) => ({ config, sizes: [...s].sort((a, b) => a - b) }));
}

/** A small SVG of the median of each read against the number of waiting runs (log–log), per configuration. */
function chart(f: Figures): string {
  const configs = layout(f);
  const w = 300;
  const h = 200;
  const pad = 36;
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2'];
  const panels = configs.map(({ config, sizes }, p) => {
    const xs = sizes.map(Math.log10);
    const [x0, x1] = [Math.min(...xs), Math.max(...xs, Math.min(...xs) + 1)];
    const values = READS.flatMap(([k]) => sizes.map((s) => f[`${config}.${s}.${k}.p50`] ?? 0));
    const yMax = Math.max(1, ...values) * 1.1;
    const X = (s: number) => pad + ((Math.log10(s) - x0) / (x1 - x0)) * (w - 2 * pad);
    // Log scale from 1 ms: a read that stays flat and one that grows tenfold both stay readable.
    const Y = (v: number) =>
      h - pad + 10 - (Math.log10(Math.max(v, 1)) / Math.log10(Math.max(yMax, 10))) * (h - 2 * pad);
    const lines = READS.map(([k], i) => {
      const pts = sizes.map((s) => `${X(s).toFixed(1)},${Y(f[`${config}.${s}.${k}.p50`] ?? 0).toFixed(1)}`);
      return `<polyline fill="none" stroke="${colors[i]}" stroke-width="1.5" points="${pts.join(' ')}"/>`;
    });
    const ticks = sizes.map(
      (s) =>
        `<text x="${X(s).toFixed(1)}" y="${h - 8}" font-size="9" text-anchor="middle">${s.toExponential(0).replace('e+', 'e')}</text>`,
    );
    return `<g transform="translate(${p * w},0)"><text x="${w / 2}" y="14" font-size="11" text-anchor="middle">${config} (median ms, log scale 1–${yMax.toFixed(0)})</text>
<line x1="${pad}" y1="${h - pad + 10}" x2="${w - pad}" y2="${h - pad + 10}" stroke="#888"/>${lines.join('')}${ticks.join('')}</g>`;
  });
  const legend = READS.map(
    ([, label], i) => `<text x="${10 + i * 150}" y="${h + 16}" font-size="10" fill="${colors[i]}">${label}</text>`,
  );
  const width = Math.max(configs.length * w, 1050);
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${width}" height="${h + 26}" font-family="sans-serif">
<title>Median latency of each read against the number of waiting runs, per store and tenancy</title>
${panels.join('\n')}
${legend.join('')}
</svg>
`;
}

const CHART = 'waiting-curves.svg';

function section(result: ScenarioResult): Section {
  const f = result.cells.find((c) => c.runs.length > 0)?.runs[0] ?? {};
  const rows: string[][] = [];
  for (const { config, sizes } of layout(f)) {
    for (const s of sizes) {
      const g = (k: string) => f[`${config}.${s}.${k}`];
      rows.push([
        config,
        fmtInt(s),
        ...READS.map(([k]) => `${fmtMs(g(`${k}.p50`))} / ${fmtMs(g(`${k}.p99`))}`),
        fmtInt(g('deepPages')),
        fmtFixed(g('load1'), 1),
        fmtInt(g('readyMs')) + (g('joinMs') === undefined ? '' : ` (join ${fmtInt(g('joinMs'))})`),
        fmtInt(g('rssMiB')),
        fmtInt(g('diskBytesPerRun')),
        [g('seedApiRunsPerS'), g('seedStoreRunsPerS')]
          .map((v, i) => (v === undefined ? '' : `${fmtInt(v)}${i === 0 ? ' API' : ' store'}`))
          .filter(Boolean)
          .join(', '),
      ]);
    }
  }
  // Per configuration, how the largest size's medians compare with the smallest's (the issue's 1.5×).
  for (const { config, sizes } of layout(f)) {
    const [small, large] = [sizes[0], sizes.at(-1)];
    if (small === undefined || large === undefined || small === large) continue;
    const ratio = (k: string) =>
      (f[`${config}.${large}.${k}.p50`] ?? Number.NaN) / (f[`${config}.${small}.${k}.p50`] ?? Number.NaN);
    rows.push([
      config,
      `median ${fmtInt(large)} ÷ ${fmtInt(small)}`,
      ...READS.map(([k]) => `${fmtFixed(ratio(k), 2)}×`),
      ...Array(6).fill(''),
    ]);
  }
  if (rows.length > 0) writeFileSync(join(BENCH_SRC, CHART), chart(f));
  return {
    title: 'Waiting runs: the cost of waiting at 10³–10⁶ (issue 38)',
    intro:
      `${result.description} Config = store:tenants; reads are made as one tenant (N / tenants of the runs). ` +
      'Latencies are median / p99 in ms of sequential requests on one keep-alive connection from the ' +
      `harness. Whole run: ${fmtFixed((f.durationS ?? Number.NaN) / 60, 1)} min. Curves: [${CHART}](${CHART}).`,
    after:
      'Where a waiting run’s bytes go, table by table and index by index, and what to index and ' +
      'archive: docs/operations.md, “Capacity: many waiting runs”. The load column is the ' +
      'machine’s 1-minute load average while reading (2 cores shared with other work): it shows ' +
      'in every latency, so compare sizes by the ratio rows, and rows of similar load.',
    columns: [
      'config',
      'waiting runs',
      ...READS.map(([, label]) => label),
      'deep pages',
      'load',
      'ready ms',
      'RSS MiB',
      'disk B/run',
      'seeding runs/s',
    ],
    rows,
  };
}

registerScenario({
  name: NAME,
  description:
    'Waiting `approval` runs (parked at their gate) grown from 10³ to 10⁶ per store and tenancy; at each ' +
    'size, on a freshly started server: reads, a decision, restart time, RSS, disk per run, seeding rate.',
  order: 95,
  optIn: true,
  oneRound: true,
  appliesTo: (t) => t.name === 'handoff',
  runLimitS: () => 4 * 3600,
  run,
  section,
});
