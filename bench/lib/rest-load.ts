// Closed-loop load on a REST API (method + path per request), for the OpenWOP run-API scenarios.
// Same method as lib/load.ts (autocannon in this process, HTTP/1.1 keep-alive, float latencies from
// the per-response event, own request objects per connection), but each step chooses its method
// and path, a flow may end early (a step returns undefined: the connection starts the next flow),
// and steps can tally response kinds (e.g. the run status a POST answered with).
//
// measureRest() adds what lib/throughput.ts measures around the run: server CPU from /proc over the
// measured window only (warm-up excluded), machine-wide CPU for the "other" figure, and optionally
// the CPU of extra processes (PostgreSQL backends serving the server).
import autocannon from 'autocannon';
import { readCpuUs, readRssMiB, readSystemCpu } from './proc.js';
import type { Figures } from './registry.js';

export type FlowContext = Record<string, string | undefined>;

export interface RestRequest {
  method: 'GET' | 'POST';
  /** Path and query, e.g. `/v1/runs/run_…`. */
  path: string;
  body?: unknown;
}

export interface RestStep {
  /** The request to send; undefined ends the flow here (the connection starts the next flow). */
  request(flow: FlowContext): RestRequest | undefined;
  /** False = the 2xx answer was wrong (counted as `unexpected`). */
  check?(body: string, flow: FlowContext): boolean;
  /** Pull what later steps need out of the response. */
  capture?(body: string, flow: FlowContext): void;
  /** True when this response completes the flow's goal (counted in flowsPerSec). */
  completes?(body: string, flow: FlowContext): boolean;
  /** A label to count for this response (e.g. the status a run was created in). */
  tally?(body: string, flow: FlowContext): string | undefined;
}

export interface RestLoadSpec {
  /** http://127.0.0.1:port — no path. */
  baseUrl: string;
  connections: number;
  durationS: number;
  steps: RestStep[];
}

export interface RestLoadResult {
  durationS: number;
  requests: number;
  reqPerSec: number;
  flows: number;
  flowsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  unexpected: number;
  bytesPerResp: number;
  loadGenCpuPct: number;
  tallies: Record<string, number>;
  /** Every latency of the run (ms), sorted ascending — to pool several runs' percentiles. */
  samples: Float64Array;
}

