// Handoffs between two hosts: host A runs the shipped `delegate` workflow, whose a2a.invoke node
// hands the approval to host B (`reviewer=<B>`); the bench approves on B as soon as B's task waits,
// and A picks up B's result. Figures per wait mode: handoffs/s (whole flows, 16 in flight),
// commit-to-wake latency (B's completing commit → A's node.completed), and A's CPU per handoff.
// Each mode runs `delegate` with its a2a.invoke node's `wait` forced (a copy of the shipped file):
// push (A on https with a throw-away test CA and an https public URL; B pushes to loopback and
// trusts the CA), stream (tasks/resubscribe held on B), and polling with the default backoff
// (1 s doubling to 60 s) and a fast one (50–250 ms). Push and stream keep polling as the floor,
// set to 60 s there, so a wake that needed the floor would show as a p99 near 60 s. B's task waits
// at input-required (its approval): A's stream hold goes on through it (src/peers/streams.ts), and
// B's observe stream stays open across it, so the completion wakes A by the stream.
// 1,000 handoffs per mode in one run (the harness runs this scenario once, not per round).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/env.js';
import { http, jsonOf, trustCa } from '../lib/http.js';
import { startHandoffSqlite, type TlsFiles } from '../lib/handoff-server.js';
import { readCpuUs } from '../lib/proc.js';
import { makePushCerts } from '../lib/push-receiver.js';
import { type Figures, registerScenario, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, fmtInt, fmtMs, type Section } from '../lib/report.js';
import { ascending, median, percentile } from '../lib/stats.js';

const NAME = 'delegate';
const TARGET = 'handoff';
const IN_FLIGHT = 16;
const N = 1_000;
const POLL_DEFAULT = { HANDOFF_AGENT_POLL_MIN_MS: '1000', HANDOFF_AGENT_POLL_MAX_MS: '60000' };
const FLOOR_60S = { HANDOFF_AGENT_POLL_MIN_MS: '60000', HANDOFF_AGENT_POLL_MAX_MS: '60000' };
const MODES = {
  push: { wait: 'push', label: 'push (https callback)', env: FLOOR_60S },
  stream: { wait: 'stream', label: 'stream (resubscribe)', env: FLOOR_60S },
  poll: {
    wait: 'poll',
    label: 'poll (1 s → 60 s)',
    env: POLL_DEFAULT,
  },
  pollFast: {
    wait: 'poll',
    label: 'poll (50 → 250 ms)',
    env: { HANDOFF_AGENT_POLL_MIN_MS: '50', HANDOFF_AGENT_POLL_MAX_MS: '250' },
  },
} as const;
type Mode = keyof typeof MODES;

/** A workflows dir holding `delegate_<wait>`: the shipped `delegate` with its node's `wait` forced. */
function writeWorkflows(dir: string): void {
  const shipped = JSON.parse(readFileSync(join(ROOT, 'workflows/delegate.json'), 'utf8'));
  for (const wait of ['push', 'stream', 'poll']) {
    const nodes = shipped.nodes.map((n: Json) => (n.id === 'review' ? { ...n, config: { ...n.config, wait } } : n));
    writeFileSync(join(dir, `delegate_${wait}.json`), JSON.stringify({ ...shipped, id: `delegate_${wait}`, nodes }));
  }
}

