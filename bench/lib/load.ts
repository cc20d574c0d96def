// Closed-loop HTTP load with autocannon, driven programmatically. Each connection runs a "flow"
// of one or more JSON-RPC steps in order (one step = plain request/response; two steps = e.g.
// approval send → reply), building a fresh body per request so every message has its own
// messageId and later steps can use what earlier responses returned (the task id).
//
// Latency is taken from autocannon's per-response 'response' event (float ms) rather than its
// result histogram, which stores whole milliseconds and would round sub-ms latencies to 0/1.
import autocannon from 'autocannon';

/** Per-connection scratch space shared by the steps of one flow; reset when the flow restarts. */
export type FlowContext = Record<string, string | undefined>;

export interface Step {
  /** The JSON-RPC request to send; undefined abandons the flow (an earlier step failed). */
  body(ctx: FlowContext): unknown;
  /** A substring every correct response contains; others count as `unexpected` (JSON-RPC errors are HTTP 200). */
  expect?: string;
  /** Pulls what later steps need out of the response body. */
  capture?(body: string, ctx: FlowContext): void;
}

export interface LoadSpec {
  url: string;
  connections: number;
  durationS: number;
  steps: Step[];
}

export interface LoadResult {
  durationS: number;
  requests: number;
  reqPerSec: number;
  /** Completed last steps per second; equals reqPerSec for one-step flows. */
  flowsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Socket errors + timeouts. */
  errors: number;
  timeouts: number;
  non2xx: number;
  /** 2xx responses without the step's `expect` substring (JSON-RPC errors, wrong state). */
  unexpected: number;
  /** Flows abandoned because a step could not be built. */
  abandoned: number;
  /** Response bytes on the wire (status line + headers + body), averaged. */
  bytesPerResp: number;
  /** CPU used by this process (autocannon) during the run, % of one core. */
  loadGenCpuPct: number;
}

interface Counters {
  unexpected: number;
  flows: number;
}

function toRequest(step: Step, last: boolean, counters: Counters): autocannon.Request {
  return {
    // setupRequest may return null to make autocannon restart the flow; its typings say Request.
    setupRequest: (req, ctx) => {
      const body = step.body(ctx as FlowContext);
      return (body === undefined ? null : { ...req, body: JSON.stringify(body) }) as autocannon.Request;
    },
    onResponse: (_status, body, ctx) => {
      if (step.expect !== undefined && !body.includes(step.expect)) counters.unexpected++;
      step.capture?.(body, ctx as FlowContext);
      if (last) counters.flows++;
    },
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
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
  makeRequests: () => autocannon.Request[],
): { instance: autocannon.Instance; done: Promise<autocannon.Result> } {
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: spec.url,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
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
  const counters: Counters = { unexpected: 0, flows: 0 };
  const makeRequests = (): autocannon.Request[] =>
    spec.steps.map((s, i) => toRequest(s, i === spec.steps.length - 1, counters));
  const latencies = new Samples();
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const { instance, done } = launch(spec, makeRequests);
  instance.on('response', (_client, _status, resBytes, ms) => {
    latencies.push(ms);
    bytes += resBytes;
  });
  const result = await done;
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const sorted = latencies.sorted();
  const durationS = result.duration || spec.durationS;
  return {
    durationS,
    requests: sorted.length,
    reqPerSec: sorted.length / durationS,
    flowsPerSec: counters.flows / durationS,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length ? (sorted[sorted.length - 1] as number) : NaN,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    unexpected: counters.unexpected,
    abandoned: result.resets ?? 0,
    bytesPerResp: sorted.length ? bytes / sorted.length : NaN,
    loadGenCpuPct: ((cpu.user + cpu.system) / wallUs) * 100,
  };
}
