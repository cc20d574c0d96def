// A crash in the middle of an outbound call: the server is SIGKILLed while the http.request node
// waits for its answer, and restarted on the same database. The node runs again (nothing was
// committed), with the same Idempotency-Key, and its outcome is recorded exactly once. The secret
// the call sends appears in neither server's output, at log level trace.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { SECRET_ENV, SECRET_VALUE, writeCallWorkflows } from '../support/call-workflows.js';
import { type HttpsReceiver, startHttpsReceiver } from '../support/https-receiver.js';
import { getJson, killAllServers, postJson, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

const dirs: string[] = [];
let rx: HttpsReceiver | undefined;

after(async () => {
  await killAllServers();
  await rx?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it('SIGKILL during http.request: one recorded outcome, the same Idempotency-Key on the retry', async () => {
  rx = await startHttpsReceiver();
  const dataDir = mkdtempSync(join(tmpdir(), 'handoff-call-crash-'));
  const workflows = writeCallWorkflows();
  dirs.push(dataDir, workflows);
  writeFileSync(join(dataDir, 'ca.pem'), rx.caPem);
  const env = {
    ...SECRET_ENV,
    HANDOFF_WORKFLOWS: workflows,
    HANDOFF_EGRESS_ALLOW_HOSTS: '127.0.0.1',
    HANDOFF_EGRESS_CA_FILE: join(dataDir, 'ca.pem'),
    HANDOFF_LOG_LEVEL: 'trace',
  };
  rx.behave({ hang: true }); // the first request never gets its answer
  const first = await startServer({ dataDir, env });
  const created = await postJson(`${first.url}/v1/runs`, { workflowId: 'call', inputs: { url: `${rx.url}hook` } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const runId = created.body.runId as string;
  await until('the call reached the server', () => rx!.requests.length === 1);
  await first.kill();

  rx.behave({ status: 201, body: 'done' });
  const second = await startServer({ dataDir, env });
  const run = await until('the run completed after the restart', async () => {
    const res = await getJson(`${second.url}/v1/runs/${runId}`);
    return ['completed', 'failed'].includes(res.body.status) && res.body;
  });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(rx.requests.length, 2);
  const keys = rx.requests.map((r) => r.headers['idempotency-key']);
  assert.deepEqual(keys, [`${runId}:fetch:0`, `${runId}:fetch:0`]);

  const log = await getJson(`${second.url}/v1/runs/${runId}/events/poll?lastSequence=-1&timeout=0&limit=1000`);
  const completions = (log.body.events as Array<{ type: string; nodeId?: string }>).filter(
    (e) => e.type === 'node.completed' && e.nodeId === 'fetch',
  );
  assert.equal(completions.length, 1, 'exactly one recorded outcome');
  await second.stop();
  for (const srv of [first, second]) assert.equal(srv.logs().includes(SECRET_VALUE), false, 'the secret is logged');
});
