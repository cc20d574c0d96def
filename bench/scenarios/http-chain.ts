// http.request chain: what an outbound-call node costs. A workflow of 10 http.request
// nodes in a row, each a GET to a local plain-HTTP server (allow-listed: HANDOFF_EGRESS_ALLOW_HOSTS
// =127.0.0.1) answering a small JSON body. Like the push scenario it starts a Handoff of its own
// (SQLite, pinned to core 0, the workflow in HANDOFF_WORKFLOWS) and leaves the harness's idle.
//
// One run:
//   1. chains: 100 runs started at once (POST /v1/runs, 20 requests in flight), 1,000 calls in
//      all; calls/s = 1,000 / (last call received − first run requested). Baseline in the same
//      run: 100 concurrent loops of 10 sequential bare undici requests to the same server.
//   2. added latency: 10 runs one after another; the gap between consecutive calls of one run
//      (server receipt to receipt: answer read, outcome committed, next node's call made) against
//      one bare undici request, sequential, same server.
// What the node does (retries, Idempotency-Key, the recorded outcome) is tested in test/.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { nowMs, sleep } from '../lib/clock.js';
import { handoffCells, handoffOrigin } from '../lib/handoff-only.js';
import { type HandoffServer, startHandoffSqlite } from '../lib/handoff-server.js';
import { http, jsonOf } from '../lib/http.js';
import { closedLoop } from '../lib/load.js';
import { cpuWindow } from '../lib/proc.js';
import { registerScenario, type Figures, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtInt, fmtMs, fmtTimes, perRun, type Section } from '../lib/report.js';
import { ascending, medians, percentile } from '../lib/stats.js';

const CALLS = 10;
const RUNS = 100;
const SEQUENTIAL_RUNS = 10;
const IN_FLIGHT = 20;

/** The chain: CALLS http.request nodes, `c0 → c1 → … → c9`. */
function chainWorkflow(): object {
  const nodes = Array.from({ length: CALLS }, (_, i) => ({
    id: `c${i}`,
    typeId: 'http.request',
    name: `call ${i}`,
    position: { x: i * 100, y: 0 },
    config: { method: 'GET', url: '{{ inputs.url }}', retry: { attempts: 1 } },
    inputs: {},
  }));
  const edges = nodes.slice(1).map((n, i) => ({ id: `e${i}`, sourceNodeId: `c${i}`, targetNodeId: n.id }));
  return {
    id: 'http-chain',
    name: 'http chain',
    version: '1',
    public: false,
    nodes,
    edges,
    triggers: [],
    variables: [],
    metadata: {},
    settings: {},
  };
}

/** The called server: answers `{"ok":true}`; records when each run's calls arrive. */
function startTarget(): Promise<{ server: Server; url: string; seen: Map<string, number[]>; count(): number }> {
  const seen = new Map<string, number[]>();
  let count = 0;
  const server = createServer((req, res) => {
    count++;
    const runId = String(req.headers['idempotency-key'] ?? '').split(':')[0];
    if (runId) {
      const times = seen.get(runId) ?? [];
      times.push(nowMs());
      seen.set(runId, times);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen, count: () => count }),
    ),
  );
}

async function startRun(base: string, url: string): Promise<string> {
  const res = await http('POST', `${base}/v1/runs`, { body: { workflowId: 'http-chain', inputs: { url } } });
  const runId = jsonOf<{ runId?: string }>(res.text)?.runId;
  if (res.status !== 201 || !runId) throw new Error(`POST /v1/runs answered ${res.status}: ${res.text.slice(0, 200)}`);
  return runId;
}

async function waitCompleted(base: string, runIds: readonly string[], deadline: number): Promise<number> {
  let failed = 0;
  for (const id of runIds) {
    for (;;) {
      const status = jsonOf<{ status?: string }>((await http('GET', `${base}/v1/runs/${id}`)).text)?.status;
      if (status === 'completed') break;
      if (status === 'failed' || nowMs() > deadline) {
        failed++;
        break;
      }
      await sleep(20);
    }
  }
  return failed;
}

/** Bare undici: `loops` concurrent loops of `calls` sequential GETs; per-request latencies. */
async function bare(url: string, loops: number, calls: number): Promise<{ ms: number; latencies: number[] }> {
  const agent = new Agent({ connections: loops });
  const latencies: number[] = [];
  const t0 = nowMs();
  await closedLoop({ workers: loops, jobs: loops }, async () => {
    for (let i = 0; i < calls; i++) {
      const t = nowMs();
      const res = await request(url, { dispatcher: agent, headers: { 'idempotency-key': 'bare' } });
      await res.body.json();
      latencies.push(nowMs() - t);
    }
  });
  const ms = nowMs() - t0;
  await agent.close();
  return { ms, latencies };
}

/** Gaps between consecutive calls of each run (ms). */
const gapsOf = (seen: Map<string, number[]>, runIds: readonly string[]): number[] =>
  runIds.flatMap((id) => {
    const times = seen.get(id) ?? [];
    return times.slice(1).map((t, i) => t - times[i]!);
  });

