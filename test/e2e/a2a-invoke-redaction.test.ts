// a2a.invoke against a peer that echoes the agent token it is sent (HANDOFF_AGENT_TOKEN_<NAME>),
// in every spelling (test/support/leaky-peer.ts): in a failed task's status message, in the question
// of an input-required task, in an artifact, and in a JSON-RPC error whose answer escapes `/` as `\/`.
// The caller is a real Handoff process; what it shows of those runs must hold the token in no
// spelling: the run and its error, the event log, the A2A Task (0.3 and 1.0), the run list,
// ListTasks, the task records and the server's own log at trace level.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertNoLeak, haystackOf } from '../support/leaks.js';
import { type LeakyPeer, startLeakyPeer } from '../support/leaky-peer.js';
import { getJson, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, events, getRun, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';

/** Characters that change under percent-, form-, JSON- and base64-encoding: `~ + / = " \`. */
const TOKEN = 'T0k~en+/=with"quote\\and/slash~+==';

describe('a2a.invoke: a peer that echoes its agent token', () => {
  let peer: LeakyPeer;
  let a: ServerProcess;

  before(async () => {
    peer = await startLeakyPeer();
    const env = callerEnv(writeCallWorkflows(), { leaky: peer.url }, { HANDOFF_LOG_LEVEL: 'trace' });
    a = await startServer({ dataDir: tmp('a'), env: { ...env, HANDOFF_AGENT_TOKEN_LEAKY: TOKEN } });
  });
  after(async () => {
    await killAllServers();
    await peer?.close();
  });

  const rpc = async (method: string, params: unknown, version?: '1.0') => {
    const headers: Record<string, string> = version ? { 'a2a-version': version } : {};
    const res = await postJson(`${a.url}/v1/a2a`, { jsonrpc: '2.0', id: 1, method, params }, { headers });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.error, undefined, JSON.stringify(res.body));
    return res.body;
  };

  it('the token shows in no spelling: not in the run, its events, its A2A Task, the lists or the log', async () => {
    const ends: Record<string, any> = {};
    for (const skill of ['fail', 'ask', 'done', 'error']) {
      const runId = await startRun(a.url, 'call_poll_clarify', { agent: 'leaky', skill, prompt: 'hi' });
      ends[skill] = await untilStatus(a.url, runId, ['completed', 'failed', 'waiting-input']);
    }
    assert.ok(peer.tokens.length > 0 && peer.tokens.every((t) => t === TOKEN), 'the peer was sent the token');
    assert.deepEqual(
      Object.values(ends).map((r) => [r.status, r.error?.code]),
      [
        ['failed', 'external_task_failed'],
        ['waiting-input', undefined],
        ['completed', undefined],
        ['failed', 'external_call_failed'],
      ],
    );

    const shown: unknown[] = [];
    for (const end of Object.values(ends)) {
      const id = end.runId as string;
      shown.push(await getRun(a.url, id), await events(a.url, id));
      shown.push(await rpc('tasks/get', { id, historyLength: 50 }));
      shown.push(await rpc('GetTask', { id, historyLength: 50 }, '1.0'));
      shown.push((await getJson(`${a.url}/v1/a2a/tasks/${id}`)).body);
    }
    shown.push((await getJson(`${a.url}/v1/runs`)).body, (await getJson(`${a.url}/v1/a2a/tasks`)).body);
    shown.push(await rpc('ListTasks', { includeArtifacts: true, historyLength: 50 }, '1.0'));
    shown.push(a.logs());
    const seen = haystackOf(...shown);
    assertNoLeak(seen, TOKEN, 'what the caller shows of runs that called the echoing peer');

    // The peer's words are kept, the token in them replaced.
    assert.match(
      ends.fail.error.message,
      /^you sent Bearer \[redacted\]; your callback https:\/\/peer\.test\/cb\?t=\[redacted\]/,
    );
    assert.match(ends.error.error.message, /send http:\/\/127\.0\.0\.1:\d+\/a2a: you sent Bearer \[redacted\]/);
    assert.match(ends.ask.interrupt.payload.questions[0].question, /^you sent Bearer \[redacted\]/);
    assert.match(ends.done.nodeStates.call.artifacts[0].parts[0].text, /as Basic [A-Za-z0-9+/]{0,8}\[redacted\]/);
  });
});