interface Counters {
  unexpected: number;
  flows: number;
  tallies: Map<string, number>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

function toRequest(step: RestStep, counters: Counters): autocannon.Request {
  return {
    setupRequest: (req, ctx) => {
      const r = step.request(ctx as FlowContext);
      if (r === undefined) return null as unknown as autocannon.Request; // autocannon: restart the flow
      return {
        ...req,
        method: r.method,
        path: r.path,
        ...(r.body === undefined ? {} : { body: JSON.stringify(r.body), headers: JSON_HEADERS }),
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

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export async function runRestLoad(spec: RestLoadSpec): Promise<RestLoadResult> {
  const counters: Counters = { unexpected: 0, flows: 0, tallies: new Map() };
  const makeRequests = (): autocannon.Request[] => spec.steps.map((s) => toRequest(s, counters));
  let lat = new Float64Array(1 << 16);
  let n = 0;
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: spec.baseUrl,
        connections: spec.connections,
        duration: spec.durationS,
        timeout: 10,
        sampleInt: 100, // see lib/load.ts: otherwise durations round up to whole seconds
        requests: makeRequests(),
        setupClient: (client) => client.setRequests(makeRequests()),
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
  instance.on('response', (_client, _status, resBytes, ms) => {
    if (n === lat.length) {
      const next = new Float64Array(lat.length * 2);
      next.set(lat);
      lat = next;
    }
    lat[n++] = ms;
    bytes += resBytes;
  });
  const result = await done;
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = lat.slice(0, n).sort();
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
    maxMs: n ? (sorted[n - 1] as number) : NaN,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    unexpected: counters.unexpected,
    bytesPerResp: n ? bytes / n : NaN,
    loadGenCpuPct: ((cpu.user + cpu.system) / wallUs) * 100,
    tallies: Object.fromEntries(counters.tallies),
    samples: sorted,
  };
}

export interface MeasureRestOptions {
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
 * Warm-up, then the measured run. Figures: everything of RestLoadResult (tallies as `tally.<label>`)
 * plus server CPU (% and µs per request / per completed flow), helper CPU (`dbCpu*`), other CPU %.
 */
export async function measureRest(spec: Omit<RestLoadSpec, 'durationS'>, opts: MeasureRestOptions): Promise<Figures> {
  if (opts.warmupS > 0) await runRestLoad({ ...spec, durationS: opts.warmupS });
  const helpers = opts.helperPids ? await opts.helperPids() : [];
  const helper0 = new Map(helpers.map((p) => [p, tryCpuUs(p)] as const));
  const cpu0 = readCpuUs(opts.pid);
  const sys0 = readSystemCpu();
  const t0 = performance.now();
  const load = await runRestLoad({ ...spec, durationS: opts.durationS });
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
    reqPerBusyCore: 1e6 / usPerReq,
    serverCpuUsPerFlow: load.flows > 0 ? cpuUs / load.flows : NaN,
    flowsPerBusyCore: load.flows > 0 ? (1e6 * load.flows) / cpuUs : NaN,
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

export interface PairedServer {
  base: string;
  pid: number;
}

/**
 * The same kind of load on two servers, measured in alternating windows (A B B A A B …) so both
 * see the same machine noise — for comparisons on a shared box where separate runs a minute apart
 * can differ 3×. Each server gets a warm-up, then `windows` windows of `windowS` seconds (every
 * window is a new autocannon run: 50 new connections). Percentiles are taken over the pooled
 * latencies of all of a server's windows; CPU and rates over the sum of its windows.
 */
export async function measurePaired(
  servers: [PairedServer, PairedServer],
  steps: [RestStep[], RestStep[]],
  opts: { connections: number; warmupS: number; windowS: number; windows: number },
): Promise<[Figures, Figures]> {
  for (const [i, s] of servers.entries()) {
    if (opts.warmupS > 0)
      await runRestLoad({ baseUrl: s.base, connections: opts.connections, durationS: opts.warmupS, steps: steps[i]! });
  }
  const acc = servers.map(() => ({
    samples: [] as Float64Array[],
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
  }));
  for (let w = 0; w < opts.windows; w++) {
    const order = w % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const s = servers[i]!;
      const a = acc[i]!;
      const cpu0 = readCpuUs(s.pid);
      const sys0 = readSystemCpu();
      const t0 = performance.now();
      const load = await runRestLoad({
        baseUrl: s.base,
        connections: opts.connections,
        durationS: opts.windowS,
        steps: steps[i]!,
      });
      const wallUs = (performance.now() - t0) * 1000;
      a.cpuUs += readCpuUs(s.pid) - cpu0;
      a.sysUs += readSystemCpu().busyUs - sys0.busyUs;
      a.wallUs += wallUs;
      a.loadGenUs += (load.loadGenCpuPct / 100) * wallUs;
      a.durationS += load.durationS;
      a.samples.push(load.samples);
      a.bytes += load.bytesPerResp * load.requests || 0;
      a.errors += load.errors;
      a.timeouts += load.timeouts;
      a.non2xx += load.non2xx;
      a.unexpected += load.unexpected;
    }
  }
  const out = acc.map((a, i): Figures => {
    const total = a.samples.reduce((n, x) => n + x.length, 0);
    const all = new Float64Array(total);
    let at = 0;
    for (const x of a.samples) {
      all.set(x, at);
      at += x.length;
    }
    all.sort();
    const pct = (us: number): number => (us / a.wallUs) * 100;
    const usPerReq = a.cpuUs / total;
    return {
      durationS: a.durationS,
      windows: opts.windows,
      requests: total,
      reqPerSec: total / a.durationS,
      p50Ms: percentile(all, 50),
      p90Ms: percentile(all, 90),
      p99Ms: percentile(all, 99),
      maxMs: total ? (all[total - 1] as number) : NaN,
      errors: a.errors,
      timeouts: a.timeouts,
      non2xx: a.non2xx,
      unexpected: a.unexpected,
      failures: a.errors + a.non2xx + a.unexpected,
      bytesPerResp: total ? a.bytes / total : NaN,
      loadGenCpuPct: pct(a.loadGenUs),
      serverCpuPct: pct(a.cpuUs),
      serverCpuUsPerReq: usPerReq,
      reqPerBusyCore: 1e6 / usPerReq,
      otherCpuPct: Math.max(0, pct(a.sysUs - a.cpuUs - a.loadGenUs)),
      rssMiB: readRssMiB(servers[i]!.pid),
    };
  });
  return [out[0]!, out[1]!];
}