async function runChain(ctx: ScenarioContext): Promise<Figures> {
  handoffOrigin(ctx, 'the http.request node');
  const deadline = nowMs() + (ctx.mode.warmupS + ctx.mode.durationS + 30) * 1000 - 5000;
  const dir = mkdtempSync(join(tmpdir(), 'handoff-bench-chain-'));
  writeFileSync(join(dir, 'http-chain.json'), JSON.stringify(chainWorkflow()));
  const target = await startTarget();
  let server: HandoffServer | undefined;
  try {
    server = await startHandoffSqlite({
      env: { HANDOFF_WORKFLOWS: dir, HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1' },
    });
    const { base } = server;
    // Warm-up: JIT, the dispatcher's connection, SQLite pages.
    const warm: string[] = [];
    for (let i = 0; i < 5; i++) warm.push(await startRun(base, target.url));
    await waitCompleted(base, warm, deadline);

    // 1. 100 chains at once.
    const before = target.count();
    const cpu = cpuWindow(server.pid);
    const ids: string[] = [];
    const t0 = nowMs();
    await closedLoop({ workers: IN_FLIGHT, jobs: RUNS }, async () => {
      ids.push(await startRun(base, target.url));
    });
    const failed = await waitCompleted(base, ids, deadline);
    const lastCall = Math.max(...ids.map((id) => target.seen.get(id)?.at(-1) ?? 0));
    const calls = target.count() - before;
    const usage = cpu();
    const loaded = ascending(gapsOf(target.seen, ids));
    const bareLoad = await bare(target.url, RUNS, CALLS);

    // 2. One chain at a time.
    const seq: string[] = [];
    for (let i = 0; i < SEQUENTIAL_RUNS; i++) {
      const id = await startRun(base, target.url);
      seq.push(id);
      await waitCompleted(base, [id], deadline);
    }
    const gaps = ascending(gapsOf(target.seen, seq));
    const bareOne = ascending((await bare(target.url, 1, RUNS)).latencies);
    return {
      runs: RUNS,
      calls,
      failedRuns: failed,
      callsPerSec: (calls / (lastCall - t0)) * 1000,
      bareCallsPerSec: ((RUNS * CALLS) / bareLoad.ms) * 1000,
      loadedGapP50Ms: percentile(loaded, 50),
      loadedGapP99Ms: percentile(loaded, 99),
      gapP50Ms: percentile(gaps, 50),
      gapP99Ms: percentile(gaps, 99),
      bareP50Ms: percentile(bareOne, 50),
      bareP99Ms: percentile(bareOne, 99),
      serverCpuPct: usage.serverCpuPct,
    };
  } finally {
    await server?.stop();
    await new Promise((r) => target.server.close(r));
    target.server.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  }
}

function chainSection(result: ScenarioResult): Section {
  const { cells, skipped } = handoffCells(result);
  const rows = cells.map((cell) => {
    const runs = cell.runs;
    if (runs.length === 0)
      return [cell.target, `${cell.status}${cell.reason ? `: ${cell.reason}` : ''}`, '', '', '', ''];
    const m = medians(runs);
    return [
      `${cell.target} (${runs.length} run${runs.length > 1 ? 's' : ''})`,
      `**${fmtInt(m.callsPerSec)}** (${perRun(runs, 'callsPerSec')}) / ${fmtInt(m.bareCallsPerSec)} = ` +
        fmtTimes((m.bareCallsPerSec ?? NaN) / (m.callsPerSec ?? NaN)),
      `${fmtMs(m.gapP50Ms)} / ${fmtMs(m.gapP99Ms)}`,
      `${fmtMs(m.bareP50Ms)} / ${fmtMs(m.bareP99Ms)}`,
      `**${fmtMs((m.gapP50Ms ?? NaN) - (m.bareP50Ms ?? NaN))}**`,
      `${fmtMs(m.loadedGapP50Ms)} / ${fmtMs(m.loadedGapP99Ms)}; ${fmtInt(m.serverCpuPct)} % CPU; ` +
        `${fmtInt(m.calls)} calls, ${fmtInt(m.failedRuns)} failed runs`,
    ];
  });
  return {
    title: 'http.request chain',
    intro:
      `${RUNS} runs of a workflow of ${CALLS} \`http.request\` nodes (GET to a local plain-HTTP server, ` +
      `allow-listed), started at once (${IN_FLIGHT} POSTs in flight); then ${SEQUENTIAL_RUNS} runs one ` +
      'at a time. Baseline in the same run: bare undici requests to the same server (100 concurrent loops ' +
      'of 10; and one at a time). A call of a run is one worker step: the request through the egress ' +
      'guard, then its outcome committed (node.completed) and the next node reached.',
    columns: [
      'target',
      'calls/s, 100 runs (per run) / bare undici = ratio',
      'call-to-call, one run at a time p50 / p99 ms',
      'bare undici request p50 / p99 ms',
      'added per call p50 ms',
      'under load: call-to-call p50 / p99 ms; server CPU',
    ],
    rows,
    after: skipped.length > 0 ? `Not applicable: ${skipped.join(', ')} (no http.request node).` : '',
  };
}

registerScenario({
  name: 'http-chain',
  description: `http.request chain: ${RUNS} runs × ${CALLS} calls to a local server; calls/s and added latency over bare undici`,
  order: 75,
  run: runChain,
  section: chainSection,
});