/** Server certificate and key files for A (https), of a CA the harness and B trust. */
function makeTls(dir: string): TlsFiles & { caFile: string; cleanup(): void } {
  const certs = makePushCerts();
  const tls = { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') };
  writeFileSync(tls.certFile, certs.certPem);
  writeFileSync(tls.keyFile, certs.keyPem);
  trustCa(readFileSync(certs.caFile, 'utf8'));
  return { ...tls, caFile: certs.caFile, cleanup: certs.cleanup };
}

type Json = any;

async function json(method: 'GET' | 'POST', url: string, body?: unknown): Promise<Json> {
  const res = await http(method, url, { ...(body !== undefined ? { body } : {}), timeoutMs: 30_000 });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${res.text.slice(0, 200)}`);
  return jsonOf<Json>(res.text);
}

/**
 * Long-poll a run's event log until `match` finds what is wanted (or the run ends): the bench waits
 * without polling the hosts every few ms itself, which on 2 cores took CPU from the hosts measured.
 */
async function untilEvent<T>(
  base: string,
  runId: string,
  match: (e: Json) => T | undefined,
  deadlineMs = 180_000,
): Promise<{ found: T | undefined; events: Json[] }> {
  const end = Date.now() + deadlineMs;
  const seen: Json[] = [];
  let after = -1;
  for (;;) {
    const page = await json('GET', `${base}/v1/runs/${runId}/events/poll?lastSequence=${after}&timeout=20&limit=1000`);
    for (const e of page.events as Json[]) {
      seen.push(e);
      const found = match(e);
      if (found !== undefined) return { found, events: seen };
    }
    after = page.lastEventSeq as number;
    if (page.isComplete) return { found: undefined, events: seen };
    if (Date.now() > end) throw new Error(`timed out waiting on run ${runId} at ${base}`);
  }
}

/** The peer task id once A's call sees B's task at input-required (linked there, or updated to it). */
const inputRequired = (e: Json): string | undefined => {
  if (e.type === 'a2a.task.linked' && e.payload.state === 'input-required') return e.payload.peerTaskId;
  if (e.type === 'a2a.task.updated' && e.payload.state === 'input-required') return e.payload.peerTaskId;
  return undefined;
};

/** One handoff: start on A, approve on B once it waits, wait for A; the commit-to-wake latency (ms). */
async function handoff(a: string, b: string, workflowId: string, i: number): Promise<number> {
  const { runId } = await json('POST', `${a}/v1/runs`, { workflowId, inputs: { prompt: `bench ${i}` } });
  const { found: peer } = await untilEvent(a, runId, inputRequired);
  if (!peer) throw new Error(`A's run ${runId} ended before B's task waited`);
  await json('POST', `${b}/v1/runs/${peer}/interrupts/review`, { resumeValue: { action: 'accept' } });
  await untilEvent(b, peer, () => undefined);
  const onB = await json('GET', `${b}/v1/runs/${peer}`);
  if (onB.status !== 'completed') throw new Error(`B's run ${onB.status}`);
  const { found: woke } = await untilEvent(a, runId, (e) =>
    e.type === 'node.completed' && e.nodeId === 'review' ? e : undefined,
  );
  if (!woke) {
    const s = await json('GET', `${a}/v1/runs/${runId}`);
    throw new Error(`A's run ${s.status}: ${JSON.stringify(s.error)}`);
  }
  return Date.parse(woke.timestamp as string) - Date.parse(onB.completedAt as string);
}

async function measureMode(ctx: ScenarioContext, mode: Mode, n: number): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-bench-delegate-'));
  const tls = mode === 'push' ? makeTls(dir) : undefined;
  const { wait, env } = MODES[mode];
  const workflowId = `delegate_${wait}`;
  writeWorkflows(dir);
  const b = await startHandoffSqlite({
    env: tls ? { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.1/32', HANDOFF_PUSH_CA_FILE: tls.caFile } : {},
  });
  const a = await startHandoffSqlite({
    env: { HANDOFF_AGENTS: `reviewer=${b.base}`, HANDOFF_WORKFLOWS: dir, ...env },
    ...(tls ? { tls } : {}),
  }).catch(async (err) => {
    await b.stop();
    throw err;
  });
  try {
    const cpu0 = readCpuUs(a.pid);
    const t0 = Date.now();
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < n) latencies.push(await handoff(a.base, b.base, workflowId, next++));
      }),
    );
    const wallS = (Date.now() - t0) / 1000;
    const cpuMs = (readCpuUs(a.pid) - cpu0) / 1000;
    const sorted = ascending(latencies);
    ctx.log(`${NAME} ${mode}: ${n} handoffs in ${wallS.toFixed(1)} s`);
    return {
      [`${mode}.handoffs`]: n,
      [`${mode}.perSec`]: n / wallS,
      [`${mode}.wakeP50`]: percentile(sorted, 50),
      [`${mode}.wakeP99`]: percentile(sorted, 99),
      [`${mode}.cpuMsPerHandoff`]: cpuMs / n,
    };
  } finally {
    await a.stop();
    await b.stop();
    tls?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(ctx: ScenarioContext): Promise<Figures> {
  if (ctx.target.name !== TARGET) {
    throw new Error(`not applicable: Handoff-only scenario (--targets ${TARGET} skips ${ctx.target.name})`);
  }
  const n = ctx.mode.quick ? 32 : N;
  const figures: Figures = {};
  for (const mode of Object.keys(MODES) as Mode[]) Object.assign(figures, await measureMode(ctx, mode, n));
  return figures;
}

function section(result: ScenarioResult): Section {
  const cell = result.cells.find((c) => c.target === TARGET);
  const runs = cell?.status === 'ok' ? cell.runs : [];
  const med = (key: string) => (runs.length ? median(runs.map((r) => r[key] ?? Number.NaN)) : undefined);
  const rows = (Object.keys(MODES) as Mode[]).map((mode) => [
    MODES[mode].label,
    fmtInt(med(`${mode}.handoffs`)),
    fmtFixed(med(`${mode}.perSec`), 1),
    fmtMs(med(`${mode}.wakeP50`)),
    fmtMs(med(`${mode}.wakeP99`)),
    fmtFixed(med(`${mode}.cpuMsPerHandoff`), 2),
  ]);
  return {
    title: 'Handoffs between two hosts (a2a.invoke, `delegate`)',
    intro: result.description,
    columns: ['wait mode', 'handoffs', 'handoffs/s', 'wake p50 (ms)', 'wake p99 (ms)', 'A CPU ms / handoff'],
    rows: cell?.status === 'ok' ? rows : [[cell?.status ?? 'not run', cell?.reason ?? '', '', '', '', '']],
    after:
      "wake = time from B committing its task `completed` to A committing the node's completion (one clock: " +
      'both hosts on this machine). handoffs/s counts whole flows (start on A, B waits, approve on B, A completes), ' +
      `${IN_FLIGHT} in flight, so it includes the bench's own long-polls of both hosts. Push keeps polling as a ` +
      'floor at 60 s, and so does stream: a p99 far below that means every wake came by the push or the stream ' +
      "(A's stream hold goes on through B's input-required). CPU ms / handoff counts A's process only.",
  };
}

registerScenario({
  name: NAME,
  description:
    'Host A runs `delegate` (a2a.invoke → reviewer on host B, both SQLite); the bench approves on B as soon as ' +
    `B's task waits; ${IN_FLIGHT} handoffs in flight. Per wait mode: handoffs/s, commit-to-wake p50/p99, A CPU per handoff.`,
  order: 90,
  run,
  // One run holds 4 × N handoffs (each mode starts its own pair of hosts).
  oneRound: true,
  runLimitS: (mode) => (mode.quick ? 120 : 900),
  section,
});
