// A run whose peer, or whose URL, is down does not just show `working`: the run snapshot, the run
// list and the A2A task (0.3 and 1.0) say it is retrying, with the attempt, the next attempt and
// the last error, and the log has one line per failed attempt. The peer and the URL are a closed
// loopback port.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  closedPort,
  getJson,
  killAllServers,
  postJson,
  type ServerProcess,
  startServer,
} from '../support/server-process.js';
import { openA2AStream } from '../support/sse-client.js';
import { callerEnv, events, getRun, startRun, tmp, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

/** A workflow with one http.request to `url` that retries for a long time. */
function writeFetchWorkflow(dir: string): void {
  const node = {
    id: 'fetch',
    typeId: 'http.request',
    name: 'Fetch',
    position: { x: 0, y: 0 },
    config: { method: 'GET', url: '{{ inputs.url }}', retry: { attempts: 20, backoffMs: 200, maxBackoffMs: 400 } },
    inputs: {},
  };
  const wf = {
    id: 'fetch_down',
    name: 'Fetch',
    version: '1.0.0',
    nodes: [node],
    edges: [],
    triggers: [{ id: 'manual', type: 'manual', enabled: true }],
    variables: [],
    metadata: {},
    settings: {},
  };
  writeFileSync(join(dir, 'fetch_down.json'), JSON.stringify(wf));
}

describe('activity: a run whose peer or URL is down shows retrying', () => {
  let a: ServerProcess;
  let port: number;

  before(async () => {
    port = await closedPort();
    const dir = writeCallWorkflows(600_000);
    writeFetchWorkflow(dir);
    const env = callerEnv(dir, { down: `http://127.0.0.1:${port}` }, { HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1' });
    a = await startServer({ dataDir: tmp('activity'), env });
  });
  after(killAllServers);

  const rpc = async (method: string, params: unknown, version?: '1.0') => {
    const headers: Record<string, string> = version ? { 'a2a-version': version } : {};
    const res = await postJson(`${a.url}/v1/a2a`, { jsonrpc: '2.0', id: 1, method, params }, { headers });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.error, undefined, JSON.stringify(res.body));
    return res.body.result;
  };

  /** The run's snapshot once it has failed `attempts` times in a row. */
  const untilRetried = (runId: string, attempts: number) =>
    until(`run ${runId} retrying after ${attempts} failed attempts`, async () => {
      const s = await getRun(a.url, runId);
      return s.activity?.kind === 'retrying' && s.activity.attempt >= attempts && s;
    });

  it('a2a.invoke to an agent that is down: REST, the run list, tasks/get 0.3 and GetTask 1.0', async () => {
    const runId = await startRun(a.url, 'call_poll_wait', { agent: 'down', skill: 'echo', prompt: 'hello' });
    const snap = await untilRetried(runId, 2);
    assert.equal(snap.status, 'running');
    const act = snap.activity;
    assert.equal(act.nodeId, 'call');
    assert.deepEqual(act.peer, { agent: 'down' });
    assert.equal(act.lastError.code, 'external_call_failed');
    assert.match(act.lastError.message, /ECONNREFUSED|refused|connect/i);
    assert.ok(Number.isFinite(Date.parse(act.nextAttemptAt)), act.nextAttemptAt);
    assert.ok(Date.parse(act.since) <= Date.parse(act.nextAttemptAt));
    assert.match(act.summary, /^Retrying the call to agent down \(attempt \d+, next at \d\d:\d\d:\d\d UTC\): /);

    const listed = (await getJson(`${a.url}/v1/runs`)).body.runs.find((r: any) => r.runId === runId);
    assert.equal(listed.activity.kind, 'retrying');

    const v03 = await rpc('tasks/get', { id: runId });
    assert.equal(v03.status.state, 'working');
    assert.match(v03.status.message.parts[0].text, /^Retrying the call to agent down \(attempt \d+/);
    assert.equal(v03.metadata.openwop.activity.kind, 'retrying');
    assert.ok(v03.metadata.openwop.activity.attempt >= 2);
    assert.equal(v03.metadata.openwop.activity.lastError.code, 'external_call_failed');
    assert.ok(v03.metadata.openwop.activity.nextAttemptAt);

    const v10 = await rpc('GetTask', { id: runId }, '1.0');
    assert.equal(v10.status.state, 'TASK_STATE_WORKING');
    assert.match(JSON.stringify(v10.status.message), /Retrying the call to agent down/);
    assert.equal(v10.metadata.openwop.activity.kind, 'retrying');

    // A stream shows each scheduled retry as a working status update (here replayed from the start).
    const stream = await openA2AStream(a.url, 'tasks/resubscribe', { id: runId }, { lastEventId: 0 });
    const update = await stream.waitFor(
      (e) => e.json?.result?.kind === 'status-update' && e.json.result.metadata?.openwop?.activity?.kind === 'retrying',
      'a working update saying the call is retried',
    );
    stream.abort();
    assert.equal(update.json.result.status.state, 'working');
    assert.match(update.json.result.status.message.parts[0].text, /^Retrying the call to agent down \(attempt 1,/);

    // Each scheduled retry is in the log of events, and in the host's log, one line each.
    const retried = (await events(a.url, runId)).filter((e) => e.type === 'node.retrying');
    assert.ok(retried.length >= 2);
    assert.equal(retried[0].payload.attempt, 1);
    await until('the host logged the failed attempts', () =>
      a
        .logs()
        .split('\n')
        .some((l) => l.includes(runId) && l.includes('node attempt failed; retrying') && l.includes('"attempt":2')),
    );
    await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
  });

  it('http.request to a closed port: retrying with its attempt, next attempt and last error', async () => {
    const runId = await startRun(a.url, 'fetch_down', { url: `http://127.0.0.1:${port}/hook?token=abc` });
    const snap = await untilRetried(runId, 2);
    const act = snap.activity;
    assert.equal(act.nodeId, 'fetch');
    assert.ok(act.lastError.code.length > 0);
    assert.ok(act.lastError.message.length > 0);
    assert.match(act.summary, /^Retrying the http\.request call of node fetch \(attempt \d+, next at /);
    const task = await rpc('tasks/get', { id: runId });
    assert.equal(task.metadata.openwop.activity.kind, 'retrying');
    await postJson(`${a.url}/v1/runs/${runId}/cancel`, {});
  });
});
