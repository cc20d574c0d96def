// a2a.invoke stream holds against a hostile peer (test/support/noisy-agent.ts: an @a2a-js/sdk 1.x
// agent whose tasks never end and whose cancel does nothing):
// - a hold ends with its node's wait: the run cancelled, or failed by its timeout, closes the
//   subscription though the peer goes on flooding it;
// - a flood is read at a bounded rate;
// - a stream whose every event is a new state wakes the run at most once per
//   HANDOFF_AGENT_WAKE_MIN_MS, over the one subscription it opened;
// - past HANDOFF_AGENT_MAX_STREAMS a wait polls, and the host says so (a metric and a log line).
// Counts come from A's /metrics and the peer's own count of open streams; every wait is a condition.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FlakyProxy, startFlakyProxy } from '../support/flaky-proxy.js';
import { type NoisyAgent, startNoisyAgent } from '../support/noisy-agent.js';
import { killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, startRun, tmp, untilStatus, untilWaitingOn, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

/** The sum of a metric's samples on a host's /metrics. */
async function metric(base: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

const executions = (base: string) => metric(base, 'handoff_node_executions_total', { type: 'a2a.invoke' });
const SLOW_POLLS = { HANDOFF_AGENT_POLL_MIN_MS: '600000', HANDOFF_AGENT_POLL_MAX_MS: '600000' };

/** What a window of a hostile stream cost A: wall time, A's CPU, and the counters named. */
async function measure<K extends string>(
  a: ServerProcess,
  counters: Record<K, () => Promise<number> | number>,
  done: () => boolean,
): Promise<Record<K, number> & { seconds: number; cpuSeconds: number }> {
  const names = Object.keys(counters) as K[];
  const read = async () => {
    const values = new Map<string, number>([['cpu', await metric(a.url, 'process_cpu_seconds_total')]]);
    for (const k of names) values.set(k, await counters[k]());
    return values;
  };
  const start = await read();
  const t0 = Date.now();
  await until('the window to pass', done, { deadlineMs: 60_000, intervalMs: 50 });
  const seconds = (Date.now() - t0) / 1000;
  const end = await read();
  const diff = (k: string) => (end.get(k) ?? 0) - (start.get(k) ?? 0);
  const out = Object.fromEntries(names.map((k) => [k, diff(k)])) as Record<K, number>;
  return Object.assign(out, { seconds, cpuSeconds: diff('cpu') });
}

describe('a2a.invoke: a stream hold ends with its wait', () => {
  let peer: NoisyAgent;
  let a: ServerProcess;

  before(async () => {
    peer = await startNoisyAgent({ floodEveryMs: 2 });
    // Node timeouts of 3 s: the second test's run fails by it while the peer floods on.
    a = await startServer({ dataDir: tmp('a'), env: callerEnv(writeCallWorkflows(3_000), { noisy: peer.url }) });
  });
  after(async () => {
    await killAllServers();
    await peer?.close();
  });

  it('cancelling the run closes its subscription, though the peer floods on and ignores the cancel', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'flood', prompt: 'c' });
    // A read `working` (the stream's first event woke it from `submitted`), and holds on.
    await untilWaitingOn(a.url, runId, 'working');
    await until('A subscribed', () => peer.openStreams === 1);
    const res = await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await untilStatus(a.url, runId, ['cancelled']);
    await until('the subscription closed', () => peer.openStreams === 0, { deadlineMs: 20_000 });
    assert.equal(await metric(a.url, 'handoff_peer_stream_holds'), 0, 'A holds no subscription');
  });

  it('a run failed by its timeout closes its subscription', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'flood', prompt: 't' });
    await untilWaitingOn(a.url, runId, 'working');
    await until('A subscribed', () => peer.openStreams === 1);
    const done = await untilStatus(a.url, runId, ['failed', 'completed']);
    assert.equal(done.status, 'failed');
    assert.match(done.error.message, /did not end within 3000 ms/);
    await until('the subscription closed', () => peer.openStreams === 0, { deadlineMs: 20_000 });
  });
});

