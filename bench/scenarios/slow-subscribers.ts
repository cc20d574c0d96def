// Slow subscribers: S subscribers that never read, on T large waiting tasks, and how
// the server holds up — its memory and /healthz latency while they hang.
//
// `slow-subscribers` — T `approval` tasks of about 1 MB each (a prompt of 230 KB in the history and
// in the draft to approve, then two `ask` replies of 230 KB each: more history), created over
// JSON-RPC on the target's default settings (HANDOFF_SSE_MAX_BUFFER 1 MiB, so a first frame over
// it goes trimmed; HANDOFF_SSE_MAX_TOTAL_BUFFER 64 MiB; HANDOFF_SSE_MAX_STREAMS 1,000). Then S
// `tasks/resubscribe` requests whose responses are never read, opened in waves of 50, each wave
// once the previous one is served (handoff_sse_streams on /metrics). /healthz is probed every
// 10 ms from the start: its latency while the subscribers come (each costs the server one Task
// built and serialized) is reported apart from its latency while they hang (the measured window).
// Server RSS: before, peak (VmHWM) and while they hang; the buffered bytes and drops from /metrics.
//
// Handoff only; other targets are reported as skipped.
import { Agent, request } from 'node:http';
import { readPeakRssMiB, readRssMiB } from '../lib/proc.js';
import { registerScenario, type Figures, type ScenarioContext, type ScenarioResult } from '../lib/registry.js';
import { fmtFixed, fmtInt, fmtMs, type Section } from '../lib/report.js';
import { medians, percentile } from '../lib/stats.js';
import { http, jsonOf } from '../lib/http.js';
import { scrapeMetrics } from '../lib/metrics-text.js';

const PART = 'p'.repeat(230 * 1024);
const WAVE = 50;
const sizes = (quick: boolean) => (quick ? { tasks: 5, subscribers: 300 } : { tasks: 10, subscribers: 1000 });

async function rpc(
  url: string,
  method: string,
  params: unknown,
): Promise<{ result?: { id: string }; error?: unknown }> {
  const answer = await http('POST', `${url}/v1/a2a`, { body: { jsonrpc: '2.0', id: 1, method, params } });
  return jsonOf<{ result?: { id: string }; error?: unknown }>(answer.text) ?? { error: answer.text.slice(0, 300) };
}

const text = (t: string, taskId?: string) => ({
  message: {
    kind: 'message',
    messageId: `slow-${Math.random().toString(36).slice(2)}`,
    role: 'user',
    parts: [{ kind: 'text', text: t }],
    ...(taskId ? { taskId } : { metadata: { skillId: 'approval' } }),
  },
});

async function largeTask(url: string): Promise<string> {
  const created = await rpc(url, 'message/send', text(PART));
  const id = created.result?.id;
  if (!id) throw new Error(`message/send failed: ${JSON.stringify(created).slice(0, 300)}`);
  // A plain-text reply to an approval is a question (`ask`): recorded in the history, still waiting.
  for (let i = 0; i < 2; i++) await rpc(url, 'message/send', text(PART, id));
  return id;
}

const metric = async (url: string, pattern: RegExp): Promise<number> => (await scrapeMetrics(url)).sum(pattern);

