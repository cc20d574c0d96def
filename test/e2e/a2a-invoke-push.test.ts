// a2a.invoke waiting by push: A serves https (a throw-away test CA) with an https public URL, so it
// registers a push config on B's task pointing at POST /v1/a2a/callbacks/{waitId} with a per-call
// token. A's polling is set to ten minutes, so only the push can wake it within the test. The
// callback checks the token in constant time and trusts nothing in the body. A flood of valid
// callbacks (one token replayed, as a hostile or broken peer may) is coalesced: the run reads the
// peer at most once per HANDOFF_AGENT_WAKE_MIN_MS.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { generateTestCerts } from '../support/https-receiver.js';
import { type NoisyAgent, startNoisyAgent } from '../support/noisy-agent.js';
import { freePort, killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, tmp, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

/** A throw-away CA and a certificate for 127.0.0.1, as files for A's environment. */
function testTls() {
  const certs = generateTestCerts();
  const dir = tmp('certs');
  const files = { ca: join(dir, 'ca.pem'), cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  writeFileSync(files.ca, certs.caPem);
  writeFileSync(files.cert, certs.certPem);
  writeFileSync(files.key, certs.keyPem);
  return { certs, files, tls: new Agent({ connect: { ca: certs.caPem } }) };
}

describe('a2a.invoke: push over https with a test CA', () => {
  const { certs, files, tls } = testTls();
  let a: ServerProcess;
  let b: ServerProcess;

  before(async () => {
    // B may push to loopback (operator allow list) and trusts the test CA.
    b = await startServer({
      dataDir: tmp('b'),
      env: { HANDOFF_PUSH_ALLOW_CIDRS: '127.0.0.1/32', HANDOFF_PUSH_CA_FILE: files.ca },
    });
    const port = await freePort();
    const env = callerEnv(
      writeCallWorkflows(),
      { reviewer: b.url },
      {
        HANDOFF_TLS_CERT: files.cert,
        HANDOFF_TLS_KEY: files.key,
        HANDOFF_PUBLIC_URL: `https://127.0.0.1:${port}`,
        HANDOFF_AGENT_POLL_MIN_MS: '600000',
        HANDOFF_AGENT_POLL_MAX_MS: '600000',
      },
    );
    a = await startServer({ dataDir: tmp('a'), env, port, https: { ca: certs.caPem } });
  });
  after(async () => {
    await killAllServers();
    await tls.close();
  });

  const getA = async (path: string) => {
    const res = await request(`${a.url}${path}`, { dispatcher: tls });
    return (await res.body.json()) as any;
  };
  const callback = async (url: string, headers: Record<string, string>, body: unknown) => {
    const res = await request(url, {
      dispatcher: tls,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    await res.body.dump();
    return res.statusCode;
  };

  it('the push wakes A at once; a wrong token, no token or a forged body change nothing', async () => {
    const res = await request(`${a.url}/v1/runs`, {
      dispatcher: tls,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        workflowId: 'call_push_wait',
        inputs: { agent: 'reviewer', skill: 'approval', prompt: 'p' },
      }),
    });
    const runId = ((await res.body.json()) as { runId: string }).runId;
    assert.ok(runId);
    const linked = await untilLinked(runId);
    assert.deepEqual(linked.payload.waitModes, ['push', 'poll']);
    const peerTaskId = linked.payload.peerTaskId as string;
    // B holds one push config for its task, pointing at A's callback route.
    const list = await postJson(`${b.url}/v1/a2a`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/pushNotificationConfig/list',
      params: { id: peerTaskId },
    });
    const url = list.body.result[0].pushNotificationConfig.url as string;
    assert.match(url, new RegExp(`^${a.url}/v1/a2a/callbacks/pw_`));
    const before = await getA(`/v1/runs/${runId}`);
    // Wrong token, no token, a forged "completed" body: refused, the run unchanged.
    const forged = { kind: 'task', id: peerTaskId, status: { state: 'completed' } };
    assert.equal(await callback(url, { 'x-a2a-notification-token': 'wrong' }, forged), 401);
    assert.equal(await callback(url, { authorization: 'Bearer wrong' }, forged), 401);
    assert.equal(await callback(url, {}, forged), 401);
    const unchanged = await getA(`/v1/runs/${runId}`);
    assert.equal(unchanged.updatedAt, before.updatedAt);
    assert.equal(unchanged.status, 'running');
    // Approve on B: B pushes, A reads B's task and completes — long before its 10-minute poll.
    const approved = await postJson(`${b.url}/v1/runs/${peerTaskId}/interrupts/review`, {
      resumeValue: { action: 'accept' },
    });
    assert.equal(approved.status, 200);
    const done = await untilStatusTls(runId);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.equal(done.nodeStates.call.artifacts[0].parts[0].data.text, 'Draft: p');
  });

  function untilLinked(runId: string): Promise<any> {
    return until('the call linked to B', async () => {
      const res = await request(`${a.url}/v1/runs/${runId}/events/poll?timeout=0`, { dispatcher: tls });
      const body = (await res.body.json()) as any;
      return body.events.find((e: any) => e.type === 'a2a.task.linked');
    });
  }

  function untilStatusTls(runId: string): Promise<any> {
    return until('A completed', async () => {
      const s = await getA(`/v1/runs/${runId}`);
      return ['completed', 'failed'].includes(s.status) && s;
    });
  }
});

describe('a2a.invoke: a flood of valid callbacks', () => {
  const { certs, files, tls } = testTls();
  let peer: NoisyAgent;
  let a: ServerProcess;

  before(async () => {
    peer = await startNoisyAgent();
    const port = await freePort();
    const env = callerEnv(
      writeCallWorkflows(),
      { noisy: peer.url },
      {
        HANDOFF_TLS_CERT: files.cert,
        HANDOFF_TLS_KEY: files.key,
        HANDOFF_PUBLIC_URL: `https://127.0.0.1:${port}`,
        // Only pushes make A read the peer within the test.
        HANDOFF_AGENT_POLL_MIN_MS: '600000',
        HANDOFF_AGENT_POLL_MAX_MS: '600000',
        HANDOFF_AGENT_WAKE_MIN_MS: '1000',
      },
    );
    a = await startServer({ dataDir: tmp('a'), env, port, https: { ca: certs.caPem } });
  });
  after(async () => {
    await killAllServers();
    await peer?.close();
    await tls.close();
  });

  const getA = async (path: string) => {
    const res = await request(`${a.url}${path}`, { dispatcher: tls });
    if (res.statusCode === 200) return (await res.body.json()) as any;
    await res.body.dump();
    return undefined;
  };
  const reads = async () => {
    const res = await request(`${a.url}/metrics`, { dispatcher: tls });
    const lines = (await res.body.text()).split('\n');
    const mine = lines.filter((l) => l.startsWith('handoff_node_executions_total{') && l.includes('"a2a.invoke"'));
    return mine.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
  };

  it('one token replayed 2,000 times wakes the run at most once a second (HANDOFF_AGENT_WAKE_MIN_MS)', async () => {
    const res = await request(`${a.url}/v1/runs`, {
      dispatcher: tls,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ workflowId: 'call_push_wait', inputs: { agent: 'noisy', skill: 'hold', prompt: 'p' } }),
    });
    const runId = ((await res.body.json()) as { runId: string }).runId;
    const snap = await until('the call linked and sleeping', async () => {
      const s = await getA(`/v1/runs/${runId}`);
      return s?.waitingOn?.peerTaskId && s;
    });
    const { url, token } = await until('the push config registered', () => peer.pushConfig(snap.waitingOn.peerTaskId));
    const events = await getA(`/v1/runs/${runId}/events/poll?timeout=0`);
    const linked = events.events.find((e: any) => e.type === 'a2a.task.linked');
    assert.deepEqual(linked.payload.waitModes, ['push', 'poll']);
    const before = await reads();
    const t0 = Date.now();
    let sent = 0;
    const worker = async () => {
      while (sent < 2_000) {
        sent++;
        const r = await request(url, {
          dispatcher: tls,
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ id: snap.waitingOn.peerTaskId, status: { state: 'working' } }),
        });
        await r.body.dump();
        assert.equal(r.statusCode, 204);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    // The wake is spaced from the run's last commit (HANDOFF_AGENT_WAKE_MIN_MS): a flood over in
    // under a second is read once that spacing has passed, so wait for the read, not a time.
    await until('the callbacks woke the run', async () => (await reads()) - before >= 1 || undefined);
    const seconds = (Date.now() - t0) / 1000;
    // The last callbacks' wake may still be queued: at most one read more.
    const woken = (await reads()) - before;
    const bound = seconds + 2;
    assert.ok(woken <= bound, `${woken} reads of the peer for 2,000 callbacks in ${seconds} s (bound ${bound})`);
  });
});