describe('a2a.invoke: a flooding or flipping stream is read at a bounded rate', () => {
  let peer: NoisyAgent;
  let a: ServerProcess;

  before(async () => {
    peer = await startNoisyAgent({ floodEveryMs: 1, flipEveryMs: 5 });
    // Only streams (and their wakes) make A read the peer within these tests.
    a = await startServer({
      dataDir: tmp('a'),
      env: callerEnv(writeCallWorkflows(), { noisy: peer.url }, { ...SLOW_POLLS, HANDOFF_AGENT_WAKE_MIN_MS: '1000' }),
    });
  });
  after(async () => {
    await killAllServers();
    await peer?.close();
  });

  it('a flood of progress updates is read at most 50 events a second (plus a burst of 50)', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'flood', prompt: 'f' });
    await until('A subscribed', () => peer.openStreams === 1);
    const from = peer.published('flood');
    const m = await measure(
      a,
      { events: () => metric(a.url, 'handoff_peer_stream_events_total') },
      () => peer.published('flood') >= from + 3_000,
    );
    const bound = 50 * m.seconds + 50;
    assert.ok(m.events <= bound, `${m.events} events read in ${m.seconds} s (bound ${bound}); ${JSON.stringify(m)}`);
    await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
    await until('the subscription closed', () => peer.openStreams === 0, { deadlineMs: 20_000 });
  });

  it('a stream flipping state every 5 ms: one subscription, at most one read a second', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'flip', prompt: 'p' });
    await until('A subscribed', () => peer.openStreams === 1);
    const from = peer.published('flip');
    const m = await measure(
      a,
      { reads: () => executions(a.url), subscriptions: () => peer.streamsOpened },
      () => peer.published('flip') >= from + 300,
    );
    assert.ok(m.subscriptions <= 1, `${m.subscriptions} subscriptions opened; ${JSON.stringify(m)}`);
    const bound = m.seconds + 2;
    assert.ok(
      m.reads <= bound,
      `${m.reads} reads of the peer in ${m.seconds} s (bound ${bound}); ${JSON.stringify(m)}`,
    );
    await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
    await until('the subscription closed', () => peer.openStreams === 0, { deadlineMs: 20_000 });
  });
});

describe('a2a.invoke: a flipping peer that closes every subscription after its first event', () => {
  let peer: NoisyAgent;
  let cutting: FlakyProxy;
  let a: ServerProcess;

  before(async () => {
    peer = await startNoisyAgent({ flipEveryMs: 5 });
    cutting = await startFlakyProxy(peer.url, { cutStreams: true });
    // The poll bounds are also the re-subscription backoff: ten minutes after the first drop.
    a = await startServer({
      dataDir: tmp('a'),
      env: callerEnv(
        writeCallWorkflows(),
        { cutting: cutting.url },
        { ...SLOW_POLLS, HANDOFF_AGENT_WAKE_MIN_MS: '200' },
      ),
    });
  });
  after(async () => {
    await killAllServers();
    await cutting?.close();
    await peer?.close();
  });

  it('each first event may wake the run, but a dropped stream is not held again before its backoff', async () => {
    const runId = await startRun(a.url, 'call_stream_wait', { agent: 'cutting', skill: 'flip', prompt: 'x' });
    await until('A subscribed', () => cutting.streams >= 1);
    const from = peer.published('flip');
    const m = await measure(
      a,
      { reads: () => executions(a.url), subscriptions: () => cutting.streams },
      () => peer.published('flip') >= from + 300,
    );
    assert.equal(m.subscriptions, 0, `${m.subscriptions} subscriptions after the first drop; ${JSON.stringify(m)}`);
    await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
  });
});

describe('a2a.invoke: the stream cap', () => {
  let peer: NoisyAgent;
  let a: ServerProcess;

  before(async () => {
    peer = await startNoisyAgent();
    a = await startServer({
      dataDir: tmp('a'),
      env: callerEnv(writeCallWorkflows(), { noisy: peer.url }, { HANDOFF_AGENT_MAX_STREAMS: '1' }),
    });
  });
  after(async () => {
    await killAllServers();
    await peer?.close();
  });

  it('a wait past HANDOFF_AGENT_MAX_STREAMS polls, counted and logged', async () => {
    await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'hold', prompt: '1' });
    await until('A subscribed', () => peer.openStreams === 1);
    await startRun(a.url, 'call_stream_wait', { agent: 'noisy', skill: 'hold', prompt: '2' });
    await until(
      'a hold refused at the cap',
      async () => (await metric(a.url, 'handoff_peer_stream_refused_total')) > 0,
    );
    assert.equal(peer.openStreams, 1);
    await until('the cap logged', () => a.logs().includes('peer stream cap reached'));
  });
});