/** /healthz every 10 ms on one kept-alive connection; latencies tagged with the phase they fell in. */
function prober(url: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const samples: Array<{ phase: string; ms: number }> = [];
  let phase = 'before';
  let stop = false;
  const once = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = request(`${url}/healthz`, { agent }, (res) => {
        res.resume();
        res.on('end', () => {
          samples.push({ phase, ms: performance.now() - t0 });
          resolve();
        });
      });
      req.on('error', () => resolve());
      req.end();
    });
  const loop = (async () => {
    while (!stop) {
      await once();
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    set phase(p: string) {
      phase = p;
    },
    latencies: (p: string) =>
      samples
        .filter((s) => s.phase === p)
        .map((s) => s.ms)
        .sort((a, b) => a - b),
    async stop() {
      stop = true;
      await loop;
      agent.destroy();
    },
  };
}

async function run(ctx: ScenarioContext): Promise<Figures> {
  const url = new URL(ctx.running.url).origin;
  const { pid } = ctx.running;
  const { tasks, subscribers } = sizes(ctx.mode.quick);
  const ids: string[] = [];
  for (let i = 0; i < tasks; i++) ids.push(await largeTask(url));
  const rssBefore = readRssMiB(pid);
  const probe = prober(url);
  await new Promise((r) => setTimeout(r, 500));
  probe.phase = 'ramp';
  const clients: Array<ReturnType<typeof request>> = [];
  const rampStart = performance.now();
  const deadline = Date.now() + (ctx.mode.warmupS + ctx.mode.durationS + 20) * 1000;
  for (let opened = 0; opened < subscribers && Date.now() < deadline; opened += WAVE) {
    for (let i = opened; i < Math.min(subscribers, opened + WAVE); i++) {
      const req = request(`${url}/v1/a2a`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', () => {});
      req.on('response', () => {}); // never read
      req.end(
        JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/resubscribe', params: { id: ids[i % ids.length] } }),
      );
      clients.push(req);
    }
    const want = Math.min(subscribers, opened + WAVE);
    while (Date.now() < deadline) {
      const served = (await metric(url, /^handoff_sse_streams /)) + (await metric(url, /^handoff_sse_dropped_total/));
      if (served >= want) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const rampS = (performance.now() - rampStart) / 1000;
  probe.phase = 'hang';
  await new Promise((r) => setTimeout(r, ctx.mode.durationS * 1000));
  probe.phase = 'after';
  const figures: Figures = {
    tasks,
    subscribers,
    rampS,
    open: await metric(url, /^handoff_sse_streams /),
    dropped: await metric(url, /^handoff_sse_dropped_total/),
    bufferedMiB: (await metric(url, /^handoff_sse_buffered_bytes /)) / 1024 / 1024,
    rssBefore,
    rssHang: readRssMiB(pid),
    rssPeak: readPeakRssMiB(pid),
  };
  await probe.stop();
  for (const c of clients) c.destroy();
  const hang = probe.latencies('hang');
  const ramp = probe.latencies('ramp');
  const before = probe.latencies('before');
  ctx.log(
    `slow-subscribers: ${figures.open} open, ${figures.dropped} dropped; ` +
      `RSS ${fmtFixed(rssBefore, 0)} → peak ${fmtFixed(figures.rssPeak, 0)} MiB; ` +
      `/healthz p99 ${fmtMs(percentile(hang, 99))} ms while they hang, max ${fmtMs(ramp.at(-1))} ms while they came`,
  );
  return {
    ...figures,
    healthzBeforeP99: percentile(before, 99),
    healthzHangP50: percentile(hang, 50),
    healthzHangP99: percentile(hang, 99),
    healthzHangMax: hang.at(-1) ?? NaN,
    healthzHangN: hang.length,
    healthzRampP99: percentile(ramp, 99),
    healthzRampMax: ramp.at(-1) ?? NaN,
  };
}

function section(result: ScenarioResult): Section {
  const rows = result.cells.map((cell) => {
    if (cell.runs.length === 0)
      return [cell.target, `${cell.status}${cell.reason ? `: ${cell.reason}` : ''}`, '', '', '', '', ''];
    const m = medians(cell.runs);
    return [
      cell.target,
      `${fmtInt(m.subscribers)} on ${fmtInt(m.tasks)} tasks; ${fmtInt(m.open)} open, ` +
        `${fmtInt(m.dropped)} dropped; ramp ${fmtFixed(m.rampS, 1)} s`,
      `${fmtFixed(m.rssBefore, 0)} / **${fmtFixed(m.rssPeak, 0)}** / ${fmtFixed(m.rssHang, 0)}`,
      fmtFixed(m.bufferedMiB, 1),
      `${fmtMs(m.healthzHangP50)} / **${fmtMs(m.healthzHangP99)}** / ${fmtMs(m.healthzHangMax)} ` +
        `(n ${fmtInt(m.healthzHangN)})`,
      `${fmtMs(m.healthzRampP99)} / ${fmtMs(m.healthzRampMax)}`,
      fmtMs(m.healthzBeforeP99),
    ];
  });
  return {
    title: 'Slow subscribers: never-reading subscribers on large tasks',
    intro:
      'S `tasks/resubscribe` subscribers that never read their response, on T waiting `approval` tasks of ' +
      'about 1 MB (quick: 300 on 5, full: 1,000 on 10), opened in waves of 50; /healthz probed every 10 ms. ' +
      'Targets: RSS peak under RSS before + HANDOFF_SSE_MAX_TOTAL_BUFFER (64 MiB) + 128 MiB, ' +
      '/healthz p99 under 50 ms while they hang.',
    columns: [
      'target',
      'subscribers',
      'server RSS MiB before / peak / hanging',
      'buffered MiB',
      '/healthz ms while they hang p50 / p99 / max',
      '/healthz ms while they came p99 / max',
      '/healthz p99 ms before',
    ],
    rows,
    after:
      'A first frame over the 1 MiB per-stream cap goes trimmed (no history, no artifacts, a pointer to ' +
      'tasks/get), so these subscribers hold little; what each costs is the Task built and serialized when ' +
      'it comes, which is why /healthz is slower while they come than while they hang.',
  };
}

registerScenario({
  name: 'slow-subscribers',
  description: 'Never-reading subscribers on large waiting tasks: server RSS and /healthz latency while they hang.',
  order: 64,
  async run(ctx) {
    if (!ctx.target.name.startsWith('handoff')) throw new Error('handoff-only scenario');
    return run(ctx);
  },
  section,
});
