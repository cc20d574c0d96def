// A call to a peer runs outside any store transaction: while one call is held open by a peer that
// does not answer, 100 other runs — each needing the worker to commit a durable step — complete.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killAllServers, type ServerProcess, startServer } from '../support/server-process.js';
import { callerEnv, getRun, startRun, tmp, untilStatus, writeCallWorkflows } from '../support/two-hosts.js';
import { until } from '../support/until.js';

describe('a2a.invoke: a slow peer does not stall other runs', () => {
  const held: ServerResponse[] = [];
  const peer = createServer((_req: IncomingMessage, res: ServerResponse) => {
    held.push(res); // never answered while the test runs
  });
  let a: ServerProcess;

  before(async () => {
    await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
    const wf = writeCallWorkflows();
    // A run whose step is committed by the worker (a durable timer), not inline in its request.
    writeFileSync(
      join(wf, 'tick.json'),
      JSON.stringify({
        id: 'tick',
        name: 'tick',
        version: '1.0.0',
        nodes: [
          { id: 'wait', typeId: 'core.delay', name: 'Wait', position: { x: 0, y: 0 }, config: { ms: 1 }, inputs: {} },
          {
            id: 'done',
            typeId: 'core.transform',
            name: 'Done',
            position: { x: 1, y: 0 },
            config: { output: { ok: true } },
            inputs: {},
          },
        ],
        edges: [{ id: 'e', sourceNodeId: 'wait', targetNodeId: 'done' }],
        triggers: [{ id: 'manual', type: 'manual', enabled: true }],
        variables: [],
        metadata: {},
        settings: {},
      }),
    );
    const url = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
    a = await startServer({
      dataDir: tmp('a'),
      env: callerEnv(wf, { slow: url }, { HANDOFF_AGENT_TIMEOUT_MS: '120000' }),
    });
  });
  after(async () => {
    await killAllServers();
    for (const res of held) res.destroy();
    peer.close();
  });

  it('100 runs complete while the call is held open', async () => {
    const caller = await startRun(a.url, 'call_poll_wait', { agent: 'slow', skill: 'x', prompt: 'p' });
    await until('the peer holds the call', () => held.length > 0);
    const runs = await Promise.all(Array.from({ length: 100 }, () => startRun(a.url, 'tick', {})));
    for (const id of runs) assert.equal((await untilStatus(a.url, id, ['completed', 'failed'])).status, 'completed');
    assert.equal(held.filter((r) => !r.writableEnded).length, held.length, 'the call is still held open');
    // Its first step (run.started with the call's outcome) is not committed while the call is out.
    assert.equal((await getRun(a.url, caller)).status, 'pending');
  });
});
