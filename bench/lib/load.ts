// The harness's load driver: closed-loop HTTP/1.1 keep-alive load with autocannon in this process
// (core 1), for a fixed time. Each connection runs a "flow" of one or more steps in order (one step
// = plain request/response; two = e.g. approval send → reply), building a fresh request each time
// so every message has its own messageId and later steps can use what earlier answers returned.
//
//   runLoad        one run: rates, latency percentiles, failures, tallies
//   measureLoad    warm-up, then the measured run with the server's CPU from /proc (warm-up excluded)
//   measurePaired  two servers loaded in alternating windows, so both see the same machine noise
//   closedLoop     the same closed loop for work autocannon cannot express (see there)
//
// Latency is taken from autocannon's per-response 'response' event (float ms) rather than its
// result histogram, which stores whole milliseconds and would round sub-ms latencies to 0/1.
import autocannon from 'autocannon';
import { readCpuUs, readRssMiB, readSystemCpu } from './proc.js';
import type { Figures } from './registry.js';
import { percentile, pooled } from './stats.js';

/** Per-connection scratch space shared by the steps of one flow. */
export type FlowContext = Record<string, string | undefined>;

export interface LoadRequest {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/v1/runs/run_…`. */
  path: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Extra request headers (e.g. `A2A-Version: 1.0`). */
  headers?: Record<string, string>;
}

export interface Step {
  /** The request to send; undefined ends the flow here (the connection starts the next flow). */
  request(flow: FlowContext): LoadRequest | undefined;
  /** False = the 2xx answer was wrong (counted as `unexpected`; JSON-RPC errors are HTTP 200). */
  check?(body: string, flow: FlowContext): boolean;
  /** Pulls what later steps need out of the answer. */
  capture?(body: string, flow: FlowContext): void;
  /** True when this answer completes the flow's goal (counted in flows/s). */
  completes?(body: string, flow: FlowContext): boolean;
  /** A label to count for this answer (e.g. the status a run was created in). */
  tally?(body: string, flow: FlowContext): string | undefined;
}

export interface LoadSpec {
  /** http://127.0.0.1:port — no path. */
  baseUrl: string;
  connections: number;
  durationS: number;
  steps: Step[];
}

export interface LoadResult {
  durationS: number;
  requests: number;
  reqPerSec: number;
  flows: number;
  flowsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Socket errors + timeouts. */
  errors: number;
  timeouts: number;
  non2xx: number;
  unexpected: number;
  /** Flows autocannon restarted because a step returned no request. */
  abandoned: number;
  /** Response bytes on the wire (status line + headers + body), averaged. */
  bytesPerResp: number;
  /** CPU used by this process (autocannon) during the run, % of one core. */
  loadGenCpuPct: number;
  tallies: Record<string, number>;
  /** Every latency of the run (ms), ascending — to pool several runs' percentiles. */
  samples: Float64Array;
}

interface Counters {
  unexpected: number;
  flows: number;
  tallies: Map<string, number>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

function toRequest(step: Step, counters: Counters): autocannon.Request {
  return {
    // setupRequest may return null to make autocannon restart the flow; its typings say Request.
    setupRequest: (req, ctx) => {
      const r = step.request(ctx as FlowContext);
      if (r === undefined) return null as unknown as autocannon.Request;
      const headers = r.body === undefined ? r.headers : { ...JSON_HEADERS, ...r.headers };
      return {
        ...req,
        method: r.method,
        path: r.path,
        ...(r.body === undefined ? {} : { body: JSON.stringify(r.body) }),
        ...(headers ? { headers } : {}),
      } as autocannon.Request;
    },
    onResponse: (status, body, ctx) => {
      const flow = ctx as FlowContext;
      if (status >= 200 && status < 300 && step.check && !step.check(body, flow)) counters.unexpected++;
      step.capture?.(body, flow);
      if (step.completes?.(body, flow)) counters.flows++;
      const label = step.tally?.(body, flow);
      if (label !== undefined) counters.tallies.set(label, (counters.tallies.get(label) ?? 0) + 1);
    },
  };
}

/** Growable float buffer: an autocannon run can record a few hundred thousand latencies. */
class Samples {
  private buf = new Float64Array(1 << 16);
  length = 0;
  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }
  sorted(): Float64Array {
    return this.buf.slice(0, this.length).sort();
  }
}

function launch(
  spec: LoadSpec,
  counters: Counters,
): { instance: autocannon.Instance; done: Promise<autocannon.Result> } {
  const makeRequests = (): autocannon.Request[] => spec.steps.map((s) => toRequest(s, counters));
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: spec.baseUrl,
        connections: spec.connections,
        duration: spec.durationS,
        timeout: 10,
        // autocannon only checks for the end of the run once per sample interval (default 1 s),
        // which would round every duration up to whole seconds.
        sampleInt: 100,
        requests: makeRequests(),
        // autocannon shares one `requests` array between connections and pre-builds the first
        // request once, so all connections' first messages would carry the same messageId (and
        // an idempotent server would answer 50 flows with one task). Own objects per connection.
        setupClient: (client) => client.setRequests(makeRequests()),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  return { instance, done };
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const counters: Counters = { unexpected: 0, flows: 0, tallies: new Map() };
  const latencies = new Samples();
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const { instance, done } = launch(spec, counters);
  instance.on('response', (_client, _status, resBytes, ms) => {
    latencies.push(ms);
    bytes += resBytes;
  });
  const result = await done;
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = latencies.sorted();
  const n = sorted.length;
  const durationS = result.duration || spec.durationS;
  return {
    durationS,
    requests: n,
    reqPerSec: n / durationS,
    flows: counters.flows,
    flowsPerSec: counters.flows / durationS,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: percentile(sorted, 100),
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    unexpected: counters.unexpected,
    abandoned: result.resets ?? 0,
    bytesPerResp: n ? bytes / n : NaN,
    loadGenCpuPct: ((cpu.user + cpu.system) / wallUs) * 100,
    tallies: Object.fromEntries(counters.tallies),
    samples: sorted,
  };
}

export interface MeasureOptions {
  /** The server process (pinned to core 0). */
  pid: number;
  warmupS: number;
  durationS: number;
  /** Further processes whose CPU belongs to the server's work (e.g. its PostgreSQL backends),
   * looked up after the warm-up (pools have grown by then). */
  helperPids?: () => Promise<number[]>;
}

function tryCpuUs(pid: number): number | undefined {
  try {
    return readCpuUs(pid);
  } catch {
    return undefined; // gone (e.g. a pooled backend closed)
  }
}

/**
 * Warm-up, then the measured run. Figures: the LoadResult's numbers (tallies as `tally.<label>`),
 * failures, server CPU (% and µs per request / per completed flow, capacity per busy core), helper
 * CPU (`dbCpu*`), "other" CPU % (work of other processes on the box), steal %, RSS at the end.
 */
export async function measureLoad(spec: Omit<LoadSpec, 'durationS'>, opts: MeasureOptions): Promise<Figures> {
  if (opts.warmupS > 0) await runLoad({ ...spec, durationS: opts.warmupS });
  const helpers = opts.helperPids ? await opts.helperPids() : [];
  const helper0 = new Map(helpers.map((p) => [p, tryCpuUs(p)] as const));
  const cpu0 = readCpuUs(opts.pid);
  const sys0 = readSystemCpu();
  const t0 = performance.now();
  const load = await runLoad({ ...spec, durationS: opts.durationS });
  const wallUs = (performance.now() - t0) * 1000;
  const cpuUs = readCpuUs(opts.pid) - cpu0;
  const sys1 = readSystemCpu();
  let helperUs = 0;
  for (const [pid, before] of helper0) {
    const after = tryCpuUs(pid);
    if (before !== undefined && after !== undefined) helperUs += after - before;
  }
  const pct = (us: number): number => (us / wallUs) * 100;
  const { tallies, samples: _samples, ...rest } = load;
  const usPerReq = cpuUs / load.requests;
  const figures: Figures = {
    ...rest,
    failures: load.errors + load.non2xx + load.unexpected,
    serverCpuPct: pct(cpuUs),
    serverCpuUsPerReq: usPerReq,
    // Capacity of one fully used core, meaningful even when the load generator was the limit.
    reqPerBusyCore: 1e6 / usPerReq,
    serverCpuUsPerFlow: load.flows > 0 ? cpuUs / load.flows : NaN,
    flowsPerBusyCore: load.flows > 0 ? (1e6 * load.flows) / cpuUs : NaN,
    // CPU burnt by anything but the server, its helpers and the load generator (other jobs on the
    // box): a run where this is high is contaminated — rerun it or distrust it.
    otherCpuPct: Math.max(0, pct(sys1.busyUs - sys0.busyUs) - pct(cpuUs) - pct(helperUs) - load.loadGenCpuPct),
    stealPct: pct(sys1.stealUs - sys0.stealUs),
    rssMiB: readRssMiB(opts.pid),
  };
  if (opts.helperPids) {
    figures.dbBackends = helpers.length;
    figures.dbCpuPct = pct(helperUs);
    figures.dbCpuUsPerReq = helperUs / load.requests;
  }
  for (const [label, count] of Object.entries(tallies)) figures[`tally.${label}`] = count;
  return figures;
}

export interface PairedSide {
  /** http://127.0.0.1:port */
  base: string;
  pid: number;
  steps: Step[];
  /** Warm-up of this side before the windows (0 for a server that is warm already). */
  warmupS: number;
}

interface SideTotals {
  samples: Float64Array[];
  flows: number;
  durationS: number;
  wallUs: number;
  cpuUs: number;
  sysUs: number;
  loadGenUs: number;
  bytes: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  unexpected: number;
}

function sideFigures(a: SideTotals, windows: number, pid: number): Figures {
  const all = pooled(a.samples);
  const n = all.length;
  const pct = (us: number): number => (us / a.wallUs) * 100;
  const usPerReq = a.cpuUs / n;
  return {
    durationS: a.durationS,
    windows,
    requests: n,
    reqPerSec: n / a.durationS,
    flows: a.flows,
    flowsPerSec: a.flows / a.durationS,
    p50Ms: percentile(all, 50),
    p90Ms: percentile(all, 90),
    p99Ms: percentile(all, 99),
    maxMs: percentile(all, 100),
    errors: a.errors,
    timeouts: a.timeouts,
    non2xx: a.non2xx,
    unexpected: a.unexpected,
    failures: a.errors + a.non2xx + a.unexpected,
    bytesPerResp: n ? a.bytes / n : NaN,
    loadGenCpuPct: pct(a.loadGenUs),
    serverCpuPct: pct(a.cpuUs),
    serverCpuUsPerReq: usPerReq,
    reqPerBusyCore: 1e6 / usPerReq,
    otherCpuPct: Math.max(0, pct(a.sysUs - a.cpuUs - a.loadGenUs)),
    rssMiB: readRssMiB(pid),
  };
}

/**
 * The same kind of load on two servers, measured in alternating windows (A B B A A B …) so both
 * see the same machine noise — for comparisons on a shared box where separate runs a minute apart
 * can differ 3×. Each side gets its warm-up, then `windows` windows of `windowS` seconds (every
 * window is a new autocannon run: new connections). Percentiles are taken over the pooled
 * latencies of all of a side's windows; CPU and rates over the sum of its windows.
 */
export async function measurePaired(
  sides: [PairedSide, PairedSide],
  opts: { connections: number; windowS: number; windows: number },
): Promise<[Figures, Figures]> {
  return (await measureAlternating(sides, opts)) as [Figures, Figures];
}

/**
 * measurePaired for any number of sides: window order A B C, then C B A, then A B C … Sides may
 * share a server (the same pid: e.g. one server over two protocols); their windows never overlap.
 */
export async function measureAlternating(
  sides: readonly PairedSide[],
  opts: { connections: number; windowS: number; windows: number },
): Promise<Figures[]> {
  const spec = (s: PairedSide, durationS: number): LoadSpec => ({
    baseUrl: s.base,
    connections: opts.connections,
    durationS,
    steps: s.steps,
  });
  for (const s of sides) if (s.warmupS > 0) await runLoad(spec(s, s.warmupS));
  const totals = sides.map(
    (): SideTotals => ({
      samples: [],
      flows: 0,
      durationS: 0,
      wallUs: 0,
      cpuUs: 0,
      sysUs: 0,
      loadGenUs: 0,
      bytes: 0,
      errors: 0,
      timeouts: 0,
      non2xx: 0,
      unexpected: 0,
    }),
  );
  const forward = sides.map((_, i) => i);
  const backward = [...forward].reverse();
  for (let w = 0; w < opts.windows; w++) {
    for (const i of w % 2 === 0 ? forward : backward) {
      const s = sides[i]!;
      const a = totals[i]!;
      const cpu0 = readCpuUs(s.pid);
      const sys0 = readSystemCpu();
      const t0 = performance.now();
      const load = await runLoad(spec(s, opts.windowS));
      const wallUs = (performance.now() - t0) * 1000;
      a.cpuUs += readCpuUs(s.pid) - cpu0;
      a.sysUs += readSystemCpu().busyUs - sys0.busyUs;
      a.wallUs += wallUs;
      a.loadGenUs += (load.loadGenCpuPct / 100) * wallUs;
      a.durationS += load.durationS;
      a.samples.push(load.samples);
      a.flows += load.flows;
      a.bytes += load.bytesPerResp * load.requests || 0;
      a.errors += load.errors;
      a.timeouts += load.timeouts;
      a.non2xx += load.non2xx;
      a.unexpected += load.unexpected;
    }
  }
  return sides.map((s, i) => sideFigures(totals[i]!, opts.windows, s.pid));
}

/**
 * A closed loop in code, for work autocannon cannot express (a run created, then its completion
 * awaited on the bus; tasks that each need their own token and answer time): `workers` loops, each
 * starting job after job — indexes 0, 1, … shared by all — until `jobs` have started or `more()`
 * says stop. Resolves once every started job has ended, with the number of jobs started.
 */
export async function closedLoop(
  opts: { workers: number; jobs?: number; more?: () => boolean },
  job: (index: number, worker: number) => Promise<void>,
): Promise<number> {
  const jobs = opts.jobs ?? Number.POSITIVE_INFINITY;
  let next = 0;
  const loop = async (worker: number): Promise<void> => {
    while (next < jobs && (opts.more?.() ?? true)) await job(next++, worker);
  };
  await Promise.all(Array.from({ length: Math.min(opts.workers, jobs) }, (_, w) => loop(w)));
  return next;
}
