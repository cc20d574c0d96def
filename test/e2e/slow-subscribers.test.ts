// Stalled subscribers do not take a host's memory, against the compiled server
// in its own process: 300 clients resubscribe to ten waiting tasks of about 800 KB each and never
// read. The server's RSS stays under its RSS before they came plus HANDOFF_SSE_MAX_TOTAL_BUFFER
// (64 MiB) plus 128 MiB for the work of serving them (the ceiling docs/security.md states), and
// /healthz answers while they hang. Before, every stream kept its run record (and the first Task)
// for its whole life: the same load took the server from about 170 MB to 700 MB.
// Latency is the bench's business (bench/scenarios/slow-subscribers.ts), not this test's.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killAllServers, postJson, type ServerProcess, startServer } from '../support/server-process.js';
import { until } from '../support/until.js';

const MIB = 1024 * 1024;
const CLIENTS = 300;
const TASKS = 10;

const rssMiB = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** A metric's value from the server's /metrics text (0 when absent). */
async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('300 subscribers that never read, on 800 KB tasks', { timeout: 180_000 }, () => {
  let srv: ServerProcess;
  let dir: string;
  const requests: http.ClientRequest[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'handoff-slow-'));
    // Stalled streams are not cut during the test: the ceiling must hold while they hang.
    srv = await startServer({
      dataDir: dir,
      env: { HANDOFF_BODY_LIMIT: String(4 * MIB), HANDOFF_SSE_STALL_MS: '600000' },
    });
  });
  after(async () => {
    for (const r of requests) r.destroy();
    await killAllServers();
    rmSync(dir, { recursive: true, force: true });
  });

  it('RSS stays under its start + HANDOFF_SSE_MAX_TOTAL_BUFFER + 128 MiB, and /healthz answers while they hang', async () => {
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const res = await postJson(`${srv.url}/v1/a2a`, {
        jsonrpc: '2.0',
        id: i,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: `big-${i}`,
            role: 'user',
            parts: [{ kind: 'text', text: 'p'.repeat(400 * 1024) }],
            metadata: { skillId: 'approval' },
          },
        },
      });
      assert.equal(res.body.result?.status?.state, 'input-required', JSON.stringify(res.body).slice(0, 300));
      ids.push(res.body.result.id);
    }
    const start = rssMiB(srv.pid);
    const ceiling = start + 64 + 128;

    let peak = start;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(srv.pid))), 20);
    try {
      for (let i = 0; i < CLIENTS; i++) {
        const req = http.request(`${srv.url}/v1/a2a`, {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json' },
        });
        req.on('error', () => {});
        req.on('response', () => {}); // never read
        req.end(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tasks/resubscribe', params: { id: ids[i % TASKS] } }));
        requests.push(req);
      }
      await until(
        'every subscriber to be served',
        async () => (await metric(srv.url, 'handoff_sse_streams')) === CLIENTS,
        120_000,
        200,
      );
      // They hang: the host goes on answering.
      for (let i = 0; i < 20; i++) {
        const health = await fetch(`${srv.url}/healthz`);
        assert.equal(health.status, 200);
        await health.text();
      }
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssMiB(srv.pid));
    assert.ok(
      peak < ceiling,
      `RSS reached ${peak.toFixed(0)} MiB: above ${ceiling.toFixed(0)} (start ${start.toFixed(0)})`,
    );
    assert.ok((await metric(srv.url, 'handoff_sse_buffered_bytes')) <= 64 * MIB);
  });
});
